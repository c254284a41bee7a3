// 2-D convolution on CUDA through cuDNN, the twin of cpu/conv2d_cpu.h (same names and
// arguments, in namespace cuda::cudnn). Algorithms are chosen by cuDNN's heuristics among the
// deterministic ones, in FP32 without TF32, so a run is bitwise repeatable on one GPU.
#pragma once

#include <string>

#include "kernels/args.h"

namespace epoch::cuda::cudnn {

/// The cuDNN library loaded at run time, "9.10.2" (cudnnGetVersion).
std::string library_version();

/// y = conv(x, w) + b. Device pointers.
void conv2d_forward(const kernels::Conv2dDims& d,
                    const float* x,  // (N, C, H, W)
                    const float* w,  // (OC, C/groups, KH, KW)
                    const float* b,  // (OC) or null
                    float* y);       // (N, OC, OH, OW)

/// Gradients of conv2d_forward; overwrites dx, dw, db. dx and db may be null (not wanted).
/// db sums dy over N, OH, OW in a fixed order.
void conv2d_backward(const kernels::Conv2dDims& d,
                     const float* dy,  // (N, OC, OH, OW)
                     const float* x,   // (N, C, H, W)
                     const float* w,   // (OC, C/groups, KH, KW)
                     float* dx,        // (N, C, H, W) or null
                     float* dw,        // (OC, C/groups, KH, KW)
                     float* db);       // (OC) or null

}  // namespace epoch::cuda::cudnn
