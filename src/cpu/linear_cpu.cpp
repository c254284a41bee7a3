// Reference matrix products (see linear_cpu.h): operands are packed row-major, then C is
// computed tile by tile (OpenMP over tiles of C) with an i-k-j inner loop the compiler vectorizes.
#include "cpu/linear_cpu.h"

#include <algorithm>
#include <vector>
// Compiled once per instruction-set level (kernels/isa_target.h): include it last.
#include "kernels/isa_target.h"

namespace epoch::cpu::EPOCH_ISA_NS {
namespace {

constexpr std::int64_t kTileM = 16;   // rows of C per tile
constexpr std::int64_t kTileN = 256;  // columns of C per tile
constexpr std::int64_t kTileK = 128;  // depth per pass over a tile

// dst (cols, rows) = transpose of src (rows, cols).
void transpose(const float* src, float* dst, std::int64_t rows, std::int64_t cols) {
  constexpr std::int64_t kB = 32;
#pragma omp parallel for schedule(static) if (rows * cols > 65536)
  for (std::int64_t c0 = 0; c0 < cols; c0 += kB)
    for (std::int64_t r0 = 0; r0 < rows; r0 += kB)
      for (std::int64_t c = c0; c < std::min(cols, c0 + kB); ++c)
        for (std::int64_t r = r0; r < std::min(rows, r0 + kB); ++r)
          dst[c * rows + r] = src[r * cols + c];
}

// c (M, N) (+)= a (M, K) b (K, N), all row-major.
void gemm_nn(std::int64_t M, std::int64_t N, std::int64_t K, const float* a, const float* b,
             float* c, bool accumulate) {
  const std::int64_t tiles_m = (M + kTileM - 1) / kTileM;
  const std::int64_t tiles_n = (N + kTileN - 1) / kTileN;
#pragma omp parallel for collapse(2) schedule(static) if (M * N * K > 32768)
  for (std::int64_t tm = 0; tm < tiles_m; ++tm) {
    for (std::int64_t tn = 0; tn < tiles_n; ++tn) {
      const std::int64_t i0 = tm * kTileM, i1 = std::min(M, i0 + kTileM);
      const std::int64_t j0 = tn * kTileN, j1 = std::min(N, j0 + kTileN);
      if (!accumulate)
        for (std::int64_t i = i0; i < i1; ++i) std::fill(c + i * N + j0, c + i * N + j1, 0.0f);
      for (std::int64_t k0 = 0; k0 < K; k0 += kTileK) {
        const std::int64_t k1 = std::min(K, k0 + kTileK);
        for (std::int64_t i = i0; i < i1; ++i) {
          float* crow = c + i * N;
          for (std::int64_t k = k0; k < k1; ++k) {
            const float aik = a[i * K + k];
            const float* brow = b + k * N;
#pragma omp simd
            for (std::int64_t j = j0; j < j1; ++j) crow[j] += aik * brow[j];
          }
        }
      }
    }
  }
}

}  // namespace

void gemm(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K,
          const float* a, const float* b, float* c, bool accumulate) {
  if (M == 0 || N == 0) return;
  if (K == 0) {
    if (!accumulate) std::fill(c, c + M * N, 0.0f);
    return;
  }
  std::vector<float> a_packed, b_packed;
  if (trans_a) {
    a_packed.resize(static_cast<std::size_t>(M * K));
    transpose(a, a_packed.data(), K, M);
    a = a_packed.data();
  }
  if (trans_b) {
    b_packed.resize(static_cast<std::size_t>(K * N));
    transpose(b, b_packed.data(), N, K);
    b = b_packed.data();
  }
  gemm_nn(M, N, K, a, b, c, accumulate);
}

void linear_forward(const float* x, const float* w, const float* b, float* y, std::int64_t N,
                    std::int64_t IN, std::int64_t OUT) {
  gemm(false, true, N, OUT, IN, x, w, y, false);
  if (b != nullptr) bias_add_forward(y, b, y, N, OUT, 1);
}

void linear_backward(const float* dy, const float* x, const float* w, float* dx, float* dw,
                     float* db, std::int64_t N, std::int64_t IN, std::int64_t OUT) {
  if (dx != nullptr) gemm(false, false, N, IN, OUT, dy, w, dx, false);  // (N, OUT) (OUT, IN)
  gemm(true, false, OUT, IN, N, dy, x, dw, false);                    // (OUT, N) (N, IN)
  if (db != nullptr) bias_add_backward(dy, db, N, OUT, 1);
}

void bias_add_forward(const float* x, const float* b, float* y, std::int64_t outer,
                      std::int64_t C, std::int64_t inner) {
#pragma omp parallel for collapse(2) schedule(static) if (outer * C * inner > 32768)
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t c = 0; c < C; ++c) {
      const std::int64_t off = (o * C + c) * inner;
      const float bc = b[c];
      for (std::int64_t i = 0; i < inner; ++i) y[off + i] = x[off + i] + bc;
    }
}

void bias_add_backward(const float* dy, float* db, std::int64_t outer, std::int64_t C,
                       std::int64_t inner) {
  if (inner == 1) {
    // (outer, C) rows, a dense layer's dy: walk the rows, each thread summing a band of
    // columns in double, in the same order per column (o ascending) as the loop below, so the
    // same bits, without striding down each column.
    constexpr std::int64_t kBand = 256;
    const std::int64_t bands = (C + kBand - 1) / kBand;
#pragma omp parallel for schedule(static) if (outer * C > 32768)
    for (std::int64_t band = 0; band < bands; ++band) {
      const std::int64_t c0 = band * kBand, width = std::min(kBand, C - c0);
      double acc[kBand] = {};
      for (std::int64_t o = 0; o < outer; ++o) {
        const float* row = dy + o * C + c0;
#pragma omp simd
        for (std::int64_t c = 0; c < width; ++c) acc[c] += row[c];
      }
      for (std::int64_t c = 0; c < width; ++c) db[c0 + c] = static_cast<float>(acc[c]);
    }
    return;
  }
#pragma omp parallel for schedule(static) if (outer * C * inner > 32768)
  for (std::int64_t c = 0; c < C; ++c) {
    double s = 0.0;
    for (std::int64_t o = 0; o < outer; ++o) {
      const float* row = dy + (o * C + c) * inner;
      for (std::int64_t i = 0; i < inner; ++i) s += row[i];
    }
    db[c] = static_cast<float>(s);
  }
}

}  // namespace epoch::cpu::EPOCH_ISA_NS

#if EPOCH_ISA_LEVEL == 0
namespace epoch::cpu {
EPOCH_ISA_KERNEL(gemm);
EPOCH_ISA_KERNEL(linear_forward);
EPOCH_ISA_KERNEL(linear_backward);
EPOCH_ISA_KERNEL(bias_add_forward);
EPOCH_ISA_KERNEL(bias_add_backward);
}  // namespace epoch::cpu
#endif
