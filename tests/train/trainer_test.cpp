// Training end to end on generated data: the model learns, runs are bitwise reproducible,
// resuming equals not stopping, strict determinism ignores the thread count, divergence and
// an occupied run directory are clear errors.
#include "epoch/train/trainer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>

#include "epoch/tensor/safetensors.h"
#include "testing/testing.h"

namespace epoch::train {
namespace {

TrainConfig small_config(const std::string& out) {
  TrainConfig c;
  c.model = "fmnist-cnn";
  c.data = "synthetic";
  c.synthetic_count = 768;
  c.epochs = 2;
  c.batch_size = 32;
  c.out_dir = out;
  c.quiet = true;
  c.threads = 2;
  c.seed = 3;
  c.log_every = 4;
  return c;
}

std::vector<nlohmann::json> read_metrics(const std::string& run_dir) {
  std::ifstream in(run_dir + "/metrics.jsonl");
  std::vector<nlohmann::json> out;
  std::string line;
  while (std::getline(in, line)) out.push_back(nlohmann::json::parse(line));
  return out;
}

void expect_same_checkpoint_tensors(const std::string& a, const std::string& b) {
  const SafetensorsFile fa = load_safetensors(a), fb = load_safetensors(b);
  ASSERT_EQ(fa.tensors.size(), fb.tensors.size());
  for (std::size_t i = 0; i < fa.tensors.size(); ++i) {
    EXPECT_EQ(fa.tensors[i].name, fb.tensors[i].name);
    EXPECT_EQ(fa.tensors[i].tensor.to_vector(), fb.tensors[i].tensor.to_vector())
        << fa.tensors[i].name;
  }
}

TEST(Trainer, LearnsAndWritesTheRunDirectory) {
  testing::TempDir dir;
  const TrainResult r = train(small_config(dir / "run"), stdout);
  EXPECT_EQ(r.epochs, 2);
  EXPECT_EQ(r.steps, 2 * 24);
  EXPECT_GT(r.test_accuracy, 0.6) << "10 classes: chance is 0.1";
  const auto metrics = read_metrics(r.run_dir);
  std::vector<double> step_losses, epoch_losses;
  for (const auto& m : metrics) {
    if (m["kind"] == "step") step_losses.push_back(m["loss"].get<double>());
    if (m["kind"] == "epoch") epoch_losses.push_back(m["train_loss"].get<double>());
  }
  ASSERT_EQ(epoch_losses.size(), 2u);
  ASSERT_GE(step_losses.size(), 10u);
  EXPECT_LT(step_losses.back(), 0.5 * step_losses.front());
  EXPECT_TRUE(std::ifstream(r.run_dir + "/config.json").good());
  EXPECT_TRUE(std::ifstream(r.run_dir + "/checkpoints/epoch-1.safetensors").good());
  const SafetensorsFile ckpt = load_safetensors(r.checkpoint);
  EXPECT_EQ(ckpt.metadata.at("model"), "fmnist-cnn");
  EXPECT_EQ(ckpt.metadata.at("epoch"), "2");
  EXPECT_NE(ckpt.metadata.at("preprocessing").find("rescale"), std::string::npos);
  EXPECT_NE(ckpt.find("model.0.weight"), nullptr);
}

TEST(Trainer, SameSeedAndThreadsIsBitwiseIdentical) {
  testing::TempDir dir;
  const TrainResult a = train(small_config(dir / "a"), stdout);
  const TrainResult b = train(small_config(dir / "b"), stdout);
  expect_same_checkpoint_tensors(a.checkpoint, b.checkpoint);
  auto losses = [](const std::string& run) {
    std::vector<double> v;
    for (const auto& m : read_metrics(run))
      if (m["kind"] == "step") v.push_back(m["loss"].get<double>());
    return v;
  };
  EXPECT_EQ(losses(a.run_dir), losses(b.run_dir));
}

TEST(Trainer, ResumingEqualsNotStopping) {
  testing::TempDir dir;
  const TrainResult straight = train(small_config(dir / "straight"), stdout);
  TrainConfig first = small_config(dir / "resumed");
  first.stop_after_epochs = 1;  // as if killed after the first epoch's checkpoint
  EXPECT_EQ(train(first, stdout).epochs, 1);
  TrainConfig second = small_config(dir / "resumed");
  second.resume = true;
  const TrainResult resumed = train(second, stdout);
  EXPECT_EQ(resumed.steps, straight.steps);
  expect_same_checkpoint_tensors(straight.checkpoint, resumed.checkpoint);
}

TEST(Trainer, StrictDeterminismIgnoresTheThreadCount) {
  testing::TempDir dir;
  TrainConfig one = small_config(dir / "one");
  one.determinism = Determinism::strict;
  one.epochs = 1;
  one.synthetic_count = 256;
  one.threads = 1;
  TrainConfig two = one;
  two.out_dir = dir / "two";
  two.threads = 2;
  expect_same_checkpoint_tensors(train(one, stdout).checkpoint, train(two, stdout).checkpoint);
}

TEST(Trainer, DivergenceIsAClearError) {
  testing::TempDir dir;
  TrainConfig c = small_config(dir / "run");
  c.optimizer = optim::optimizer_defaults("sgd");
  c.optimizer.lr = 1e12f;
  c.schedule.name = "constant";
  try {
    train(c, stdout);
    FAIL() << "diverging run did not throw";
  } catch (const NumericalError& e) {
    EXPECT_NE(std::string(e.what()).find("loss became"), std::string::npos) << e.what();
  }
}

TEST(Trainer, RefusesToOverwriteARunAndChecksTheConfig) {
  testing::TempDir dir;
  TrainConfig c = small_config(dir / "run");
  c.epochs = 1;
  c.synthetic_count = 64;
  train(c, stdout);
  EXPECT_THROW(train(c, stdout), ConfigError);
  TrainConfig bad = small_config(dir / "other");
  bad.batch_size = 0;
  EXPECT_THROW(train(bad, stdout), ConfigError);
  TrainConfig missing = small_config(dir / "missing");
  missing.data = dir / "no-such-folder";
  EXPECT_THROW(train(missing, stdout), IoError);
  TrainConfig resume_nothing = small_config(dir / "nothing");
  resume_nothing.resume = true;
  EXPECT_THROW(train(resume_nothing, stdout), IoError);
}

}  // namespace
}  // namespace epoch::train

