// Fused CPU optimizer updates (see optim_cpu.h). Each variant is a template over its options so
// the inner loop has no branches and vectorizes; OpenMP splits large parameters by element.
#include "cpu/optim_cpu.h"

#include <algorithm>
#include <cmath>
#include <vector>
// Compiled once per instruction-set level (kernels/isa_target.h): include it last.
#include "kernels/isa_target.h"

namespace epoch::cpu::EPOCH_ISA_NS {
namespace {

constexpr std::int64_t kParallelThreshold = 32768;

template <bool Momentum, bool Nesterov>
void sgd_loop(float* p, const float* g, float* buf, std::int64_t n, float lr, float momentum,
              float wd) {
#pragma omp parallel for simd schedule(static) if (n > kParallelThreshold)
  for (std::int64_t i = 0; i < n; ++i) {
    float d = g[i] + wd * p[i];
    if constexpr (Momentum) {
      const float b = momentum * buf[i] + d;
      buf[i] = b;
      d = Nesterov ? d + momentum * b : b;
    }
    p[i] -= lr * d;
  }
}

template <bool Decoupled>
void adam_loop(float* p, const float* g, float* m, float* v, std::int64_t n, float lr, float beta1,
               float beta2, float eps, float wd, float step_size, float sqrt_bias2) {
  const float decay = static_cast<float>(1.0 - static_cast<double>(lr) * wd);
#pragma omp parallel for simd schedule(static) if (n > kParallelThreshold)
  for (std::int64_t i = 0; i < n; ++i) {
    float x = p[i];
    float d = g[i];
    if constexpr (Decoupled)
      x *= decay;
    else
      d += wd * x;
    const float mi = beta1 * m[i] + (1.0f - beta1) * d;
    const float vi = beta2 * v[i] + (1.0f - beta2) * (d * d);
    m[i] = mi;
    v[i] = vi;
    const float denom = std::sqrt(vi) / sqrt_bias2 + eps;
    p[i] = x - step_size * (mi / denom);
  }
}

template <bool Centered, bool Momentum>
void rmsprop_loop(float* p, const float* g, float* sq, float* ga, float* buf, std::int64_t n,
                  float lr, float alpha, float eps, float wd, float momentum, bool eps_inside) {
  // eps inside or after the root; adding 0 leaves the other form's bits as they were
  const float inner = eps_inside ? eps : 0.0f, outer = eps_inside ? 0.0f : eps;
#pragma omp parallel for simd schedule(static) if (n > kParallelThreshold)
  for (std::int64_t i = 0; i < n; ++i) {
    const float d = g[i] + wd * p[i];
    const float s = alpha * sq[i] + (1.0f - alpha) * (d * d);
    sq[i] = s;
    float avg;
    if constexpr (Centered) {
      const float a = alpha * ga[i] + (1.0f - alpha) * d;
      ga[i] = a;
      avg = std::sqrt(s - a * a + inner) + outer;
    } else {
      avg = std::sqrt(s + inner) + outer;
    }
    if constexpr (Momentum) {
      const float b = momentum * buf[i] + d / avg;
      buf[i] = b;
      p[i] -= lr * b;
    } else {
      p[i] -= lr * (d / avg);
    }
  }
}

}  // namespace

void sgd_step(float* p, const float* g, float* buf, std::int64_t n, float lr, float momentum,
              float weight_decay, bool nesterov) {
  if (momentum == 0.0f)
    sgd_loop<false, false>(p, g, buf, n, lr, momentum, weight_decay);
  else if (nesterov)
    sgd_loop<true, true>(p, g, buf, n, lr, momentum, weight_decay);
  else
    sgd_loop<true, false>(p, g, buf, n, lr, momentum, weight_decay);
}

void adam_step(float* p, const float* g, float* m, float* v, std::int64_t n, float lr, float beta1,
               float beta2, float eps, float weight_decay, bool decoupled, float step_size,
               float sqrt_bias2) {
  if (decoupled)
    adam_loop<true>(p, g, m, v, n, lr, beta1, beta2, eps, weight_decay, step_size, sqrt_bias2);
  else
    adam_loop<false>(p, g, m, v, n, lr, beta1, beta2, eps, weight_decay, step_size, sqrt_bias2);
}

void rmsprop_step(float* p, const float* g, float* sq, float* ga, float* buf, std::int64_t n,
                  float lr, float alpha, float eps, float weight_decay, float momentum,
                  bool eps_inside_sqrt) {
  const bool centered = ga != nullptr, with_momentum = momentum != 0.0f;
  if (centered && with_momentum)
    rmsprop_loop<true, true>(p, g, sq, ga, buf, n, lr, alpha, eps, weight_decay, momentum, eps_inside_sqrt);
  else if (centered)
    rmsprop_loop<true, false>(p, g, sq, ga, buf, n, lr, alpha, eps, weight_decay, momentum, eps_inside_sqrt);
  else if (with_momentum)
    rmsprop_loop<false, true>(p, g, sq, ga, buf, n, lr, alpha, eps, weight_decay, momentum, eps_inside_sqrt);
  else
    rmsprop_loop<false, false>(p, g, sq, ga, buf, n, lr, alpha, eps, weight_decay, momentum, eps_inside_sqrt);
}

void lars_step(float* p, const float* g, float* v, std::int64_t n, float scaled_lr, float momentum,
               float weight_decay) {
#pragma omp parallel for simd schedule(static) if (n > kParallelThreshold)
  for (std::int64_t i = 0; i < n; ++i) {
    const float b = momentum * v[i] + scaled_lr * (g[i] + weight_decay * p[i]);
    v[i] = b;
    p[i] -= b;
  }
}

void lamb_direction(const float* p, const float* g, float* m, float* v, float* r, std::int64_t n,
                    float beta1, float beta2, float eps, float weight_decay, float bias1,
                    float sqrt_bias2) {
#pragma omp parallel for simd schedule(static) if (n > kParallelThreshold)
  for (std::int64_t i = 0; i < n; ++i) {
    const float d = g[i];
    const float mi = beta1 * m[i] + (1.0f - beta1) * d;
    const float vi = beta2 * v[i] + (1.0f - beta2) * (d * d);
    m[i] = mi;
    v[i] = vi;
    r[i] = (mi / bias1) / (std::sqrt(vi) / sqrt_bias2 + eps) + weight_decay * p[i];
  }
}

double squared_norm(const float* x, std::int64_t n) {
  constexpr std::int64_t kBlock = 4096;
  const std::int64_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<double> partial(static_cast<std::size_t>(blocks), 0.0);
#pragma omp parallel for schedule(static) if (n > kParallelThreshold)
  for (std::int64_t b = 0; b < blocks; ++b) {
    double s = 0.0;
    const std::int64_t end = std::min(n, (b + 1) * kBlock);
    for (std::int64_t i = b * kBlock; i < end; ++i) s += static_cast<double>(x[i]) * x[i];
    partial[static_cast<std::size_t>(b)] = s;
  }
  double total = 0.0;
  for (const double s : partial) total += s;
  return total;
}

}  // namespace epoch::cpu::EPOCH_ISA_NS

#if EPOCH_ISA_LEVEL == 0
namespace epoch::cpu {
EPOCH_ISA_KERNEL(sgd_step);
EPOCH_ISA_KERNEL(adam_step);
EPOCH_ISA_KERNEL(rmsprop_step);
EPOCH_ISA_KERNEL(lars_step);
EPOCH_ISA_KERNEL(lamb_direction);
EPOCH_ISA_KERNEL(squared_norm);
}  // namespace epoch::cpu
#endif
