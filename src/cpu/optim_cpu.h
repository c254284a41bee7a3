// Fused CPU optimizer updates: one pass over a parameter, its gradient and its state buffers.
// Raw pointers and sizes; every element is independent, so results do not depend on threads.
#pragma once

#include <cstdint>
#include "kernels/isa_kernel.h"

namespace epoch::cpu {

/// SGD (dampening 0): d = g + wd*p; if momentum > 0: buf = momentum*buf + d,
/// d = nesterov ? d + momentum*buf : buf; p -= lr*d. buf may be null when momentum == 0.
extern const kernels::IsaKernel<void(float* p,        // (n) parameter, updated in place
              const float* g,  // (n) gradient
              float* buf,      // (n) momentum buffer, updated in place; null if momentum == 0
              std::int64_t n, float lr, float momentum, float weight_decay, bool nesterov)> sgd_step;

/// Adam / AdamW. decoupled: p *= 1 - lr*wd first; else d = g + wd*p. m = beta1*m + (1-beta1)*d,
/// v = beta2*v + (1-beta2)*d^2, p -= step_size * m / (sqrt(v) / sqrt_bias2 + eps), where
/// step_size = lr / (1 - beta1^t) and sqrt_bias2 = sqrt(1 - beta2^t) for the parameter's step t.
extern const kernels::IsaKernel<void(float* p,        // (n) parameter, updated in place
               const float* g,  // (n) gradient
               float* m,        // (n) first moment, updated in place
               float* v,        // (n) second moment, updated in place
               std::int64_t n, float lr, float beta1, float beta2, float eps, float weight_decay,
               bool decoupled, float step_size, float sqrt_bias2)> adam_step;

/// RMSprop. d = g + wd*p; sq = alpha*sq + (1-alpha)*d^2; centered: ga = alpha*ga + (1-alpha)*d,
/// avg = sqrt(sq - ga^2) + eps, else avg = sqrt(sq) + eps (eps_inside_sqrt: Keras's sqrt(sq +
/// eps), sqrt(sq - ga^2 + eps)); momentum > 0: buf = momentum*buf +
/// d/avg, p -= lr*buf; else p -= lr*d/avg.
extern const kernels::IsaKernel<void(float* p,        // (n) parameter, updated in place
                  const float* g,  // (n) gradient
                  float* sq,       // (n) running mean of squared gradients, updated in place
                  float* ga,       // (n) running mean of gradients; null unless centered
                  float* buf,      // (n) momentum buffer; null when momentum == 0
                  std::int64_t n, float lr, float alpha, float eps, float weight_decay,
                  float momentum, bool eps_inside_sqrt)> rmsprop_step;

/// LARS as You, Gitman and Ginsburg (and Intel-Caffe) write it: v = momentum*v + scaled_lr*(g +
/// wd*p); p -= v, with scaled_lr = lr * the layer's trust ratio, computed by the caller.
extern const kernels::IsaKernel<void(float* p,        // (n) parameter, updated in place
               const float* g,  // (n) gradient
               float* v,        // (n) momentum buffer, updated in place
               std::int64_t n, float scaled_lr, float momentum, float weight_decay)> lars_step;

/// The first half of a LAMB update: m = beta1*m + (1-beta1)*g, v = beta2*v + (1-beta2)*g^2,
/// r = (m / bias1) / (sqrt(v) / sqrt_bias2 + eps) + wd*p, where bias1 = 1 - beta1^t and
/// sqrt_bias2 = sqrt(1 - beta2^t). p itself is not changed (the caller scales r by the trust
/// ratio ||p|| / ||r|| and subtracts it).
extern const kernels::IsaKernel<void(const float* p,  // (n) parameter
                    const float* g,  // (n) gradient
                    float* m,        // (n) first moment, updated in place
                    float* v,        // (n) second moment, updated in place
                    float* r,        // (n) the update direction, overwritten
                    std::int64_t n, float beta1, float beta2, float eps, float weight_decay,
                    float bias1, float sqrt_bias2)> lamb_direction;

/// sum of x[i]^2 in double, over fixed blocks of 4096 elements added in order: the same bits
/// for any thread count.
extern const kernels::IsaKernel<double(const float* x, std::int64_t n)> squared_norm;

}  // namespace epoch::cpu
