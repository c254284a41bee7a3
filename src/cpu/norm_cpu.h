// Reference CPU kernels for batch normalization (per channel over N and H*W, with running
// statistics as PyTorch keeps them) and local response normalization across channels.
#pragma once

#include <cstdint>
#include "kernels/isa_kernel.h"

namespace epoch::cpu {

/// Training: normalizes with the batch mean and biased variance, and updates running_mean and
/// running_var in place with the batch mean and the unbiased variance (PyTorch), or the biased
/// one (Keras) when unbiased_running_var is false (requires N*HW > 1).
/// Eval: normalizes with the running statistics (left unchanged).
/// save_mean/save_invstd receive the mean and 1/sqrt(var + eps) that were used.
extern const kernels::IsaKernel<void(const float* x,        // (N, C, HW)
                        const float* gamma,    // (C)
                        const float* beta,     // (C)
                        float* running_mean,   // (C)
                        float* running_var,    // (C)
                        float* y,              // (N, C, HW)
                        float* save_mean,      // (C)
                        float* save_invstd,    // (C)
                        std::int64_t N, std::int64_t C, std::int64_t HW, bool training,
                        float momentum, float eps, bool unbiased_running_var)> batch_norm_forward;

/// Gradients of batch_norm_forward; training includes the path through the batch statistics.
extern const kernels::IsaKernel<void(const float* dy,           // (N, C, HW)
                         const float* x,            // (N, C, HW)
                         const float* gamma,        // (C)
                         const float* save_mean,    // (C)
                         const float* save_invstd,  // (C)
                         float* dx,                 // (N, C, HW)
                         float* dgamma,             // (C)
                         float* dbeta,              // (C)
                         std::int64_t N, std::int64_t C, std::int64_t HW, bool training)> batch_norm_backward;

/// y = x / (k + alpha/size * sum of x^2 over channels [c - size/2, c + (size-1)/2])^beta,
/// channels outside [0, C) counting as zero.
extern const kernels::IsaKernel<void(const float* x,  // (N, C, HW)
                 float* y,        // (N, C, HW)
                 std::int64_t N, std::int64_t C, std::int64_t HW, std::int64_t size, float alpha,
                 float beta, float k)> lrn_forward;

/// dx of lrn_forward (overwrites dx).
extern const kernels::IsaKernel<void(const float* dy,  // (N, C, HW)
                  const float* x,   // (N, C, HW)
                  const float* y,   // (N, C, HW) the forward output
                  float* dx,        // (N, C, HW)
                  std::int64_t N, std::int64_t C, std::int64_t HW, std::int64_t size,
                  float alpha, float beta, float k)> lrn_backward;

}  // namespace epoch::cpu
