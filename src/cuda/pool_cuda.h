// CUDA twins of the pooling kernels in cpu/pool_cpu.h (same names and arguments). Own kernels
// rather than cuDNN's: cuDNN pooling has symmetric padding only (TensorFlow's "same" pooling
// needs asymmetric) and keeps no argmax indices. Backward passes gather instead of scatter, in
// the CPU's order, so they need no atomics and match the reference bit for bit.
#pragma once

#include <cstdint>

#include "kernels/args.h"

namespace epoch::cuda {

/// y = max over each window of real inputs; indices = h*W + w of the first maximum.
void max_pool2d_forward(const kernels::Pool2dDims& d,
                        const float* x,          // (N*C, H, W)
                        float* y,                // (N*C, OH, OW)
                        std::int32_t* indices);  // (N*C, OH, OW)

/// dx = dy gathered from the outputs whose argmax is each input position (overwrites dx).
void max_pool2d_backward(const kernels::Pool2dDims& d,
                         const float* dy,              // (N*C, OH, OW)
                         const std::int32_t* indices,  // (N*C, OH, OW)
                         float* dx);                   // (N*C, H, W)

/// y = mean of each window (divisor KH*KW when count_include_pad, else the real inputs).
void avg_pool2d_forward(const kernels::Pool2dDims& d, bool count_include_pad,
                        const float* x,  // (N*C, H, W)
                        float* y);       // (N*C, OH, OW)

/// dx = sum of dy / divisor over the windows holding each input (overwrites dx).
void avg_pool2d_backward(const kernels::Pool2dDims& d, bool count_include_pad,
                         const float* dy,  // (N*C, OH, OW)
                         float* dx);       // (N*C, H, W)

/// y[p] = mean of plane p of x (one warp per plane, double sum in a fixed order).
void global_avg_pool2d_forward(const float* x,  // (planes, HW)
                               float* y,        // (planes)
                               std::int64_t planes, std::int64_t HW);

/// dx[p, i] = dy[p] / HW.
void global_avg_pool2d_backward(const float* dy,  // (planes)
                                float* dx,        // (planes, HW)
                                std::int64_t planes, std::int64_t HW);

}  // namespace epoch::cuda
