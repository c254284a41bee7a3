// Reference CPU kernels for pointwise activations, clipping and row-wise softmax.
// Raw pointers and sizes; every array is contiguous.
#pragma once

#include <cstdint>

namespace epoch::cpu {

void relu_forward(const float* x,  // (n)
                  float* y,        // (n) max(x, 0)
                  std::int64_t n);
void relu_backward(const float* dy,  // (n)
                   const float* x,   // (n) the forward input
                   float* dx,        // (n) dy * (x > 0)
                   std::int64_t n);

/// Stable for large |x|: exp is only ever taken of -|x|.
void sigmoid_forward(const float* x,  // (n)
                     float* y,        // (n) 1 / (1 + exp(-x))
                     std::int64_t n);
/// The fast path's sigmoid: a vectorized exp (relative error < 2e-7 against sigmoid_forward);
/// a KernelTrace names it "epoch:sigmoid_vexp".
void sigmoid_forward_fast(const float* x, float* y, std::int64_t n);
void sigmoid_backward(const float* dy,  // (n)
                      const float* y,   // (n) the forward output
                      float* dx,        // (n) dy * y * (1 - y)
                      std::int64_t n);

void tanh_forward(const float* x,  // (n)
                  float* y,        // (n)
                  std::int64_t n);
void tanh_backward(const float* dy,  // (n)
                   const float* y,   // (n) the forward output
                   float* dx,        // (n) dy * (1 - y^2)
                   std::int64_t n);

void hard_sigmoid_forward(const float* x,  // (n)
                          float* y,        // (n) clip(slope * x + offset, 0, 1)
                          std::int64_t n, float slope, float offset);
void hard_sigmoid_backward(const float* dy,  // (n)
                           const float* x,   // (n) the forward input
                           float* dx,        // (n) dy * slope where 0 < slope*x+offset < 1
                           std::int64_t n, float slope, float offset);

void clip_forward(const float* x,  // (n)
                  float* y,        // (n) min(max(x, lo), hi)
                  std::int64_t n, float lo, float hi);
void clip_backward(const float* dy,  // (n)
                   const float* x,   // (n) the forward input
                   float* dx,        // (n) dy where lo < x < hi, else 0
                   std::int64_t n, float lo, float hi);

/// Softmax of each row, stable (the row maximum is subtracted before exp).
void softmax_forward(const float* x,  // (N, K)
                     float* y,        // (N, K) rows sum to 1
                     std::int64_t N, std::int64_t K);

}  // namespace epoch::cpu
