// Reference CPU kernels for 2-D convolution (cross-correlation) with stride, zero padding,
// dilation and groups: per (sample, group) an im2col into a buffer, then the blocked GEMM.
#pragma once

#include "kernels/args.h"
#include "kernels/isa_kernel.h"

namespace epoch::cpu {

/// y = conv(x, w) + b.
extern const kernels::IsaKernel<void(const kernels::Conv2dDims& d,
                    const float* x,  // (N, C, H, W)
                    const float* w,  // (OC, C/groups, KH, KW)
                    const float* b,  // (OC) or null
                    float* y)> conv2d_forward;       // (N, OC, OH, OW)

/// Gradients of conv2d_forward; overwrites dx, dw, db. dx and db may be null (not wanted).
extern const kernels::IsaKernel<void(const kernels::Conv2dDims& d,
                     const float* dy,  // (N, OC, OH, OW)
                     const float* x,   // (N, C, H, W)
                     const float* w,   // (OC, C/groups, KH, KW)
                     float* dx,        // (N, C, H, W) or null
                     float* dw,        // (OC, C/groups, KH, KW)
                     float* db)> conv2d_backward;       // (OC) or null

}  // namespace epoch::cpu
