// CPU kernels for inverted dropout (the reference and the fast path alike). The keep decision
// of element i is a pure function of (seed, key, i) through RandomStream::bits_at, so any
// thread count gives the same mask.
#pragma once

#include <cstdint>
#include "kernels/isa_kernel.h"

namespace epoch::cpu {

/// Element i is kept iff uniform_i = (bits_at(i) >> 8) * 2^-24 >= p; kept elements are scaled by
/// 1 / (1 - p). Requires 0 <= p < 1.
extern const kernels::IsaKernel<void(const float* x,  // (n)
                     float* y,        // (n) x * mask
                     float* mask,     // (n) 0 or 1 / (1 - p)
                     std::int64_t n, float p, std::uint64_t seed, std::uint64_t key)> dropout_forward;
/// dropout_forward of a channel-blocked (N, C/b, H, W, b) x, y and mask: each element keeps
/// the decision of its row-major index, so the mask is the same in either layout.
extern const kernels::IsaKernel<void(const float* x, float* y, float* mask, std::int64_t N, std::int64_t C,
                             std::int64_t HW, std::int64_t block, float p, std::uint64_t seed,
                             std::uint64_t key)> dropout_forward_blocked;
extern const kernels::IsaKernel<void(const float* dy,    // (n)
                      const float* mask,  // (n) from dropout_forward
                      float* dx,          // (n) dy * mask
                      std::int64_t n)> dropout_backward;

}  // namespace epoch::cpu
