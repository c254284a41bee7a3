// Reference CPU kernels for 2-D pooling: max (with i32 argmax indices), average (padding in or
// out of the divisor) and global average. Raw pointers and sizes; the test oracle.
#pragma once

#include <cstdint>

#include "kernels/args.h"
#include "kernels/isa_kernel.h"

namespace epoch::cpu {

/// y = max over each window of real inputs; indices = h*W + w of the first maximum.
extern const kernels::IsaKernel<void(const kernels::Pool2dDims& d,
                        const float* x,          // (N*C, H, W)
                        float* y,                // (N*C, OH, OW)
                        std::int32_t* indices)> max_pool2d_forward;  // (N*C, OH, OW)

/// dx = dy scattered onto the saved argmax positions (overwrites dx).
extern const kernels::IsaKernel<void(const kernels::Pool2dDims& d,
                         const float* dy,              // (N*C, OH, OW)
                         const std::int32_t* indices,  // (N*C, OH, OW)
                         float* dx)> max_pool2d_backward;                   // (N*C, H, W)

/// y = mean of each window; the divisor is KH*KW when count_include_pad, else the number of
/// real inputs in the window.
extern const kernels::IsaKernel<void(const kernels::Pool2dDims& d, bool count_include_pad,
                        const float* x,  // (N*C, H, W)
                        float* y)> avg_pool2d_forward;       // (N*C, OH, OW)

/// dx = each dy spread evenly (by the same divisor) over its window (overwrites dx).
extern const kernels::IsaKernel<void(const kernels::Pool2dDims& d, bool count_include_pad,
                         const float* dy,  // (N*C, OH, OW)
                         float* dx)> avg_pool2d_backward;       // (N*C, H, W)

/// y[p] = mean of plane p of x.
extern const kernels::IsaKernel<void(const float* x,  // (planes, HW)
                               float* y,        // (planes)
                               std::int64_t planes, std::int64_t HW)> global_avg_pool2d_forward;

/// dx[p, i] = dy[p] / HW.
extern const kernels::IsaKernel<void(const float* dy,  // (planes)
                                float* dx,        // (planes, HW)
                                std::int64_t planes, std::int64_t HW)> global_avg_pool2d_backward;

}  // namespace epoch::cpu
