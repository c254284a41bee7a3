// Optimizers: SGD (momentum, Nesterov), Adam, AdamW and RMSprop with PyTorch's update rules, and
// the large-batch LARS and LAMB, applied in place to named parameters from their accumulated
// gradients. Every optimizer
// exposes its state as named tensors so a checkpoint can resume it bit-identically.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "epoch/tensor/tensor.h"

namespace epoch::optim {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

/// Base of every optimizer. Holds the parameters (contiguous f32 leaves whose .grad() buffers
/// backward fills), the learning rate, the step count and the per-parameter state tensors.
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  /// Applies one update at lr() to every parameter whose grad is defined (others are skipped
  /// and their state is left untouched), then counts the step.
  /// Throws BackendUnavailable for a parameter on a device the optimizer has no kernel for.
  virtual void step();
  /// Sets every defined gradient buffer to zero (undefined ones stay undefined).
  void zero_grad();

  float lr() const { return lr_; }
  /// requires: lr >= 0 and finite (InvalidArgument otherwise).
  void set_lr(float lr);
  /// Number of step() calls so far (restored by load_state).
  std::int64_t steps() const { return steps_; }
  /// "sgd", "adam", "adamw" or "rmsprop": the prefix of every state entry.
  const std::string& name() const { return name_; }
  const NamedTensors& params() const { return params_; }
  /// Restricts weight decay to the parameters whose names start with one of `prefixes`
  /// (ConfigError for a prefix that names no parameter).
  void set_weight_decay_only(const std::vector<std::string>& prefixes);
  /// Scales the learning rate of the parameters whose names start with a prefix (Caffe's
  /// lr_mult; 0 freezes them); ConfigError for a prefix that names no parameter or a
  /// multiplier below 0 or not finite.
  void set_lr_multipliers(const std::vector<std::pair<std::string, float>>& multipliers);

  /// The state to checkpoint, with stable names: "<name>.step" (i32 {}), "<name>.lr" (f32 {}),
  /// then "<name>.<buffer>.<param name>" for every buffer (e.g. "adam.exp_avg.fc.w"). The
  /// tensors are copies: later steps do not change them.
  virtual NamedTensors state() const;
  /// Restores exactly what state() returned (entries are looked up by name; extra entries are
  /// ignored). Throws ConfigError naming the first entry that is missing or has the wrong
  /// shape or dtype; nothing is changed in that case.
  virtual void load_state(const NamedTensors& state);

 protected:
  /// requires: unique non-empty parameter names; defined, contiguous f32 leaf parameters that
  /// require gradients (so backward's gradients reach the handles held here), no two sharing
  /// the same first element. Throws InvalidArgument otherwise, ConfigError for lr.
  Optimizer(std::string name, NamedTensors params, float lr);

  /// What a state buffer holds: any finite values, finite values >= 0 (running averages of
  /// squares), or a scalar i32 counter >= 0. load_state refuses anything else.
  enum class BufferValues { finite, non_negative, counter };
  /// Registers a per-parameter state buffer "<name>.<kind>.<param>" of zeros (shape and
  /// device of the parameter, or a scalar i32 for a counter). Returns its index for buffer().
  std::size_t add_buffer(const std::string& kind, BufferValues values = BufferValues::finite);
  /// The weight decay parameter i gets: `wd`, or 0 when set_weight_decay_only excludes it.
  float decay_for(std::size_t i, float wd) const {
    return no_decay_.empty() || !no_decay_[i] ? wd : 0.0f;
  }
  /// Parameter i's learning rate: lr(), times its multiplier where set_lr_multipliers gave one.
  float lr_for(std::size_t i) const { return lr_mult_.empty() ? lr_ : lr_ * lr_mult_[i]; }
  /// The buffer `kind_index` (from add_buffer) of parameter i.
  Tensor& buffer(std::size_t kind_index, std::size_t i);

  /// Updates parameter i (whose gradient `grad` is defined, same shape and device,
  /// contiguous). Called by step() for every parameter with a gradient.
  virtual void update(std::size_t i, Tensor& param, const Tensor& grad) = 0;

