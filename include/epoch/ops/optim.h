// The optimizers' fused updates as ops: one pass over a flat parameter, its gradient and its
// state buffers (all contiguous f32 of one shape, on one device), in place, dispatched by
// device like every other op. The optimizers (optim/) keep the step counters and bias
// corrections on the host and pass the rounded scalars.
#pragma once

#include "epoch/tensor/tensor.h"

namespace epoch::ops {

/// Hyperparameters of one SGD update.
struct SgdHyper {
  float lr = 0.0f;
  float momentum = 0.0f;  // 0: no momentum buffer
  float weight_decay = 0.0f;
  bool nesterov = false;
};
/// SGD (dampening 0): d = g + wd*p; if momentum > 0: buf = momentum*buf + d,
/// d = nesterov ? d + momentum*buf : buf; p -= lr*d.
/// requires: momentum_buffer defined when momentum > 0 (it is not read otherwise).
void sgd_step_(Tensor& param,            // (n) updated in place
               const Tensor& grad,       // (n)
               Tensor& momentum_buffer,  // (n) updated in place
               const SgdHyper& h);

/// Hyperparameters of one Adam / AdamW update of a parameter at its step t.
struct AdamHyper {
  float lr = 0.0f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 0.0f;
  bool decoupled = false;   // AdamW: p *= 1 - lr*wd first; Adam: d = g + wd*p
  float step_size = 0.0f;   // lr / (1 - beta1^t)
  float sqrt_bias2 = 1.0f;  // sqrt(1 - beta2^t)
};
/// m = beta1*m + (1-beta1)*d, v = beta2*v + (1-beta2)*d^2,
/// p -= step_size * m / (sqrt(v) / sqrt_bias2 + eps).
void adam_step_(Tensor& param,       // (n) updated in place
                const Tensor& grad,  // (n)
                Tensor& exp_avg,     // (n) first moment, updated in place
                Tensor& exp_avg_sq,  // (n) second moment, updated in place
                const AdamHyper& h);

/// Hyperparameters of one RMSprop update.
struct RmspropHyper {
  float lr = 0.0f, alpha = 0.99f, eps = 1e-8f, weight_decay = 0.0f;
  float momentum = 0.0f;  // 0: no momentum buffer
  bool eps_inside_sqrt = false;  // Keras: sqrt(sq + eps) for sqrt(sq) + eps
};
/// d = g + wd*p; sq = alpha*sq + (1-alpha)*d^2; centered (grad_avg defined):
/// ga = alpha*ga + (1-alpha)*d, avg = sqrt(sq - ga^2) + eps, else avg = sqrt(sq) + eps
/// (eps_inside_sqrt: sqrt(sq - ga^2 + eps), sqrt(sq + eps));
/// momentum > 0: buf = momentum*buf + d/avg, p -= lr*buf; else p -= lr*d/avg.
/// requires: momentum_buffer defined when momentum > 0 (it is not read otherwise).
void rmsprop_step_(Tensor& param,            // (n) updated in place
                   const Tensor& grad,       // (n)
                   Tensor& square_avg,       // (n) updated in place
                   Tensor& grad_avg,         // (n) updated in place; undefined: not centered
                   Tensor& momentum_buffer,  // (n) updated in place
                   const RmspropHyper& h);

/// Hyperparameters of one LARS update of one layer.
struct LarsHyper {
  float scaled_lr = 0.0f;  // lr * the layer's trust ratio
  float momentum = 0.9f, weight_decay = 0.0f;
};
/// LARS (Intel-Caffe's form): v = momentum*v + scaled_lr*(g + wd*p); p -= v.
void lars_step_(Tensor& param,            // (n) updated in place
                const Tensor& grad,       // (n)
                Tensor& momentum_buffer,  // (n) updated in place
                const LarsHyper& h);

/// Hyperparameters of the first half of one LAMB update of a parameter at its step t.
struct LambHyper {
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-6f, weight_decay = 0.0f;
  float bias1 = 1.0f;       // 1 - beta1^t
  float sqrt_bias2 = 1.0f;  // sqrt(1 - beta2^t)
};
/// m = beta1*m + (1-beta1)*g, v = beta2*v + (1-beta2)*g^2,
/// direction = (m / bias1) / (sqrt(v) / sqrt_bias2 + eps) + wd*p; param is not changed.
void lamb_direction_(const Tensor& param,  // (n)
                     const Tensor& grad,   // (n)
                     Tensor& exp_avg,      // (n) first moment, updated in place
                     Tensor& exp_avg_sq,   // (n) second moment, updated in place
                     Tensor& direction,    // (n) overwritten
                     const LambHyper& h);

/// sum of t's squared elements, accumulated in double. On the CPU over fixed blocks in order
/// (the same bits for any thread count); on CUDA as sum(t * t) in f32.
double squared_norm(const Tensor& t);

}  // namespace epoch::ops
