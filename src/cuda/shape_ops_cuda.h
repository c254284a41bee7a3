// CUDA twins of the shape kernels in cpu/shape_ops_cpu.h (same names and arguments): strided
// block copies (the core of concat and slice) and nearest-neighbour 2x upsampling.
#pragma once

#include <cstdint>

namespace epoch::cuda {

/// Copies `rows` blocks of row_bytes bytes from src + r * src_stride to dst + r * dst_stride
/// (strides in bytes, both >= row_bytes) on the device, in one strided copy. No overlap.
void copy_rows(void* dst,  // (rows, dst_stride) bytes
               std::int64_t dst_stride,
               const void* src,  // (rows, src_stride) bytes
               std::int64_t src_stride, std::int64_t rows, std::int64_t row_bytes);

/// Each pixel repeated into a 2x2 block.
void upsample_nearest2x_forward(const float* x,  // (N, C, H, W)
                                float* y,        // (N, C, 2H, 2W)
                                std::int64_t N, std::int64_t C, std::int64_t H, std::int64_t W);
/// Sum of each 2x2 block of dy, in the CPU's order: (top-left + top-right) + (bottom pair).
void upsample_nearest2x_backward(const float* dy,  // (N, C, 2H, 2W)
                                 float* dx,        // (N, C, H, W)
                                 std::int64_t N, std::int64_t C, std::int64_t H, std::int64_t W);

}  // namespace epoch::cuda
