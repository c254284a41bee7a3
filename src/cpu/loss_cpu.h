// Reference CPU kernels for the losses: each returns the mean over the batch (or elements),
// accumulated in double in a fixed order, so the value does not depend on the thread count.
// Backward kernels write the gradient of dloss * loss with respect to the input.
#pragma once

#include <cstdint>
#include "kernels/isa_kernel.h"

namespace epoch::cpu {

/// Mean over rows of -log softmax(logits)[label], via log-sum-exp. Labels must be in [0, K).
extern const kernels::IsaKernel<double(const float* logits,         // (N, K)
                                     const std::int32_t* labels,  // (N)
                                     float* probs,                // (N, K) softmax, out
                                     std::int64_t N, std::int64_t K)> softmax_cross_entropy_forward;
extern const kernels::IsaKernel<void(float dloss,
                                    const float* probs,          // (N, K)
                                    const std::int32_t* labels,  // (N)
                                    float* dlogits,  // (N, K) (probs - onehot) * dloss / N
                                    std::int64_t N, std::int64_t K)> softmax_cross_entropy_backward;

/// Mean of max(x, 0) - x*t + log1p(exp(-|x|)).
extern const kernels::IsaKernel<double(const float* x,  // (n) logits
                               const float* t,  // (n) targets in [0, 1]
                               std::int64_t n)> bce_with_logits_forward;
extern const kernels::IsaKernel<void(float dloss,
                              const float* x,  // (n)
                              const float* t,  // (n)
                              float* dx,       // (n) (sigmoid(x) - t) * dloss / n
                              std::int64_t n)> bce_with_logits_backward;

/// Mean of (x - t)^2.
extern const kernels::IsaKernel<double(const float* x,  // (n)
                   const float* t,  // (n)
                   std::int64_t n)> mse_forward;
extern const kernels::IsaKernel<void(float dloss,
                  const float* x,  // (n)
                  const float* t,  // (n)
                  float* dx,       // (n) 2 (x - t) * dloss / n
                  std::int64_t n)> mse_backward;

/// Mean of |x - t|.
extern const kernels::IsaKernel<double(const float* x,  // (n)
                  const float* t,  // (n)
                  std::int64_t n)> l1_forward;
extern const kernels::IsaKernel<void(float dloss,
                 const float* x,  // (n)
                 const float* t,  // (n)
                 float* dx,       // (n) sign(x - t) * dloss / n, 0 where x == t
                 std::int64_t n)> l1_backward;

}  // namespace epoch::cpu
