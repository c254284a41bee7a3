// Reference loss kernels (see loss_cpu.h). Reductions: fixed blocks of elements summed in
// double, in parallel over blocks, then the block sums added in order; the partition depends
// only on n, never on the thread count.
#include "cpu/loss_cpu.h"

#include <algorithm>
#include <cmath>
#include <vector>
// Compiled once per instruction-set level (kernels/isa_target.h): include it last.
#include "kernels/isa_target.h"

namespace epoch::cpu::EPOCH_ISA_NS {
namespace {

constexpr std::int64_t kBlock = 4096;

// Sum over i in [0, n) of term(i) in double, in a thread-count-independent order.
template <typename Term>
double blocked_sum(std::int64_t n, Term term) {
  const std::int64_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<double> partial(static_cast<std::size_t>(blocks), 0.0);
#pragma omp parallel for schedule(static) if (n > 65536)
  for (std::int64_t blk = 0; blk < blocks; ++blk) {
    const std::int64_t end = std::min(n, (blk + 1) * kBlock);
    double s = 0.0;
    for (std::int64_t i = blk * kBlock; i < end; ++i) s += term(i);
    partial[static_cast<std::size_t>(blk)] = s;
  }
  double total = 0.0;
  for (double p : partial) total += p;
  return total;
}

inline float stable_sigmoid(float x) {
  const float e = std::exp(-std::fabs(x));
  const float r = 1.0f / (1.0f + e);
  return x >= 0.0f ? r : e * r;
}

}  // namespace

double softmax_cross_entropy_forward(const float* logits, const std::int32_t* labels, float* probs,
                                     std::int64_t N, std::int64_t K) {
  std::vector<double> row_loss(static_cast<std::size_t>(N), 0.0);
#pragma omp parallel for schedule(static) if (N * K > 32768)
  for (std::int64_t row = 0; row < N; ++row) {
    const float* x = logits + row * K;  // (K)
    float* p = probs + row * K;         // (K)
    float m = x[0];
    for (std::int64_t k = 1; k < K; ++k) m = std::max(m, x[k]);
    double s = 0.0;
    for (std::int64_t k = 0; k < K; ++k) {
      p[k] = std::exp(x[k] - m);
      s += p[k];
    }
    const float inv = static_cast<float>(1.0 / s);
    for (std::int64_t k = 0; k < K; ++k) p[k] *= inv;
    // -log softmax[label] = log(sum exp(x - m)) - (x[label] - m)
    row_loss[static_cast<std::size_t>(row)] =
        std::log(s) - (static_cast<double>(x[labels[row]]) - m);
  }
  double total = 0.0;
  for (double l : row_loss) total += l;
  return total / static_cast<double>(N);
}

void softmax_cross_entropy_backward(float dloss, const float* probs, const std::int32_t* labels,
                                    float* dlogits, std::int64_t N, std::int64_t K) {
  const float scale = dloss / static_cast<float>(N);
#pragma omp parallel for schedule(static) if (N * K > 32768)
  for (std::int64_t row = 0; row < N; ++row) {
    const float* p = probs + row * K;  // (K)
    float* g = dlogits + row * K;      // (K)
    for (std::int64_t k = 0; k < K; ++k) g[k] = p[k] * scale;
    g[labels[row]] = (p[labels[row]] - 1.0f) * scale;
  }
}

double bce_with_logits_forward(const float* x, const float* t, std::int64_t n) {
  const double s = blocked_sum(n, [&](std::int64_t i) {
    const double xi = x[i];
    return std::max(xi, 0.0) - xi * t[i] + std::log1p(std::exp(-std::fabs(xi)));
  });
  return s / static_cast<double>(n);
}

void bce_with_logits_backward(float dloss, const float* x, const float* t, float* dx,
                              std::int64_t n) {
  const float scale = dloss / static_cast<float>(n);
#pragma omp parallel for simd schedule(static) if (n > 32768)
  for (std::int64_t i = 0; i < n; ++i) dx[i] = (stable_sigmoid(x[i]) - t[i]) * scale;
}

double mse_forward(const float* x, const float* t, std::int64_t n) {
  const double s = blocked_sum(n, [&](std::int64_t i) {
    const double d = static_cast<double>(x[i]) - t[i];
    return d * d;
  });
  return s / static_cast<double>(n);
}

void mse_backward(float dloss, const float* x, const float* t, float* dx, std::int64_t n) {
  const float scale = 2.0f * dloss / static_cast<float>(n);
#pragma omp parallel for simd schedule(static) if (n > 32768)
  for (std::int64_t i = 0; i < n; ++i) dx[i] = (x[i] - t[i]) * scale;
}

double l1_forward(const float* x, const float* t, std::int64_t n) {
  const double s =
      blocked_sum(n, [&](std::int64_t i) { return std::fabs(static_cast<double>(x[i]) - t[i]); });
  return s / static_cast<double>(n);
}

void l1_backward(float dloss, const float* x, const float* t, float* dx, std::int64_t n) {
  const float scale = dloss / static_cast<float>(n);
#pragma omp parallel for simd schedule(static) if (n > 32768)
  for (std::int64_t i = 0; i < n; ++i) {
    const float d = x[i] - t[i];
    dx[i] = d > 0.0f ? scale : (d < 0.0f ? -scale : 0.0f);
  }
}

}  // namespace epoch::cpu::EPOCH_ISA_NS

#if EPOCH_ISA_LEVEL == 0
namespace epoch::cpu {
EPOCH_ISA_KERNEL(softmax_cross_entropy_forward);
EPOCH_ISA_KERNEL(softmax_cross_entropy_backward);
EPOCH_ISA_KERNEL(bce_with_logits_forward);
EPOCH_ISA_KERNEL(bce_with_logits_backward);
EPOCH_ISA_KERNEL(mse_forward);
EPOCH_ISA_KERNEL(mse_backward);
EPOCH_ISA_KERNEL(l1_forward);
EPOCH_ISA_KERNEL(l1_backward);
}  // namespace epoch::cpu
#endif