namespace epoch::train {
namespace {

// A golden run: strict determinism (reference kernels, fixed reduction orders) from a fixed
// seed must reproduce these step losses; a change that alters the arithmetic of training
// shows up here. Regenerate with EPOCH_PRINT_GOLDEN=1 after an intended change.
TEST(Trainer, GoldenRunReproducesItsLosses) {
  testing::TempDir dir;
  TrainConfig c = small_config(dir / "golden");
  c.determinism = Determinism::strict;
  c.synthetic_count = 192;
  c.epochs = 1;
  c.threads = 1;
  c.log_every = 1;
  train(c, stdout);
  std::vector<double> losses;
  for (const auto& m : read_metrics(c.out_dir))
    if (m["kind"] == "step") losses.push_back(m["loss"].get<double>());
  if (std::getenv("EPOCH_PRINT_GOLDEN") != nullptr)
    for (double l : losses) std::printf("%.9g,\n", l);
  const std::vector<double> golden = {
      2.303895, 2.2784965, 2.29792047, 2.21979761, 2.19345498, 2.16048002,
  };
  ASSERT_EQ(losses.size(), golden.size());
  for (std::size_t i = 0; i < golden.size(); ++i)
    EXPECT_NEAR(losses[i], golden[i], 1e-5 * std::max(1.0, std::fabs(golden[i]))) << "step " << i;
}

}  // namespace
}  // namespace epoch::train
