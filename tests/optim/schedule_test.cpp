// Learning-rate schedules: values at key steps (start, end of warm-up, step boundaries, end of
// the cosine), monotonic decay, and configuration errors.
#include "epoch/optim/schedule.h"

#include <gtest/gtest.h>

#include "epoch/tensor/error.h"

namespace epoch::optim {
namespace {

ScheduleConfig config(const std::string& name, float base_lr) {
  ScheduleConfig c;
  c.kind = parse_schedule(name);
  c.base_lr = base_lr;
  return c;
}

TEST(Schedule, ConstantWithAndWithoutWarmup) {
  ScheduleConfig c = config("constant", 0.5f);
  auto s = make_schedule(c);
  EXPECT_FLOAT_EQ(s->lr_at(0), 0.5f);
  EXPECT_FLOAT_EQ(s->lr_at(123456), 0.5f);
  c.warmup_steps = 10;
  s = make_schedule(c);
  EXPECT_FLOAT_EQ(s->lr_at(0), 0.0f);
  EXPECT_FLOAT_EQ(s->lr_at(5), 0.25f);
  EXPECT_FLOAT_EQ(s->lr_at(9), 0.45f);
  EXPECT_FLOAT_EQ(s->lr_at(10), 0.5f);
  EXPECT_FLOAT_EQ(s->lr_at(11), 0.5f);
}

TEST(Schedule, WarmupFromAStartFactor) {
  ScheduleConfig c = config("constant", 1.0f);
  c.warmup_steps = 4;
  c.warmup_start_factor = 0.1f;
  auto s = make_schedule(c);
  EXPECT_FLOAT_EQ(s->lr_at(0), 0.1f);
  EXPECT_FLOAT_EQ(s->lr_at(2), 0.55f);
  EXPECT_FLOAT_EQ(s->lr_at(4), 1.0f);
}

TEST(Schedule, StepDecaysAtBoundaries) {
  ScheduleConfig c = config("step", 1.0f);
  c.step_size = 10;
  c.gamma = 0.5f;
  auto s = make_schedule(c);
  EXPECT_FLOAT_EQ(s->lr_at(0), 1.0f);
  EXPECT_FLOAT_EQ(s->lr_at(9), 1.0f);
  EXPECT_FLOAT_EQ(s->lr_at(10), 0.5f);
  EXPECT_FLOAT_EQ(s->lr_at(19), 0.5f);
  EXPECT_FLOAT_EQ(s->lr_at(20), 0.25f);
  EXPECT_FLOAT_EQ(s->lr_at(100), 1.0f / 1024.0f);
  // With a warm-up the boundaries move by warmup_steps.
  c.warmup_steps = 5;
  s = make_schedule(c);
  EXPECT_FLOAT_EQ(s->lr_at(0), 0.0f);
  EXPECT_FLOAT_EQ(s->lr_at(5), 1.0f);
  EXPECT_FLOAT_EQ(s->lr_at(14), 1.0f);
  EXPECT_FLOAT_EQ(s->lr_at(15), 0.5f);
}

TEST(Schedule, CosineReachesMinAtTheEnd) {
  ScheduleConfig c = config("cosine", 1.0f);
  c.warmup_steps = 10;
  c.total_steps = 100;
  c.min_lr = 0.1f;
  auto s = make_schedule(c);
  EXPECT_FLOAT_EQ(s->lr_at(0), 0.0f);
  EXPECT_FLOAT_EQ(s->lr_at(5), 0.5f);
  EXPECT_FLOAT_EQ(s->lr_at(10), 1.0f);
  EXPECT_FLOAT_EQ(s->lr_at(55), 0.55f);  // half way: the mean of base and min
  // One step before the end: 0.1 + 0.9 * (1 - cos(pi / 90)) / 2.
  EXPECT_NEAR(s->lr_at(99), 0.1002741, 1e-6);
  EXPECT_FLOAT_EQ(s->lr_at(100), 0.1f);
  EXPECT_FLOAT_EQ(s->lr_at(5000), 0.1f);
  for (std::int64_t t = 11; t <= 100; ++t) EXPECT_LE(s->lr_at(t), s->lr_at(t - 1)) << t;
}

TEST(Schedule, CosineWithoutWarmupStartsAtBase) {
  ScheduleConfig c = config("cosine", 0.2f);
  c.total_steps = 4;
  auto s = make_schedule(c);
  EXPECT_FLOAT_EQ(s->lr_at(0), 0.2f);
  EXPECT_FLOAT_EQ(s->lr_at(2), 0.1f);
  EXPECT_FLOAT_EQ(s->lr_at(4), 0.0f);
}

TEST(Schedule, PolyDecaysWithItsPowerToMinAtTheEnd) {
  ScheduleConfig c = config("poly", 1.0f);
  c.warmup_steps = 10;
  c.total_steps = 110;  // 100 steps of decay
  auto s = make_schedule(c);
  EXPECT_FLOAT_EQ(s->lr_at(5), 0.5f);    // the warm-up
  EXPECT_FLOAT_EQ(s->lr_at(10), 1.0f);   // (1 - 0)^2
  EXPECT_FLOAT_EQ(s->lr_at(60), 0.25f);  // (1 - 1/2)^2
  EXPECT_FLOAT_EQ(s->lr_at(85), 0.0625f);
  EXPECT_FLOAT_EQ(s->lr_at(110), 0.0f);
  EXPECT_FLOAT_EQ(s->lr_at(500), 0.0f);
  c.power = 1.0f;
  c.min_lr = 0.2f;
  s = make_schedule(c);
  EXPECT_FLOAT_EQ(s->lr_at(60), 0.6f);  // 0.2 + 0.8 * 1/2
  EXPECT_FLOAT_EQ(s->lr_at(110), 0.2f);
  c.power = 0.0f;
  EXPECT_THROW(make_schedule(c), ConfigError);
}

TEST(Schedule, LinearScalingRule) {
  EXPECT_EQ(parse_lr_scaling("linear"), LrScaling::linear);
  EXPECT_STREQ(lr_scaling_name(LrScaling::none), "none");
  EXPECT_THROW(parse_lr_scaling("cubic"), ConfigError);
  EXPECT_FLOAT_EQ(scaled_lr(0.1f, LrScaling::none, 8192, 256), 0.1f);
  EXPECT_FLOAT_EQ(scaled_lr(0.1f, LrScaling::linear, 8192, 256), 3.2f);
  EXPECT_FLOAT_EQ(scaled_lr(0.1f, LrScaling::linear, 128, 256), 0.05f);
  EXPECT_THROW(scaled_lr(0.1f, LrScaling::linear, 128, 0), ConfigError);
  EXPECT_EQ(parse_lr_scaling("sqrt"), LrScaling::sqrt);
  EXPECT_FLOAT_EQ(scaled_lr(0.1f, LrScaling::sqrt, 8192, 128), 0.8f);  // sqrt(64) = 8
  EXPECT_FLOAT_EQ(scaled_lr(0.1f, LrScaling::sqrt, 64, 256), 0.05f);
  EXPECT_THROW(scaled_lr(0.1f, LrScaling::sqrt, 0, 256), ConfigError);
}

TEST(Schedule, NegativeStepThrows) {
  auto s = make_schedule(config("constant", 0.1f));
  EXPECT_THROW(s->lr_at(-1), InvalidArgument);
}

TEST(Schedule, BadConfigThrows) {
  try {
    make_schedule(config("linear", 0.1f));
    ADD_FAILURE() << "no ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("constant, step, cosine"), std::string::npos);
  }
  auto bad = [](ScheduleConfig c) { make_schedule(c); };
  ScheduleConfig c = config("step", 0.1f);
  EXPECT_THROW(bad(c), ConfigError);  // step_size 0
  c.step_size = 5;
  c.gamma = 0.0f;
  EXPECT_THROW(bad(c), ConfigError);
  c = config("cosine", 0.1f);
  EXPECT_THROW(bad(c), ConfigError);  // total_steps 0
  c.total_steps = 10;
  c.warmup_steps = 10;
  EXPECT_THROW(bad(c), ConfigError);  // no room after the warm-up
  c.warmup_steps = 0;
  c.min_lr = 0.2f;
  EXPECT_THROW(bad(c), ConfigError);  // min above base
  c = config("constant", -0.1f);
  EXPECT_THROW(bad(c), ConfigError);
  c = config("constant", 0.1f);
  c.warmup_steps = -1;
  EXPECT_THROW(bad(c), ConfigError);
  c.warmup_steps = 5;
  c.warmup_start_factor = 1.5f;
  EXPECT_THROW(bad(c), ConfigError);
}

}  // namespace
}  // namespace epoch::optim
