// CUDA twins of the dense-layer kernels in cpu/linear_cpu.h (same names and arguments):
// row-major GEMM with optional transposes (cuBLAS), linear forward/backward and the channel
// bias add. Pointers are device pointers, row-major.
#pragma once

#include <cstdint>

namespace epoch::cuda {

/// c = op(a) op(b) (+ c when accumulate). op(a) (M, K), op(b) (K, N), c (M, N), all row-major.
/// a is stored (M, K), or (K, M) when trans_a; b is stored (K, N), or (N, K) when trans_b.
/// cuBLAS SGEMM in plain FP32 (no TF32); deterministic for a given GPU and library version.
void gemm(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K,
          const float* a, const float* b, float* c, bool accumulate = false);

/// y = x w^T + b (the bias rows are written first, then SGEMM accumulates onto them).
void linear_forward(const float* x,  // (N, IN)
                    const float* w,  // (OUT, IN)
                    const float* b,  // (OUT) or null
                    float* y,        // (N, OUT)
                    std::int64_t N, std::int64_t IN, std::int64_t OUT);
/// Gradients of linear_forward; dx and db may be null (not wanted). Overwrites the outputs.
/// db sums dy over N in a fixed order.
void linear_backward(const float* dy,  // (N, OUT)
                     const float* x,   // (N, IN)
                     const float* w,   // (OUT, IN)
                     float* dx,        // (N, IN) or null
                     float* dw,        // (OUT, IN)
                     float* db,        // (OUT) or null
                     std::int64_t N, std::int64_t IN, std::int64_t OUT);

/// y = x + b broadcast over channels; x viewed as (outer, C, inner).
void bias_add_forward(const float* x,  // (outer, C, inner)
                      const float* b,  // (C)
                      float* y,        // (outer, C, inner)
                      std::int64_t outer, std::int64_t C, std::int64_t inner);
/// db[c] = sum of dy over outer and inner, in a fixed order (one block per channel, no atomics).
void bias_add_backward(const float* dy,  // (outer, C, inner)
                       float* db,        // (C)
                       std::int64_t outer, std::int64_t C, std::int64_t inner);

}  // namespace epoch::cuda