 private:
  std::string name_;
  NamedTensors params_;
  float lr_;
  std::int64_t steps_ = 0;
  std::vector<std::string> buffer_kinds_;
  std::vector<BufferValues> buffer_values_;
  std::vector<std::vector<Tensor>> buffers_;  // [kind][param]
  std::vector<char> no_decay_;                // [param]: 1 = no weight decay; empty: all decay
  std::vector<float> lr_mult_;                // [param]: the learning rate's multiplier; empty: 1
};

/// torch.optim.SGD with dampening 0: d = g + wd * p; with momentum, buf = momentum * buf + d
/// and d = nesterov ? d + momentum * buf : buf; then p -= lr * d. State: "sgd.momentum_buffer".
class Sgd : public Optimizer {
 public:
  /// requires: lr, momentum, weight_decay >= 0; nesterov needs momentum > 0 (ConfigError).
  Sgd(NamedTensors params, float lr, float momentum = 0.0f, bool nesterov = false,
      float weight_decay = 0.0f);

 protected:
  void update(std::size_t i, Tensor& param, const Tensor& grad) override;

 private:
  float momentum_, weight_decay_;
  bool nesterov_;
  std::size_t momentum_buffer_ = 0;
};

/// torch.optim.Adam (decoupled = false: weight decay added to the gradient) or AdamW
/// (decoupled = true: p *= 1 - lr * wd before the Adam update). Bias corrections per parameter
/// step; eps is added after the square root (keras_epsilon: to sqrt(v) before the bias correction,
/// as Keras does: PyTorch's form with eps / sqrt(1 - beta2^t)). State: "<name>.exp_avg",
/// "<name>.exp_avg_sq", "<name>.param_step" (how many updates this parameter has had).
class Adam : public Optimizer {
 public:
  /// requires: lr, eps, weight_decay >= 0; 0 <= beta1, beta2 < 1 (ConfigError).
  Adam(NamedTensors params, float lr, float beta1 = 0.9f, float beta2 = 0.999f, float eps = 1e-8f,
       float weight_decay = 0.0f, bool decoupled = false, bool keras_epsilon = false);

 protected:
  void update(std::size_t i, Tensor& param, const Tensor& grad) override;

 private:
  float beta1_, beta2_, eps_, weight_decay_;
  bool decoupled_, keras_epsilon_;
  std::size_t exp_avg_ = 0, exp_avg_sq_ = 0, param_step_ = 0;
};

/// torch.optim.RMSprop: d = g + wd * p; sq = alpha * sq + (1 - alpha) * d^2; with centered,
/// ga = alpha * ga + (1 - alpha) * d and avg = sqrt(sq - ga^2) + eps, else sqrt(sq) + eps;
/// with momentum, buf = momentum * buf + d / avg and p -= lr * buf, else p -= lr * d / avg.
/// keras_epsilon: eps inside the square root, sqrt(sq + eps) (sqrt(sq - ga^2 + eps)), as Keras.
/// State: "rmsprop.square_avg" (+ "rmsprop.momentum_buffer", "rmsprop.grad_avg" when used).
class Rmsprop : public Optimizer {
 public:
  /// requires: lr, eps, momentum, weight_decay >= 0; 0 <= alpha <= 1 (ConfigError).
  Rmsprop(NamedTensors params, float lr, float alpha = 0.99f, float eps = 1e-8f,
          float weight_decay = 0.0f, float momentum = 0.0f, bool centered = false,
          bool keras_epsilon = false);

 protected:
  void update(std::size_t i, Tensor& param, const Tensor& grad) override;

 private:
  float alpha_, eps_, weight_decay_, momentum_;
  bool centered_, keras_epsilon_;
  std::size_t square_avg_ = 0, momentum_buffer_ = 0, grad_avg_ = 0;
};

/// True for the parameters LARS and LAMB leave out of the layer-wise trust ratio and of weight
/// decay: those with at most one dimension (biases, batch-norm scales and shifts).
bool excluded_from_layer_adaptation(const Tensor& param);

