// CUDA twins of the normalization kernels in cpu/norm_cpu.h (same names and arguments):
// batch norm with running statistics (per-channel sums in double, fixed-order reductions, no
// atomics) and local response normalization across channels. Device pointers.
#pragma once

#include <cstdint>

namespace epoch::cuda {

/// As cpu::batch_norm_forward: training normalizes with the batch mean and biased variance
/// and updates the running statistics with the unbiased one (requires N*HW > 1); eval uses
/// the running statistics. save_mean/save_invstd receive the mean and 1/sqrt(var + eps) used.
void batch_norm_forward(const float* x,        // (N, C, HW)
                        const float* gamma,    // (C)
                        const float* beta,     // (C)
                        float* running_mean,   // (C)
                        float* running_var,    // (C)
                        float* y,              // (N, C, HW)
                        float* save_mean,      // (C)
                        float* save_invstd,    // (C)
                        std::int64_t N, std::int64_t C, std::int64_t HW, bool training,
                        float momentum, float eps, bool unbiased_running_var);

/// As cpu::batch_norm_backward; training includes the path through the batch statistics.
void batch_norm_backward(const float* dy,           // (N, C, HW)
                         const float* x,            // (N, C, HW)
                         const float* gamma,        // (C)
                         const float* save_mean,    // (C)
                         const float* save_invstd,  // (C)
                         float* dx,                 // (N, C, HW)
                         float* dgamma,             // (C)
                         float* dbeta,              // (C)
                         std::int64_t N, std::int64_t C, std::int64_t HW, bool training);

/// As cpu::lrn_forward: y = x / (k + alpha/size * window sum of x^2)^beta, window
/// [c - size/2, c + (size-1)/2] clipped to [0, C).
void lrn_forward(const float* x,  // (N, C, HW)
                 float* y,        // (N, C, HW)
                 std::int64_t N, std::int64_t C, std::int64_t HW, std::int64_t size, float alpha,
                 float beta, float k);

/// dx of lrn_forward (overwrites dx), as cpu::lrn_backward.
void lrn_backward(const float* dy,  // (N, C, HW)
                  const float* x,   // (N, C, HW)
                  const float* y,   // (N, C, HW) the forward output
                  float* dx,        // (N, C, HW)
                  std::int64_t N, std::int64_t C, std::int64_t HW, std::int64_t size,
                  float alpha, float beta, float k);

}  // namespace epoch::cuda
