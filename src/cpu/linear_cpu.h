// Reference CPU kernels for matrix products: a cache-blocked GEMM (no BLAS), the dense layer
// y = x W^T + b and the per-channel bias add. Raw pointers and sizes; the test oracle.
#pragma once

#include <cstdint>
#include "kernels/isa_kernel.h"

namespace epoch::cpu {

/// c = op(a) op(b) (+ c when accumulate). op(a) (M, K), op(b) (K, N), c (M, N), all row-major.
/// a is stored (M, K), or (K, M) when trans_a; b is stored (K, N), or (N, K) when trans_b.
/// Each c element sums over k in increasing order whatever the thread count.
extern const kernels::IsaKernel<void(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K,
          const float* a, const float* b, float* c, bool accumulate)> gemm;

/// y = x w^T + b.
extern const kernels::IsaKernel<void(const float* x,  // (N, IN)
                    const float* w,  // (OUT, IN)
                    const float* b,  // (OUT) or null
                    float* y,        // (N, OUT)
                    std::int64_t N, std::int64_t IN, std::int64_t OUT)> linear_forward;

/// Gradients of linear_forward; dx and db may be null (not wanted). Overwrites the outputs.
extern const kernels::IsaKernel<void(const float* dy,  // (N, OUT)
                     const float* x,   // (N, IN)
                     const float* w,   // (OUT, IN)
                     float* dx,        // (N, IN) or null
                     float* dw,        // (OUT, IN)
                     float* db,        // (OUT) or null
                     std::int64_t N, std::int64_t IN, std::int64_t OUT)> linear_backward;

/// y = x + b broadcast over channels; x viewed as (outer, C, inner).
extern const kernels::IsaKernel<void(const float* x,  // (outer, C, inner)
                      const float* b,  // (C)
                      float* y,        // (outer, C, inner)
                      std::int64_t outer, std::int64_t C, std::int64_t inner)> bias_add_forward;

/// db[c] = sum of dy over outer and inner, in a fixed order.
extern const kernels::IsaKernel<void(const float* dy,  // (outer, C, inner)
                       float* db,        // (C)
                       std::int64_t outer, std::int64_t C, std::int64_t inner)> bias_add_backward;

}  // namespace epoch::cpu
