// Reference CPU kernels for the ops that move elements without arithmetic: strided block copies
// (the core of concat and slice) and nearest-neighbour 2x upsampling.
#pragma once

#include <cstdint>
#include "kernels/isa_kernel.h"

namespace epoch::cpu {

/// Copies `rows` blocks of row_bytes bytes: block r goes from src + r * src_stride to
/// dst + r * dst_stride (strides in bytes). Blocks must not overlap.
extern const kernels::IsaKernel<void(void* dst,  // (rows, dst_stride) bytes
               std::int64_t dst_stride,
               const void* src,  // (rows, src_stride) bytes
               std::int64_t src_stride, std::int64_t rows, std::int64_t row_bytes)> copy_rows;

/// Each pixel repeated into a 2x2 block.
extern const kernels::IsaKernel<void(const float* x,  // (N, C, H, W)
                                float* y,        // (N, C, 2H, 2W)
                                std::int64_t N, std::int64_t C, std::int64_t H, std::int64_t W)> upsample_nearest2x_forward;
/// Sum of each 2x2 block of dy, in a fixed order.
extern const kernels::IsaKernel<void(const float* dy,  // (N, C, 2H, 2W)
                                 float* dx,        // (N, C, H, W)
                                 std::int64_t N, std::int64_t C, std::int64_t H, std::int64_t W)> upsample_nearest2x_backward;

}  // namespace epoch::cpu
