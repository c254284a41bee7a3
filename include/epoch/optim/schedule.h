// Learning-rate schedules: constant, step decay, cosine decay and polynomial decay, each
// optionally preceded by a linear warm-up. A schedule is a pure function of the step, so resuming
// needs only the step.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace epoch::optim {

/// Everything make_schedule needs. Steps count from 0 (the first update uses lr_at(0)).
///
/// Warm-up: for step s < warmup_steps, lr = base_lr * (f + (1 - f) * s / warmup_steps) with
/// f = warmup_start_factor, so step 0 gets base_lr * f and step warmup_steps gets the decay
/// schedule's first value. The decay schedule then runs on s' = s - warmup_steps:
/// - constant: base_lr.
/// - step:     base_lr * gamma^floor(s' / step_size).
/// - cosine:   min_lr + (base_lr - min_lr) * (1 + cos(pi * s' / (total_steps - warmup_steps))) / 2,
///             reaching min_lr at s = total_steps and staying there. total_steps includes the
///             warm-up.
/// - poly:     min_lr + (base_lr - min_lr) * (1 - s' / (total_steps - warmup_steps))^power, the
///             same span (power 2: the large-batch recipe of You, Gitman and Ginsburg).
/// The schedules, by the names the command line and checkpoints use.
enum class ScheduleKind { constant, step, cosine, poly };
const char* schedule_name(ScheduleKind kind);
/// The kind named `name` (ConfigError listing the valid names for another).
ScheduleKind parse_schedule(const std::string& name);

/// How the learning rate given follows the global batch: `none` keeps it; `linear` multiplies it
/// by global batch / base batch (Goyal et al.'s linear scaling rule); `sqrt` by its square root
/// (the rule You et al. use with LAMB).
enum class LrScaling { none, linear, sqrt };
const char* lr_scaling_name(LrScaling scaling);
/// The rule named `name` ("none", "linear" or "sqrt"; ConfigError otherwise).
LrScaling parse_lr_scaling(const std::string& name);
/// lr under the rule; requires global_batch, base_batch >= 1 unless `none` (ConfigError).
float scaled_lr(float lr, LrScaling scaling, std::int64_t global_batch, std::int64_t base_batch);

struct ScheduleConfig {
  ScheduleKind kind = ScheduleKind::constant;
  float base_lr = 0.01f;
  std::int64_t warmup_steps = 0;
  float warmup_start_factor = 0.0f;  // in [0, 1]
  std::int64_t step_size = 0;        // step: > 0
  float gamma = 0.1f;                // step: > 0
  std::int64_t total_steps = 0;      // cosine, poly: > warmup_steps
  float min_lr = 0.0f;               // cosine, poly: in [0, base_lr]
  float power = 2.0f;                // poly: > 0
  // Resolved by the trainer into base_lr and warmup_steps (make_schedule ignores them):
  double warmup_epochs = 0.0;  // > 0: the warm-up is this many epochs' steps, rounded
  LrScaling lr_scaling = LrScaling::none;
  std::int64_t base_batch = 256;  // linear scaling: the batch the given lr is meant for
};

/// A learning rate as a function of the step.
class LrSchedule {
 public:
  virtual ~LrSchedule() = default;
  /// The learning rate for step `step` (>= 0; InvalidArgument otherwise).
  virtual float lr_at(std::int64_t step) const = 0;
};

/// Builds the configured schedule (warm-up included). Throws ConfigError for an out-of-range
/// field, naming it.
std::unique_ptr<LrSchedule> make_schedule(const ScheduleConfig& config);

}  // namespace epoch::optim
