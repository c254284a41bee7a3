// The Optimizer base (parameters, learning rate, step count, named state for checkpoints) and
// the SGD, Adam/AdamW and RMSprop updates, run by the fused update ops (epoch/ops/optim.h).
#include "epoch/optim/optimizer.h"

#include <cmath>
#include <limits>
#include <set>

#include "epoch/autograd/autograd.h"
#include "epoch/ops/elementwise.h"
#include "epoch/ops/optim.h"

namespace epoch::optim {
namespace {

void check_hyper(bool ok, const std::string& optimizer, const char* what, float value) {
  if (!ok) EPOCH_THROW(ConfigError, optimizer, ": ", what, " (got ", value, ")");
}

void check_nonnegative(const std::string& optimizer, const char* name, float value) {
  check_hyper(std::isfinite(value) && value >= 0.0f, optimizer,
              (std::string(name) + " must be finite and >= 0").c_str(), value);
}

void check_beta(const std::string& optimizer, const char* name, float value) {
  check_hyper(value >= 0.0f && value < 1.0f, optimizer,
              (std::string(name) + " must be in [0, 1)").c_str(), value);
}

// The checks Adam and LAMB share.
void check_adam_like(const std::string& optimizer, float beta1, float beta2, float eps,
                     float weight_decay) {
  check_beta(optimizer, "beta1", beta1);
  check_beta(optimizer, "beta2", beta2);
  check_nonnegative(optimizer, "eps", eps);
  check_nonnegative(optimizer, "weight_decay", weight_decay);
}

// The next value of a parameter's i32 step counter (which the caller stores after the update),
// and the bias corrections for it in double (PyTorch computes them in Python floats; the caller
// rounds what it passes on once): 1 - beta1^t and sqrt(1 - beta2^t).
struct NextStep {
  std::int32_t t;
  double bias1, sqrt_bias2;
};
NextStep next_step(std::int32_t current, const std::string& optimizer, float beta1, float beta2) {
  EPOCH_CHECK(current < std::numeric_limits<std::int32_t>::max(), optimizer,
              ": step counter overflow");
  const std::int32_t t = current + 1;
  return {t, 1.0 - std::pow(static_cast<double>(beta1), t),
          std::sqrt(1.0 - std::pow(static_cast<double>(beta2), t))};
}

Tensor scalar_i32(std::int64_t value) {
  const std::int32_t v = static_cast<std::int32_t>(value);
  return Tensor::from_ints({}, std::span<const std::int32_t>(&v, 1));
}

// A contiguous copy on the CPU (state() hands out copies that later steps do not touch).
Tensor host_copy(const Tensor& t) { return t.device().is_cpu() ? t.clone() : t.to(Device::cpu()); }

}  // namespace

// ---------------------------------------------------------------------------------------------
// Optimizer

Optimizer::Optimizer(std::string name, NamedTensors params, float lr)
    : name_(std::move(name)), params_(std::move(params)), lr_(lr) {
  check_nonnegative(name_, "lr", lr);
  std::set<std::string> names;
  std::set<std::pair<const Storage*, std::int64_t>> firsts;
  for (const auto& [pname, p] : params_) {
    EPOCH_CHECK(!pname.empty(), name_, ": a parameter has an empty name");
    EPOCH_CHECK(names.insert(pname).second, name_, ": parameter name '", pname, "' appears twice");
    EPOCH_CHECK(p.defined(), name_, ": parameter '", pname, "' is undefined");
    EPOCH_CHECK(p.dtype() == DType::f32, name_, ": parameter '", pname, "' must be f32, got ",
                dtype_name(p.dtype()));
    EPOCH_CHECK(p.requires_grad(), name_, ": parameter '", pname,
                "' does not require gradients (call set_requires_grad(true) first)");
    EPOCH_CHECK(!p.autograd_meta()->node, name_, ": parameter '", pname, "' is not a leaf tensor");
    EPOCH_CHECK(p.is_contiguous(), name_, ": parameter '", pname, "' ", shape_str(p.shape()),
                " must be contiguous");
    EPOCH_CHECK(firsts.insert({p.storage().get(), p.offset()}).second, name_, ": parameter '",
                pname, "' shares its bytes with another parameter");
  }
}

void Optimizer::set_lr(float lr) {
  EPOCH_CHECK(std::isfinite(lr) && lr >= 0.0f, name_,
              ": learning rate must be finite and >= 0, got ", lr);
  lr_ = lr;
}

void Optimizer::zero_grad() {
  for (auto& [pname, p] : params_) p.zero_grad();
}

std::size_t Optimizer::add_buffer(const std::string& kind, BufferValues values) {
  const bool counter = values == BufferValues::counter;
  std::vector<Tensor> per_param;
  per_param.reserve(params_.size());
  for (const auto& [pname, p] : params_)
    per_param.push_back(counter ? scalar_i32(0) : Tensor::zeros(p.shape(), DType::f32, p.device()));
  buffer_kinds_.push_back(kind);
  buffer_values_.push_back(values);
  buffers_.push_back(std::move(per_param));
  return buffers_.size() - 1;
}

Tensor& Optimizer::buffer(std::size_t kind_index, std::size_t i) { return buffers_[kind_index][i]; }

void Optimizer::step() {
  // Check every gradient first so a mismatch leaves all parameters untouched.
  for (const auto& [pname, p] : params_) {
    const Tensor g = p.grad();
    if (!g.defined()) continue;
    EPOCH_CHECK(g.dtype() == DType::f32 && g.shape() == p.shape() && g.device() == p.device(),
                name_, ": gradient of '", pname, "' is ", dtype_name(g.dtype()), " ",
                shape_str(g.shape()), " on ", g.device().str(), ", parameter is ",
                shape_str(p.shape()), " on ", p.device().str());
    EPOCH_CHECK(g.is_contiguous(), name_, ": gradient of '", pname, "' is not contiguous");
  }
  for (std::size_t i = 0; i < params_.size(); ++i) {
    Tensor& p = params_[i].second;
    const Tensor g = p.grad();
    if (g.defined()) update(i, p, g);
  }
  ++steps_;
}

NamedTensors Optimizer::state() const {
  NamedTensors out;
  out.emplace_back(name_ + ".step", scalar_i32(steps_));
  out.emplace_back(name_ + ".lr", Tensor::scalar(lr_));
  for (std::size_t k = 0; k < buffer_kinds_.size(); ++k)
    for (std::size_t i = 0; i < params_.size(); ++i)
      out.emplace_back(name_ + "." + buffer_kinds_[k] + "." + params_[i].first,
                       host_copy(buffers_[k][i]));
  return out;
}

void Optimizer::load_state(const NamedTensors& state) {
  auto find = [&](const std::string& key, const Shape& shape, DType dtype) -> const Tensor& {
    for (const auto& [name, t] : state) {
      if (name != key) continue;
      if (!t.defined() || t.shape() != shape || t.dtype() != dtype)
        EPOCH_THROW(ConfigError, name_, ": optimizer state entry '", key, "' is ",
                    t.defined() ? dtype_name(t.dtype()) : "undefined", " ",
                    t.defined() ? shape_str(t.shape()) : "", ", expected ", dtype_name(dtype), " ",
                    shape_str(shape));
      return t;
    }
    EPOCH_THROW(ConfigError, name_, ": optimizer state entry '", key, "' is missing");
  };
  // Validate everything before changing anything.
  const Tensor& step = find(name_ + ".step", {}, DType::i32);
  const Tensor& lr = find(name_ + ".lr", {}, DType::f32);
  std::vector<std::vector<const Tensor*>> sources(buffer_kinds_.size());
  for (std::size_t k = 0; k < buffer_kinds_.size(); ++k)
    for (std::size_t i = 0; i < params_.size(); ++i)
      sources[k].push_back(&find(name_ + "." + buffer_kinds_[k] + "." + params_[i].first,
                                 buffers_[k][i].shape(), buffers_[k][i].dtype()));
  const std::int32_t saved_steps = step.to(Device::cpu()).data<std::int32_t>()[0];
  const float saved_lr = lr.to(Device::cpu()).item();
  if (saved_steps < 0)
    EPOCH_THROW(ConfigError, name_, ": optimizer state '", name_, ".step' is negative (",
                saved_steps, ")");
  if (!std::isfinite(saved_lr) || saved_lr < 0.0f)
    EPOCH_THROW(ConfigError, name_, ": optimizer state '", name_, ".lr' is invalid (", saved_lr,
                ")");
  for (std::size_t k = 0; k < buffer_kinds_.size(); ++k) {
    for (std::size_t i = 0; i < params_.size(); ++i) {
      const Tensor& t = *sources[k][i];
      const std::string key = name_ + "." + buffer_kinds_[k] + "." + params_[i].first;
      if (const std::int64_t bad = count_non_finite(t); bad > 0)
        EPOCH_THROW(ConfigError, "optimizer state '", key, "' holds ", bad,
                    " NaN or infinite values");
      const bool negative =
          buffer_values_[k] == BufferValues::counter
              ? t.to(Device::cpu()).data<std::int32_t>()[0] < 0
              : buffer_values_[k] == BufferValues::non_negative && count_negative(t) > 0;
      if (negative)
        EPOCH_THROW(ConfigError, "optimizer state '", key,
                    "' holds negative values, which it never can");
    }
  }
  for (std::size_t k = 0; k < buffer_kinds_.size(); ++k)
    for (std::size_t i = 0; i < params_.size(); ++i) buffers_[k][i].copy_from(*sources[k][i]);
  steps_ = saved_steps;
  lr_ = saved_lr;
}

// ---------------------------------------------------------------------------------------------
// SGD

Sgd::Sgd(NamedTensors params, float lr, float momentum, bool nesterov, float weight_decay)
    : Optimizer("sgd", std::move(params), lr),
      momentum_(momentum),
      weight_decay_(weight_decay),
      nesterov_(nesterov) {
  check_nonnegative(name(), "momentum", momentum);
  check_nonnegative(name(), "weight_decay", weight_decay);
  check_hyper(!nesterov || momentum > 0.0f, name(), "nesterov needs momentum > 0", momentum);
  if (momentum_ > 0.0f) momentum_buffer_ = add_buffer("momentum_buffer");
}

void Sgd::update(std::size_t i, Tensor& param, const Tensor& grad) {
  Tensor buf = momentum_ > 0.0f ? buffer(momentum_buffer_, i) : Tensor();
  ops::sgd_step_(param, grad, buf,
                 {.lr = lr_for(i),
                  .momentum = momentum_,
                  .weight_decay = decay_for(i, weight_decay_),
                  .nesterov = nesterov_});
}

// ---------------------------------------------------------------------------------------------
// Adam / AdamW

Adam::Adam(NamedTensors params, float lr, float beta1, float beta2, float eps, float weight_decay,
           bool decoupled, bool keras_epsilon)
    : Optimizer(decoupled ? "adamw" : "adam", std::move(params), lr),
      beta1_(beta1),
      beta2_(beta2),
      eps_(eps),
      weight_decay_(weight_decay),
      decoupled_(decoupled),
      keras_epsilon_(keras_epsilon) {
  check_adam_like(name(), beta1, beta2, eps, weight_decay);
  exp_avg_ = add_buffer("exp_avg");
  exp_avg_sq_ = add_buffer("exp_avg_sq", BufferValues::non_negative);
  param_step_ = add_buffer("param_step", BufferValues::counter);
}

void Adam::update(std::size_t i, Tensor& param, const Tensor& grad) {
  std::int32_t& t = buffer(param_step_, i).data<std::int32_t>()[0];
  const NextStep next = next_step(t, name(), beta1_, beta2_);
  // The step counter stays on the host; only the rounded scalars go to the kernel.
  ops::adam_step_(param, grad, buffer(exp_avg_, i), buffer(exp_avg_sq_, i),
                  {.lr = lr_for(i),
                   .beta1 = beta1_,
                   .beta2 = beta2_,
                   // Keras: m_hat / (sqrt(v) / sqrt_bias2 + eps / sqrt_bias2)
                   .eps = keras_epsilon_ ? static_cast<float>(eps_ / next.sqrt_bias2) : eps_,
                   .weight_decay = decay_for(i, weight_decay_),
                   .decoupled = decoupled_,
                   .step_size = static_cast<float>(lr_for(i) / next.bias1),
                   .sqrt_bias2 = static_cast<float>(next.sqrt_bias2)});
  t = next.t;
}

// ---------------------------------------------------------------------------------------------
// RMSprop

Rmsprop::Rmsprop(NamedTensors params, float lr, float alpha, float eps, float weight_decay,
                 float momentum, bool centered, bool keras_epsilon)
    : Optimizer("rmsprop", std::move(params), lr),
      alpha_(alpha),
      eps_(eps),
      weight_decay_(weight_decay),
      momentum_(momentum),
      centered_(centered),
      keras_epsilon_(keras_epsilon) {
  check_hyper(alpha >= 0.0f && alpha <= 1.0f, name(), "alpha must be in [0, 1]", alpha);
  check_nonnegative(name(), "eps", eps);
  check_nonnegative(name(), "weight_decay", weight_decay);
  check_nonnegative(name(), "momentum", momentum);
  square_avg_ = add_buffer("square_avg", BufferValues::non_negative);
  if (momentum_ > 0.0f) momentum_buffer_ = add_buffer("momentum_buffer");
  if (centered_) grad_avg_ = add_buffer("grad_avg");
}

void Rmsprop::update(std::size_t i, Tensor& param, const Tensor& grad) {
  Tensor ga = centered_ ? buffer(grad_avg_, i) : Tensor();
  Tensor buf = momentum_ > 0.0f ? buffer(momentum_buffer_, i) : Tensor();
  ops::rmsprop_step_(param, grad, buffer(square_avg_, i), ga, buf,
                     {.lr = lr_for(i),
                      .alpha = alpha_,
                      .eps = eps_,
                      .weight_decay = decay_for(i, weight_decay_),
                      .momentum = momentum_,
                      .eps_inside_sqrt = keras_epsilon_});
}

// ---------------------------------------------------------------------------------------------
// LARS and LAMB

bool excluded_from_layer_adaptation(const Tensor& param) { return param.ndim() <= 1; }

namespace {
// a / b, or 1 when either is 0 (a fresh or zero layer, or a zero gradient).
double trust_ratio(double a, double b) { return a > 0.0 && b > 0.0 ? a / b : 1.0; }
}  // namespace

Lars::Lars(NamedTensors params, float lr, float momentum, float weight_decay, float eta)
    : Optimizer("lars", std::move(params), lr),
      momentum_(momentum),
      weight_decay_(weight_decay),
      eta_(eta) {
  check_nonnegative(name(), "momentum", momentum);
  check_nonnegative(name(), "weight_decay", weight_decay);
  check_hyper(std::isfinite(eta) && eta > 0.0f, name(), "trust coefficient (eta) must be > 0", eta);
  momentum_buffer_ = add_buffer("momentum_buffer");
}

void Lars::update(std::size_t i, Tensor& param, const Tensor& grad) {
  const bool adapted = !excluded_from_layer_adaptation(param);
  const float wd = adapted ? decay_for(i, weight_decay_) : 0.0f;
  double local = 1.0;
  if (adapted) {
    const double w_norm = std::sqrt(ops::squared_norm(param));
    const double g_norm = std::sqrt(ops::squared_norm(grad));
    local = w_norm > 0.0 && g_norm > 0.0 ? eta_ * w_norm / (g_norm + wd * w_norm) : 1.0;
  }
  ops::lars_step_(
      param, grad, buffer(momentum_buffer_, i),
      {.scaled_lr = static_cast<float>(lr_for(i) * local), .momentum = momentum_, .weight_decay = wd});
}

Lamb::Lamb(NamedTensors params, float lr, float beta1, float beta2, float eps, float weight_decay)
    : Optimizer("lamb", std::move(params), lr),
      beta1_(beta1),
      beta2_(beta2),
      eps_(eps),
      weight_decay_(weight_decay) {
  check_adam_like(name(), beta1, beta2, eps, weight_decay);
  exp_avg_ = add_buffer("exp_avg");
  exp_avg_sq_ = add_buffer("exp_avg_sq", BufferValues::non_negative);
  param_step_ = add_buffer("param_step", BufferValues::counter);
}

void Lamb::update(std::size_t i, Tensor& param, const Tensor& grad) {
  std::int32_t& t = buffer(param_step_, i).data<std::int32_t>()[0];
  const NextStep next = next_step(t, name(), beta1_, beta2_);
  const bool adapted = !excluded_from_layer_adaptation(param);
  const float wd = adapted ? decay_for(i, weight_decay_) : 0.0f;
  Tensor direction = Tensor::empty(param.shape(), DType::f32, param.device());
  ops::lamb_direction_(param, grad, buffer(exp_avg_, i), buffer(exp_avg_sq_, i), direction,
                       {.beta1 = beta1_,
                        .beta2 = beta2_,
                        .eps = eps_,
                        .weight_decay = wd,
                        .bias1 = static_cast<float>(next.bias1),
                        .sqrt_bias2 = static_cast<float>(next.sqrt_bias2)});
  const double ratio = adapted ? trust_ratio(std::sqrt(ops::squared_norm(param)),
                                             std::sqrt(ops::squared_norm(direction)))
                               : 1.0;
  ops::axpy_(param, direction, static_cast<float>(-lr_for(i) * ratio));
  t = next.t;
}

// ---------------------------------------------------------------------------------------------
// Configuration

namespace {
constexpr const char* kValidNames = "sgd, adam, adamw, rmsprop, lars, lamb";
}

const char* optimizer_name(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::sgd:
      return "sgd";
    case OptimizerKind::adam:
      return "adam";
    case OptimizerKind::adamw:
      return "adamw";
    case OptimizerKind::rmsprop:
      return "rmsprop";
    case OptimizerKind::lars:
      return "lars";
    case OptimizerKind::lamb:
      return "lamb";
  }
  return "?";
}

