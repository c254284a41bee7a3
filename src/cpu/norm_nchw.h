// epoch's own vectorized LRN across channels on plain NCHW, for the CPU fast path where oneDNN
// has only its reference code (AVX2 machines) or is wrong (see norm_onednn.cpp). Vectorized
// over the H*W positions, which are contiguous; always built, so tests call it on any CPU.
#pragma once

#include <cstdint>
#include "kernels/isa_kernel.h"

namespace epoch::cpu::nchw {

/// As cpu::lrn_forward, any window size: y = x * (k + alpha/size * sum of x^2 over channels
/// [c - size/2, c + (size-1)/2])^-beta. Within a few float roundings of the reference; results
/// do not depend on the thread count. Names itself "epoch:lrn_nchw" (kernels::note_impl).
extern const kernels::IsaKernel<void(const float* x,  // (N, C, HW)
                 float* y,        // (N, C, HW)
                 std::int64_t N, std::int64_t C, std::int64_t HW, std::int64_t size, float alpha,
                 float beta, float k)> lrn_forward;

/// As cpu::lrn_backward (overwrites dx), from the forward output y.
extern const kernels::IsaKernel<void(const float* dy,  // (N, C, HW)
                  const float* x,   // (N, C, HW)
                  const float* y,   // (N, C, HW) the forward output
                  float* dx,        // (N, C, HW)
                  std::int64_t N, std::int64_t C, std::int64_t HW, std::int64_t size, float alpha,
                  float beta, float k)> lrn_backward;

}  // namespace epoch::cpu::nchw
