// Pooling over H and W: max, average and global average, with asymmetric padding so that
// TensorFlow's "same" pooling is exact. oneDNN on the CPU fast path.
#pragma once

#include <cstdint>

#include "epoch/tensor/tensor.h"

namespace epoch::ops {

struct Pool2dParams {
  std::int64_t kernel_h = 2, kernel_w = 2;
  std::int64_t stride_h = 2, stride_w = 2;
  std::int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
  /// Average pooling only: whether padded positions count in the divisor (PyTorch's default
  /// true; TensorFlow's "same" pooling excludes them).
  bool count_include_pad = true;
};

/// Output size: (in + pad_begin + pad_end - k) / stride + 1.
std::int64_t pool_out_size(std::int64_t in, std::int64_t k, std::int64_t stride,
                           std::int64_t pad_begin, std::int64_t pad_end);

struct MaxPoolResult {
  Tensor y;        // (N, C, OH, OW); channel-blocked when the forward ran so (below)
  Tensor indices;  // workspace for backward: (N, C, OH, OW) i32 flat h*W+w of the max, or
                   // backend-specific bytes; only max_pool2d_backward reads it
  std::int64_t channel_block = 0;  // the channel block x and y were in (0: row-major)
};

/// Max pooling; padded positions never win. x (N, C, H, W).
MaxPoolResult max_pool2d_forward(const Tensor& x, const Pool2dParams& p);
/// dx (N, C, H, W) from dy (N, C, OH, OW); ties go to the first maximum. through_relu: x is
/// a ReLU's output and dx is also that ReLU's gradient, dy counting only where fwd.y > 0 (the
/// recorded maximum is x > 0 exactly there): the same values as relu_backward after this, with
/// no pass of its own over x.
Tensor max_pool2d_backward(const Tensor& dy, const Tensor& x, const MaxPoolResult& fwd,
                           const Pool2dParams& p, bool through_relu = false);

/// Average pooling. x (N, C, H, W) -> (N, C, OH, OW).
Tensor avg_pool2d_forward(const Tensor& x, const Pool2dParams& p);
Tensor avg_pool2d_backward(const Tensor& dy, const Shape& x_shape, const Pool2dParams& p);

/// Mean over H and W. x (N, C, H, W) -> (N, C).
Tensor global_avg_pool2d_forward(const Tensor& x);
Tensor global_avg_pool2d_backward(const Tensor& dy, const Shape& x_shape);

}  // namespace epoch::ops
