// Argument structs every kernel backend takes (cpu/ reference and oneDNN, cuda/ own and cuDNN),
// so that no backend borrows them from another. Plain C++ (only <cstdint>), so .cu files too.
#pragma once

#include <cstdint>

namespace epoch::kernels {

/// Sizes of one convolution; OH and OW already computed (and positive).
struct Conv2dDims {
  std::int64_t N = 0, C = 0, H = 0, W = 0;
  std::int64_t OC = 0, KH = 0, KW = 0, OH = 0, OW = 0;
  std::int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
  std::int64_t dilation_h = 1, dilation_w = 1, groups = 1;
};

/// Sizes of one pooling; planes = N*C, OH and OW already computed (and positive). Every window
/// must hold at least one real input (pad < kernel guarantees it).
struct Pool2dDims {
  std::int64_t planes = 0, H = 0, W = 0, OH = 0, OW = 0;
  std::int64_t KH = 1, KW = 1, stride_h = 1, stride_w = 1;
  std::int64_t pad_top = 0, pad_left = 0;
};

/// The arithmetic of an elementwise binary kernel.
enum class BinaryOp { add, sub, mul, div };

}  // namespace epoch::kernels
