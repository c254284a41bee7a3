// Fused CUDA optimizer updates (see optim_cuda.h): one grid-stride pass per parameter, each
// element independent, with the CPU loops' formulas in the same order. Options are uniform
// run-time flags rather than template parameters, which keeps nvcc's work small.
#include "cuda/check_cuda.h"
#include "cuda/optim_cuda.h"

namespace epoch::cuda {
namespace {

constexpr int kThreads = 256;

#define EPOCH_GRID_STRIDE(i, n)                                                   \
  for (long long i = blockIdx.x * static_cast<long long>(kThreads) + threadIdx.x; \
       i < (n); i += static_cast<long long>(kThreads) * gridDim.x)

__global__ void sgd_kernel(float* p, const float* g, float* buf, long long n, float lr,
                           float momentum, float wd, bool with_momentum, bool nesterov) {
  EPOCH_GRID_STRIDE(i, n) {
    float d = g[i] + wd * p[i];
    if (with_momentum) {
      const float b = momentum * buf[i] + d;
      buf[i] = b;
      d = nesterov ? d + momentum * b : b;
    }
    p[i] -= lr * d;
  }
}

__global__ void adam_kernel(float* p, const float* g, float* m, float* v, long long n,
                            float beta1, float beta2, float eps, float wd, bool decoupled,
                            float decay, float step_size, float sqrt_bias2) {
  EPOCH_GRID_STRIDE(i, n) {
    float x = p[i];
    float d = g[i];
    if (decoupled)
      x *= decay;
    else
      d += wd * x;
    const float mi = beta1 * m[i] + (1.0f - beta1) * d;
    const float vi = beta2 * v[i] + (1.0f - beta2) * (d * d);
    m[i] = mi;
    v[i] = vi;
    const float denom = sqrtf(vi) / sqrt_bias2 + eps;
    p[i] = x - step_size * (mi / denom);
  }
}

__global__ void rmsprop_kernel(float* p, const float* g, float* sq, float* ga, float* buf,
                               long long n, float lr, float alpha, float eps, float wd,
                               float momentum, float inner) {
  // eps inside the root (Keras: inner = eps, outer 0) or after it (inner 0)
  const float outer = eps - inner;
  // ga and buf are null exactly when their option is off: uniform branches.
  EPOCH_GRID_STRIDE(i, n) {
    const float d = g[i] + wd * p[i];
    const float s = alpha * sq[i] + (1.0f - alpha) * (d * d);
    sq[i] = s;
    float avg;
    if (ga != nullptr) {
      const float a = alpha * ga[i] + (1.0f - alpha) * d;
      ga[i] = a;
      avg = sqrtf(s - a * a + inner) + outer;
    } else {
      avg = sqrtf(s + inner) + outer;
    }
    if (buf != nullptr) {
      const float b = momentum * buf[i] + d / avg;
      buf[i] = b;
      p[i] -= lr * b;
    } else {
      p[i] -= lr * (d / avg);
    }
  }
}

__global__ void lars_kernel(float* p, const float* g, float* v, long long n, float scaled_lr,
                            float momentum, float wd) {
  EPOCH_GRID_STRIDE(i, n) {
    const float b = momentum * v[i] + scaled_lr * (g[i] + wd * p[i]);
    v[i] = b;
    p[i] -= b;
  }
}

__global__ void lamb_kernel(const float* p, const float* g, float* m, float* v, float* r,
                            long long n, float beta1, float beta2, float eps, float wd,
                            float bias1, float sqrt_bias2) {
  EPOCH_GRID_STRIDE(i, n) {
    const float d = g[i];
    const float mi = beta1 * m[i] + (1.0f - beta1) * d;
    const float vi = beta2 * v[i] + (1.0f - beta2) * (d * d);
    m[i] = mi;
    v[i] = vi;
    r[i] = (mi / bias1) / (sqrtf(vi) / sqrt_bias2 + eps) + wd * p[i];
  }
}

#undef EPOCH_GRID_STRIDE

}  // namespace

void sgd_step(float* p, const float* g, float* buf, std::int64_t n, float lr, float momentum,
              float weight_decay, bool nesterov) {
  if (n == 0) return;
  const bool with_momentum = momentum != 0.0f;
  sgd_kernel<<<blocks_for(n), kThreads>>>(p, g, buf, n, lr, momentum, weight_decay,
                                          with_momentum, with_momentum && nesterov);
  EPOCH_CUDA_CHECK_LAUNCH();
}

void adam_step(float* p, const float* g, float* m, float* v, std::int64_t n, float lr, float beta1,
               float beta2, float eps, float weight_decay, bool decoupled, float step_size,
               float sqrt_bias2) {
  if (n == 0) return;
  // The decoupled decay factor, rounded once on the host as the CPU loop does.
  const float decay = static_cast<float>(1.0 - static_cast<double>(lr) * weight_decay);
  adam_kernel<<<blocks_for(n), kThreads>>>(p, g, m, v, n, beta1, beta2, eps, weight_decay,
                                           decoupled, decay, step_size, sqrt_bias2);
  EPOCH_CUDA_CHECK_LAUNCH();
}

void rmsprop_step(float* p, const float* g, float* sq, float* ga, float* buf, std::int64_t n,
                  float lr, float alpha, float eps, float weight_decay, float momentum,
                  bool eps_inside_sqrt) {
  if (n == 0) return;
  rmsprop_kernel<<<blocks_for(n), kThreads>>>(p, g, sq, ga, momentum != 0.0f ? buf : nullptr, n,
                                              lr, alpha, eps, weight_decay, momentum,
                                              eps_inside_sqrt ? eps : 0.0f);
  EPOCH_CUDA_CHECK_LAUNCH();
}

void lars_step(float* p, const float* g, float* v, std::int64_t n, float scaled_lr,
               float momentum, float weight_decay) {
  if (n == 0) return;
  lars_kernel<<<blocks_for(n), kThreads>>>(p, g, v, n, scaled_lr, momentum, weight_decay);
  EPOCH_CUDA_CHECK_LAUNCH();
}

void lamb_direction(const float* p, const float* g, float* m, float* v, float* r,
                    std::int64_t n, float beta1, float beta2, float eps, float weight_decay,
                    float bias1, float sqrt_bias2) {
  if (n == 0) return;
  lamb_kernel<<<blocks_for(n), kThreads>>>(p, g, m, v, r, n, beta1, beta2, eps, weight_decay,
                                           bias1, sqrt_bias2);
  EPOCH_CUDA_CHECK_LAUNCH();
}

}  // namespace epoch::cuda