OptimizerKind parse_optimizer(const std::string& name) {
  for (OptimizerKind k : {OptimizerKind::sgd, OptimizerKind::adam, OptimizerKind::adamw,
                          OptimizerKind::rmsprop, OptimizerKind::lars, OptimizerKind::lamb})
    if (name == optimizer_name(k)) return k;
  EPOCH_THROW(ConfigError, "unknown optimizer '", name, "' (valid: ", kValidNames, ")");
}

OptimizerConfig optimizer_defaults(OptimizerKind kind) {
  OptimizerConfig c;
  c.kind = kind;
  c.lr = kind == OptimizerKind::sgd || kind == OptimizerKind::rmsprop ? 0.01f : 0.001f;
  if (kind == OptimizerKind::adamw) c.weight_decay = 0.01f;
  if (kind == OptimizerKind::lars) {
    c.lr = 0.1f;
    c.momentum = 0.9f;
    c.weight_decay = 5e-4f;
  }
  if (kind == OptimizerKind::lamb) {
    c.eps = 1e-6f;
    c.weight_decay = 0.01f;
  }
  return c;
}

OptimizerConfig optimizer_defaults(const std::string& name) {
  return optimizer_defaults(parse_optimizer(name));
}

std::unique_ptr<Optimizer> make_optimizer(const OptimizerConfig& c, NamedTensors params) {
  std::unique_ptr<Optimizer> o;
  switch (c.kind) {
    case OptimizerKind::sgd:
      o = std::make_unique<Sgd>(std::move(params), c.lr, c.momentum, c.nesterov, c.weight_decay);
      break;
    case OptimizerKind::adam:
    case OptimizerKind::adamw:
      o = std::make_unique<Adam>(std::move(params), c.lr, c.beta1, c.beta2, c.eps, c.weight_decay,
                                 c.kind == OptimizerKind::adamw, c.keras_epsilon);
      break;
    case OptimizerKind::rmsprop:
      o = std::make_unique<Rmsprop>(std::move(params), c.lr, c.alpha, c.eps, c.weight_decay,
                                    c.momentum, c.centered, c.keras_epsilon);
      break;
    case OptimizerKind::lars:
      o = std::make_unique<Lars>(std::move(params), c.lr, c.momentum, c.weight_decay,
                                 c.trust_coefficient);
      break;
    case OptimizerKind::lamb:
      o = std::make_unique<Lamb>(std::move(params), c.lr, c.beta1, c.beta2, c.eps, c.weight_decay);
      break;
  }
  EPOCH_CHECK(o != nullptr, "make_optimizer: unknown optimizer kind");
  if (!c.decay_only.empty()) o->set_weight_decay_only(c.decay_only);
  if (!c.lr_mult.empty()) {
    std::vector<std::pair<std::string, float>> mults;
    for (const std::string& entry : c.lr_mult) {
      const std::size_t eq = entry.rfind('=');
      float m = -1.0f;
      std::size_t used = 0;
      try {
        if (eq != std::string::npos && eq > 0) m = std::stof(entry.substr(eq + 1), &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (eq == std::string::npos || eq == 0 || used != entry.size() - eq - 1)
        EPOCH_THROW(ConfigError, "optimizer.lr_mult \"", entry,
                    "\": expected parameter-prefix=multiplier (conv1.bias=2)");
      mults.emplace_back(entry.substr(0, eq), m);
    }
    o->set_lr_multipliers(mults);
  }
  return o;
}

void Optimizer::set_lr_multipliers(const std::vector<std::pair<std::string, float>>& multipliers) {
  std::vector<float> mult(params_.size(), 1.0f);
  for (const auto& [prefix, m] : multipliers) {
    if (!(std::isfinite(m) && m >= 0.0f))
      EPOCH_THROW(ConfigError, name_, ": learning-rate multiplier ", m, " of \"", prefix,
                  "\" must be finite and >= 0");
    bool matched = false;
    for (std::size_t i = 0; i < params_.size(); ++i)
      if (params_[i].first.rfind(prefix, 0) == 0) {
        mult[i] = m;
        matched = true;
      }
    if (!matched)
      EPOCH_THROW(ConfigError, name_, ": learning-rate multiplier prefix \"", prefix,
                  "\" names no parameter");
  }
  lr_mult_ = std::move(mult);
}

void Optimizer::set_weight_decay_only(const std::vector<std::string>& prefixes) {
  std::vector<char> no_decay(params_.size(), 1);
  for (const std::string& prefix : prefixes) {
    bool matched = false;
    for (std::size_t i = 0; i < params_.size(); ++i)
      if (params_[i].first.rfind(prefix, 0) == 0) {
        no_decay[i] = 0;
        matched = true;
      }
    if (!matched)
      EPOCH_THROW(ConfigError, name_, ": weight decay prefix \"", prefix, "\" names no parameter");
  }
  no_decay_ = std::move(no_decay);
}

}  // namespace epoch::optim
