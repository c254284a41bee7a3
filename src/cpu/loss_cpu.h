// Reference CPU kernels for the losses: each returns the mean over the batch (or elements),
// accumulated in double in a fixed order, so the value does not depend on the thread count.
// Backward kernels write the gradient of dloss * loss with respect to the input.
#pragma once

#include <cstdint>

namespace epoch::cpu {

/// Mean over rows of -log softmax(logits)[label], via log-sum-exp. Labels must be in [0, K).
double softmax_cross_entropy_forward(const float* logits,         // (N, K)
                                     const std::int32_t* labels,  // (N)
                                     float* probs,                // (N, K) softmax, out
                                     std::int64_t N, std::int64_t K);
void softmax_cross_entropy_backward(float dloss,
                                    const float* probs,          // (N, K)
                                    const std::int32_t* labels,  // (N)
                                    float* dlogits,  // (N, K) (probs - onehot) * dloss / N
                                    std::int64_t N, std::int64_t K);

/// Mean of max(x, 0) - x*t + log1p(exp(-|x|)).
double bce_with_logits_forward(const float* x,  // (n) logits
                               const float* t,  // (n) targets in [0, 1]
                               std::int64_t n);
void bce_with_logits_backward(float dloss,
                              const float* x,  // (n)
                              const float* t,  // (n)
                              float* dx,       // (n) (sigmoid(x) - t) * dloss / n
                              std::int64_t n);

/// Mean of (x - t)^2.
double mse_forward(const float* x,  // (n)
                   const float* t,  // (n)
                   std::int64_t n);
void mse_backward(float dloss,
                  const float* x,  // (n)
                  const float* t,  // (n)
                  float* dx,       // (n) 2 (x - t) * dloss / n
                  std::int64_t n);

/// Mean of |x - t|.
double l1_forward(const float* x,  // (n)
                  const float* t,  // (n)
                  std::int64_t n);
void l1_backward(float dloss,
                 const float* x,  // (n)
                 const float* t,  // (n)
                 float* dx,       // (n) sign(x - t) * dloss / n, 0 where x == t
                 std::int64_t n);

}  // namespace epoch::cpu
