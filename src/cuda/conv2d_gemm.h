// 2-D convolution on CUDA without cuDNN: im2col, cuBLAS SGEMM, and im2col's adjoint (col2im)
// as a gather, one sample and one group at a time. The twin of cpu/conv2d_cpu.h (same names
// and arguments, in namespace cuda::gemm_conv), run when cuDNN is switched off
// (ops::Context::cudnn; a study's cuda-nocudnn configuration): the same GPU, the convolutions
// by another implementation. No atomics; every sum runs in an order set by the sizes, so a run
// is bitwise repeatable on one GPU.
#pragma once

#include "kernels/args.h"

namespace epoch::cuda::gemm_conv {

/// y = conv(x, w) + b. Device pointers.
void conv2d_forward(const kernels::Conv2dDims& d,
                    const float* x,  // (N, C, H, W)
                    const float* w,  // (OC, C/groups, KH, KW)
                    const float* b,  // (OC) or null
                    float* y);       // (N, OC, OH, OW)

/// Gradients of conv2d_forward; overwrites dx, dw, db. dx and db may be null (not wanted).
/// dw sums over the batch in sample order; db sums dy over N, OH, OW in a fixed order.
void conv2d_backward(const kernels::Conv2dDims& d,
                     const float* dy,  // (N, OC, OH, OW)
                     const float* x,   // (N, C, H, W)
                     const float* w,   // (OC, C/groups, KH, KW)
                     float* dx,        // (N, C, H, W) or null
                     float* dw,        // (OC, C/groups, KH, KW)
                     float* db);       // (OC) or null

}  // namespace epoch::cuda::gemm_conv
