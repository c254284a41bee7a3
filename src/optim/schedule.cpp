// Learning-rate schedules (see schedule.h): a shared linear warm-up in front of a constant, step,
// cosine or polynomial decay. Computed in double and rounded once, so values do not drift over long
// runs.
#include "epoch/optim/schedule.h"

#include <cmath>
#include <numbers>

#include "epoch/tensor/error.h"

namespace epoch::optim {
namespace {

constexpr const char* kValidNames = "constant, step, cosine, poly";

// Linear warm-up over the first warmup_steps steps, then decay(step - warmup_steps).
class WarmupThenDecay : public LrSchedule {
 public:
  explicit WarmupThenDecay(const ScheduleConfig& c) : c_(c) {}

  float lr_at(std::int64_t step) const override {
    EPOCH_CHECK(step >= 0, "lr schedule '", schedule_name(c_.kind), "': step must be >= 0, got ",
                step);
    if (step < c_.warmup_steps) {
      const double f = c_.warmup_start_factor;
      const double t = static_cast<double>(step) / static_cast<double>(c_.warmup_steps);
      return static_cast<float>(c_.base_lr * (f + (1.0 - f) * t));
    }
    return static_cast<float>(decay(step - c_.warmup_steps));
  }

 protected:
  /// The learning rate `s` steps after the warm-up.
  virtual double decay(std::int64_t s) const = 0;
  const ScheduleConfig c_;
};

class ConstantLr : public WarmupThenDecay {
 public:
  using WarmupThenDecay::WarmupThenDecay;

 protected:
  double decay(std::int64_t) const override { return c_.base_lr; }
};

class StepLr : public WarmupThenDecay {
 public:
  using WarmupThenDecay::WarmupThenDecay;

 protected:
  double decay(std::int64_t s) const override {
    return c_.base_lr *
           std::pow(static_cast<double>(c_.gamma), static_cast<double>(s / c_.step_size));
  }
};

// min_lr + (base_lr - min_lr) * shape(t) over the steps after the warm-up, t from 0 to 1;
// min_lr from total_steps on.
class DecayToMinLr : public WarmupThenDecay {
 public:
  using WarmupThenDecay::WarmupThenDecay;

 protected:
  double decay(std::int64_t s) const override {
    const std::int64_t span = c_.total_steps - c_.warmup_steps;
    if (s >= span) return c_.min_lr;
    const double t = static_cast<double>(s) / static_cast<double>(span);
    return c_.min_lr + (static_cast<double>(c_.base_lr) - c_.min_lr) * shape(t);
  }
  /// From 1 at t = 0 down to 0 at t = 1.
  virtual double shape(double t) const = 0;
};

class CosineLr : public DecayToMinLr {
 public:
  using DecayToMinLr::DecayToMinLr;

 protected:
  double shape(double t) const override { return 0.5 * (1.0 + std::cos(std::numbers::pi * t)); }
};

class PolyLr : public DecayToMinLr {
 public:
  using DecayToMinLr::DecayToMinLr;

 protected:
  double shape(double t) const override { return std::pow(1.0 - t, static_cast<double>(c_.power)); }
};

template <typename T>
void require(bool ok, const ScheduleConfig& c, const char* field, const char* rule, T value) {
  if (!ok)
    EPOCH_THROW(ConfigError, "lr schedule '", schedule_name(c.kind), "': ", field, " ", rule,
                " (got ", value, ")");
}

}  // namespace

const char* schedule_name(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::constant:
      return "constant";
    case ScheduleKind::step:
      return "step";
    case ScheduleKind::cosine:
      return "cosine";
    case ScheduleKind::poly:
      return "poly";
  }
  return "?";
}

ScheduleKind parse_schedule(const std::string& name) {
  for (ScheduleKind k :
       {ScheduleKind::constant, ScheduleKind::step, ScheduleKind::cosine, ScheduleKind::poly})
    if (name == schedule_name(k)) return k;
  EPOCH_THROW(ConfigError, "unknown lr schedule '", name, "' (valid: ", kValidNames, ")");
}

std::unique_ptr<LrSchedule> make_schedule(const ScheduleConfig& c) {
  require(std::isfinite(c.base_lr) && c.base_lr >= 0.0f, c, "base_lr", "must be finite and >= 0",
          c.base_lr);
  require(c.warmup_steps >= 0, c, "warmup_steps", "must be >= 0", c.warmup_steps);
  require(c.warmup_start_factor >= 0.0f && c.warmup_start_factor <= 1.0f, c, "warmup_start_factor",
          "must be in [0, 1]", c.warmup_start_factor);
  if (c.kind == ScheduleKind::constant) return std::make_unique<ConstantLr>(c);
  if (c.kind == ScheduleKind::step) {
    require(c.step_size > 0, c, "step_size", "must be > 0", c.step_size);
    require(std::isfinite(c.gamma) && c.gamma > 0.0f, c, "gamma", "must be finite and > 0",
            c.gamma);
    return std::make_unique<StepLr>(c);
  }
  require(c.total_steps > c.warmup_steps, c, "total_steps", "must exceed warmup_steps",
          c.total_steps);
  require(c.min_lr >= 0.0f && c.min_lr <= c.base_lr, c, "min_lr", "must be in [0, base_lr]",
          c.min_lr);
  if (c.kind == ScheduleKind::poly) {
    require(std::isfinite(c.power) && c.power > 0.0f, c, "power", "must be finite and > 0",
            c.power);
    return std::make_unique<PolyLr>(c);
  }
  return std::make_unique<CosineLr>(c);
}

const char* lr_scaling_name(LrScaling scaling) {
  switch (scaling) {
    case LrScaling::linear:
      return "linear";
    case LrScaling::sqrt:
      return "sqrt";
    case LrScaling::none:
      break;
  }
  return "none";
}

LrScaling parse_lr_scaling(const std::string& name) {
  for (LrScaling s : {LrScaling::none, LrScaling::linear, LrScaling::sqrt})
    if (name == lr_scaling_name(s)) return s;
  EPOCH_THROW(ConfigError, "unknown lr scaling '", name, "' (valid: none, linear, sqrt)");
}

float scaled_lr(float lr, LrScaling scaling, std::int64_t global_batch, std::int64_t base_batch) {
  if (scaling == LrScaling::none) return lr;
  if (global_batch < 1 || base_batch < 1)
    EPOCH_THROW(ConfigError, lr_scaling_name(scaling), " lr scaling: global batch ", global_batch,
                " and base batch ", base_batch, " must be >= 1");
  const double ratio = static_cast<double>(global_batch) / static_cast<double>(base_batch);
  return static_cast<float>(static_cast<double>(lr) *
                            (scaling == LrScaling::sqrt ? std::sqrt(ratio) : ratio));
}

}  // namespace epoch::optim
