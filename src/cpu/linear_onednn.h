// oneDNN matrix products for the CPU fast path: general GEMM with transposes and the dense
// layer y = x W^T + b with its backward, as the reference kernels in cpu/linear_cpu.h.
// Compiled only when EPOCH_WITH_ONEDNN; guard includes with #if EPOCH_WITH_ONEDNN.
#pragma once

#include <cstdint>

namespace epoch::cpu::onednn {

/// How a product spreads over the calling thread's OpenMP threads. `onednn`: as oneDNN
/// chooses; its AVX2 GEMM splits the sum over K by the thread count, so the bits move with it.
/// `fixed_tiles`: the output in the tiles of cpu::fixed_tiles (along its longer side, fixed by
/// the shapes alone), each tile a single-threaded product of its own, so every element is one
/// thread's whole sum: the same bits at every thread count (CpuKernels::strict).
enum class Split { onednn, fixed_tiles };

/// c = op(a) op(b) (+ c when accumulate), as cpu::gemm. op(a) (M, K), op(b) (K, N), c (M, N);
/// a is stored (M, K), or (K, M) when trans_a; b is stored (K, N), or (N, K) when trans_b.
void gemm(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K,
          const float* a, const float* b, float* c, bool accumulate = false,
          Split split = Split::onednn);

/// y = x w^T + b, as cpu::linear_forward.
void linear_forward(const float* x,  // (N, IN)
                    const float* w,  // (OUT, IN)
                    const float* b,  // (OUT) or null
                    float* y,        // (N, OUT)
                    std::int64_t N, std::int64_t IN, std::int64_t OUT,
                    bool relu = false,  // y = max(0, x w^T + b): a post-op of the product
                    Split split = Split::onednn);

/// Gradients of linear_forward, as cpu::linear_backward; dx and db may be null. Overwrites.
void linear_backward(const float* dy,  // (N, OUT)
                     const float* x,   // (N, IN)
                     const float* w,   // (OUT, IN)
                     float* dx,        // (N, IN) or null
                     float* dw,        // (OUT, IN)
                     float* db,        // (OUT) or null
                     std::int64_t N, std::int64_t IN, std::int64_t OUT,
                     Split split = Split::onednn);

}  // namespace epoch::cpu::onednn