/// LARS (You, Gitman and Ginsburg 2017, as Intel-Caffe runs it), per parameter tensor:
/// local_lr = eta * ||w|| / (||g|| + wd * ||w||) (1 when either norm is 0),
/// v = momentum * v + lr * local_lr * (g + wd * w), w -= v. Parameters with at most one
/// dimension take local_lr = 1 and no weight decay. State: "lars.momentum_buffer".
class Lars : public Optimizer {
 public:
  /// requires: lr, momentum, weight_decay >= 0; eta > 0 (ConfigError).
  Lars(NamedTensors params, float lr, float momentum = 0.9f, float weight_decay = 0.0f,
       float eta = 0.001f);

 protected:
  void update(std::size_t i, Tensor& param, const Tensor& grad) override;

 private:
  float momentum_, weight_decay_, eta_;
  std::size_t momentum_buffer_ = 0;
};

/// LAMB (You et al. 2019, "Large Batch Optimization for Deep Learning"), per parameter tensor
/// at its step t: m = beta1 m + (1 - beta1) g, v = beta2 v + (1 - beta2) g^2,
/// r = (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps) + wd * w,
/// w -= lr * (||w|| / ||r||) * r (ratio 1 when either norm is 0). Parameters with at most one
/// dimension take ratio 1 and no weight decay. State: "lamb.exp_avg", "lamb.exp_avg_sq",
/// "lamb.param_step".
class Lamb : public Optimizer {
 public:
  /// requires: lr, eps, weight_decay >= 0; 0 <= beta1, beta2 < 1 (ConfigError).
  Lamb(NamedTensors params, float lr, float beta1 = 0.9f, float beta2 = 0.999f, float eps = 1e-6f,
       float weight_decay = 0.0f);

 protected:
  void update(std::size_t i, Tensor& param, const Tensor& grad) override;

 private:
  float beta1_, beta2_, eps_, weight_decay_;
  std::size_t exp_avg_ = 0, exp_avg_sq_ = 0, param_step_ = 0;
};

/// The optimizers, by the names the command line and checkpoints use.
enum class OptimizerKind { sgd, adam, adamw, rmsprop, lars, lamb };
const char* optimizer_name(OptimizerKind kind);
/// The kind named `name` (ConfigError listing the valid names for another).
OptimizerKind parse_optimizer(const std::string& name);

/// Everything make_optimizer needs. Fields an optimizer does not use are ignored (momentum and
/// nesterov for Adam, betas for SGD, ...). Start from optimizer_defaults(name).
struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::sgd;
  float lr = 0.01f;
  float momentum = 0.0f;  // sgd, rmsprop, lars
  bool nesterov = false;  // sgd
  float weight_decay = 0.0f;
  /// Parameter-name prefixes that weight decay applies to (e.g. "4." for one layer); empty:
  /// every parameter.
  std::vector<std::string> decay_only;
  /// "prefix=multiplier" entries: those parameters' learning rate times the multiplier (Caffe's
  /// lr_mult); empty: every parameter at lr.
  std::vector<std::string> lr_mult;
  float beta1 = 0.9f;  // adam, adamw
  float beta2 = 0.999f;
  float eps = 1e-8f;                 // adam, adamw, rmsprop
  /// adam, adamw, rmsprop: eps where Keras adds it (Adam: to sqrt(v) before the bias correction,
  /// Keras's "epsilon hat"; RMSprop: inside the square root) rather than where PyTorch does.
  bool keras_epsilon = false;
  float alpha = 0.99f;               // rmsprop
  bool centered = false;             // rmsprop
  float trust_coefficient = 0.001f;  // lars: eta
};

/// PyTorch's defaults for an optimizer: lr 0.01 (sgd, rmsprop) or 0.001 (adam, adamw), weight
/// decay 0.01 for adamw and 0 otherwise. LARS: lr 0.1, momentum 0.9, weight decay 5e-4, eta
/// 0.001 (Intel-Caffe's); LAMB: lr 0.001, eps 1e-6, weight decay 0.01 (the paper's).
OptimizerConfig optimizer_defaults(OptimizerKind kind);
/// optimizer_defaults(parse_optimizer(name)).
OptimizerConfig optimizer_defaults(const std::string& name);

/// Builds the configured optimizer over params. Throws ConfigError for an out-of-range
/// hyperparameter.
std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& config, NamedTensors params);

}  // namespace epoch::optim
