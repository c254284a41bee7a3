// Batch norm whose per-channel sums have one order at every thread count, for
// CpuKernels::strict: OpenMP over channels (or channel blocks), each channel's sums wholly one
// thread's, in double, in an order set by the sizes alone. Runs in the layout the activations
// come in, row-major or channel-blocked, so a chain of blocked layers needs no reorder (the
// reference kernels take row-major tensors only).
#pragma once

#include <cstdint>
#include "kernels/isa_kernel.h"

namespace epoch::cpu::fixed_order {

/// As cpu::batch_norm_forward: training normalizes with batch statistics (biased variance)
/// and updates the running ones in place (unbiased); eval uses the running statistics. x and
/// y are row-major for block 0, else channel-blocked ((N, C/block, HW, block), block 8 or 16,
/// C a multiple of it). Within a few float roundings of the reference; the bits do not depend
/// on the thread count. Names itself "epoch:batch_norm_fixed" (kernels::note_impl).
extern const kernels::IsaKernel<void(const float* x,       // (N, C, HW)
                        const float* gamma,   // (C)
                        const float* beta,    // (C)
                        float* running_mean,  // (C)
                        float* running_var,   // (C)
                        float* y,             // (N, C, HW)
                        float* save_mean,     // (C)
                        float* save_invstd,   // (C)
                        std::int64_t N, std::int64_t C, std::int64_t HW, bool training,
                        float momentum, float eps, bool unbiased_running_var,
                        std::int64_t block)> batch_norm_forward;

/// As cpu::batch_norm_backward (overwrites dx, dgamma, dbeta), in the layout of `block`.
extern const kernels::IsaKernel<void(const float* dy,           // (N, C, HW)
                         const float* x,            // (N, C, HW)
                         const float* gamma,        // (C)
                         const float* save_mean,    // (C)
                         const float* save_invstd,  // (C)
                         float* dx,                 // (N, C, HW)
                         float* dgamma,             // (C)
                         float* dbeta,              // (C)
                         std::int64_t N, std::int64_t C, std::int64_t HW, bool training,
                         std::int64_t block)> batch_norm_backward;

}  // namespace epoch::cpu::fixed_order
