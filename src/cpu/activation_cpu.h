// Reference CPU kernels for pointwise activations, clipping and row-wise softmax.
// Raw pointers and sizes; every array is contiguous.
#pragma once

#include <cstdint>
#include "kernels/isa_kernel.h"

namespace epoch::cpu {

extern const kernels::IsaKernel<void(const float* x,  // (n)
                  float* y,        // (n) max(x, 0)
                  std::int64_t n)> relu_forward;
extern const kernels::IsaKernel<void(const float* dy,  // (n)
                   const float* x,   // (n) the forward input
                   float* dx,        // (n) dy * (x > 0)
                   std::int64_t n)> relu_backward;

/// Stable for large |x|: exp is only ever taken of -|x|.
extern const kernels::IsaKernel<void(const float* x,  // (n)
                     float* y,        // (n) 1 / (1 + exp(-x))
                     std::int64_t n)> sigmoid_forward;
/// The fast path's sigmoid: a vectorized exp (relative error < 2e-7 against sigmoid_forward);
/// a KernelTrace names it "epoch:sigmoid_vexp".
extern const kernels::IsaKernel<void(const float* x, float* y, std::int64_t n)> sigmoid_forward_fast;
extern const kernels::IsaKernel<void(const float* dy,  // (n)
                      const float* y,   // (n) the forward output
                      float* dx,        // (n) dy * y * (1 - y)
                      std::int64_t n)> sigmoid_backward;

extern const kernels::IsaKernel<void(const float* x,  // (n)
                  float* y,        // (n)
                  std::int64_t n)> tanh_forward;
extern const kernels::IsaKernel<void(const float* dy,  // (n)
                   const float* y,   // (n) the forward output
                   float* dx,        // (n) dy * (1 - y^2)
                   std::int64_t n)> tanh_backward;

extern const kernels::IsaKernel<void(const float* x,  // (n)
                          float* y,        // (n) clip(slope * x + offset, 0, 1)
                          std::int64_t n, float slope, float offset)> hard_sigmoid_forward;
extern const kernels::IsaKernel<void(const float* dy,  // (n)
                           const float* x,   // (n) the forward input
                           float* dx,        // (n) dy * slope where 0 < slope*x+offset < 1
                           std::int64_t n, float slope, float offset)> hard_sigmoid_backward;

extern const kernels::IsaKernel<void(const float* x,  // (n)
                  float* y,        // (n) min(max(x, lo), hi)
                  std::int64_t n, float lo, float hi)> clip_forward;
extern const kernels::IsaKernel<void(const float* dy,  // (n)
                   const float* x,   // (n) the forward input
                   float* dx,        // (n) dy where lo < x < hi, else 0
                   std::int64_t n, float lo, float hi)> clip_backward;

/// Softmax of each row, stable (the row maximum is subtracted before exp).
extern const kernels::IsaKernel<void(const float* x,  // (N, K)
                     float* y,        // (N, K) rows sum to 1
                     std::int64_t N, std::int64_t K)> softmax_forward;

}  // namespace epoch::cpu
