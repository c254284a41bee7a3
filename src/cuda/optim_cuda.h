// CUDA twins of the fused optimizer updates in cpu/optim_cpu.h (same names, arguments and
// operation order). Pointers are device pointers; the scalars (step sizes, bias corrections)
// are computed on the host by the optimizer, which keeps its step counters there.
#pragma once

#include <cstdint>

namespace epoch::cuda {

/// SGD (dampening 0): d = g + wd*p; if momentum > 0: buf = momentum*buf + d,
/// d = nesterov ? d + momentum*buf : buf; p -= lr*d. buf may be null when momentum == 0.
void sgd_step(float* p,        // (n) parameter, updated in place
              const float* g,  // (n) gradient
              float* buf,      // (n) momentum buffer, updated in place; null if momentum == 0
              std::int64_t n, float lr, float momentum, float weight_decay, bool nesterov);

/// Adam / AdamW, as cpu::adam_step: step_size = lr / (1 - beta1^t) and
/// sqrt_bias2 = sqrt(1 - beta2^t) for the parameter's step t.
void adam_step(float* p,        // (n) parameter, updated in place
               const float* g,  // (n) gradient
               float* m,        // (n) first moment, updated in place
               float* v,        // (n) second moment, updated in place
               std::int64_t n, float lr, float beta1, float beta2, float eps, float weight_decay,
               bool decoupled, float step_size, float sqrt_bias2);

/// RMSprop, as cpu::rmsprop_step.
void rmsprop_step(float* p,        // (n) parameter, updated in place
                  const float* g,  // (n) gradient
                  float* sq,       // (n) running mean of squared gradients, updated in place
                  float* ga,       // (n) running mean of gradients; null unless centered
                  float* buf,      // (n) momentum buffer; null when momentum == 0
                  std::int64_t n, float lr, float alpha, float eps, float weight_decay,
                  float momentum, bool eps_inside_sqrt);

/// LARS, as cpu::lars_step: v = momentum*v + scaled_lr*(g + wd*p); p -= v.
void lars_step(float* p, const float* g, float* v, std::int64_t n, float scaled_lr, float momentum,
               float weight_decay);

/// The first half of LAMB, as cpu::lamb_direction (m, v updated; r overwritten).
void lamb_direction(const float* p, const float* g, float* m, float* v, float* r, std::int64_t n,
                    float beta1, float beta2, float eps, float weight_decay, float bias1,
                    float sqrt_bias2);

}  // namespace epoch::cuda
