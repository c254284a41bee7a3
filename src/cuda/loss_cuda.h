// CUDA twins of the loss kernels in cpu/loss_cpu.h: same names and arguments, except that the
// forward functions write the mean to a device scalar `loss` instead of returning a double, so
// the loss stays on the device and a step need not wait for it. Every reduction is in double,
// in an order fixed by the sizes alone (no atomics). Labels are assumed valid (the op checks).
#pragma once

#include <cstdint>

namespace epoch::cuda {

/// loss = mean over rows of -log softmax(logits)[label].
void softmax_cross_entropy_forward(const float* logits,        // (N, K)
                                   const std::int32_t* labels,  // (N) in [0, K)
                                   float* probs,                // (N, K) softmax, out
                                   float* loss,                 // () mean, out
                                   std::int64_t N, std::int64_t K);
void softmax_cross_entropy_backward(float dloss,
                                    const float* probs,          // (N, K)
                                    const std::int32_t* labels,  // (N)
                                    float* dlogits,  // (N, K) (probs - onehot) * dloss / N
                                    std::int64_t N, std::int64_t K);

/// loss = mean of max(x, 0) - x*t + log1p(exp(-|x|)).
void bce_with_logits_forward(const float* x,  // (n) logits
                             const float* t,  // (n) targets in [0, 1]
                             float* loss,     // () out
                             std::int64_t n);
void bce_with_logits_backward(float dloss,
                              const float* x,  // (n)
                              const float* t,  // (n)
                              float* dx,       // (n) (sigmoid(x) - t) * dloss / n
                              std::int64_t n);

/// loss = mean of (x - t)^2.
void mse_forward(const float* x,  // (n)
                 const float* t,  // (n)
                 float* loss,     // () out
                 std::int64_t n);
void mse_backward(float dloss,
                  const float* x,  // (n)
                  const float* t,  // (n)
                  float* dx,       // (n) 2 (x - t) * dloss / n
                  std::int64_t n);

/// loss = mean of |x - t|.
void l1_forward(const float* x,  // (n)
                const float* t,  // (n)
                float* loss,     // () out
                std::int64_t n);
void l1_backward(float dloss,
                 const float* x,  // (n)
                 const float* t,  // (n)
                 float* dx,       // (n) sign(x - t) * dloss / n, 0 where x == t
                 std::int64_t n);

}  // namespace epoch::cuda
