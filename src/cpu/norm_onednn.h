// oneDNN batch normalization and local response normalization (across channels) for the CPU
// fast path, on plain (N, C, HW) buffers; the same contracts as cpu/norm_cpu.h. LRN runs
// epoch's own kernel (cpu/norm_nchw.h) where oneDNN has only reference code or is wrong.
// Compiled only when EPOCH_WITH_ONEDNN; guard includes with #if EPOCH_WITH_ONEDNN.
#pragma once

#include <cstdint>

namespace epoch::cpu::onednn {

/// As cpu::batch_norm_forward: training normalizes with batch statistics and updates the
/// running ones in place (unbiased variance); eval uses the running statistics. x and y (and
/// in backward dy and dx) are row-major for block 0, else channel-blocked with that block
/// ((N, C/block, HW, block), Tensor::channel_block).
void batch_norm_forward(const float* x,       // (N, C, HW)
                        const float* gamma,   // (C)
                        const float* beta,    // (C)
                        float* running_mean,  // (C)
                        float* running_var,   // (C)
                        float* y,             // (N, C, HW)
                        float* save_mean,     // (C)
                        float* save_invstd,   // (C)
                        std::int64_t N, std::int64_t C, std::int64_t HW, bool training,
                        float momentum, float eps, bool unbiased_running_var,
                        std::int64_t block = 0);

/// As cpu::batch_norm_backward (overwrites dx, dgamma, dbeta).
void batch_norm_backward(const float* dy,           // (N, C, HW)
                         const float* x,            // (N, C, HW)
                         const float* gamma,        // (C)
                         const float* save_mean,    // (C)
                         const float* save_invstd,  // (C)
                         float* dx,                 // (N, C, HW)
                         float* dgamma,             // (C)
                         float* dbeta,              // (C)
                         std::int64_t N, std::int64_t C, std::int64_t HW, bool training,
                         std::int64_t block = 0);

/// As cpu::lrn_forward; size must be odd (the window is centred on the channel).
void lrn_forward(const float* x,  // (N, C, HW)
                 float* y,        // (N, C, HW)
                 std::int64_t N, std::int64_t C, std::int64_t HW, std::int64_t size, float alpha,
                 float beta, float k);

/// As cpu::lrn_backward (overwrites dx). oneDNN recomputes what it needs from x; y is read
/// only where epoch's own kernel runs (see norm_onednn.cpp).
void lrn_backward(const float* dy,  // (N, C, HW)
                  const float* x,   // (N, C, HW)
                  const float* y,   // (N, C, HW) the forward output
                  float* dx,        // (N, C, HW)
                  std::int64_t N, std::int64_t C, std::int64_t HW, std::int64_t size, float alpha,
                  float beta, float k);

}  // namespace epoch::cpu::onednn
