// Training video models end to end on small generated sequence folders: the run writes its
// directory with the baseline beside every loss, resuming equals not stopping (carried state
// included), the windows follow the model (in order with state, shuffled without), and bad
// settings are one clear error.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "epoch/data/synth_video.h"
#include "epoch/tensor/safetensors.h"
#include "epoch/train/clips.h"
#include "epoch/train/trainer.h"
#include "testing/testing.h"
#include "train/run_testing.h"

namespace epoch::train {
namespace {

/// 2 training and 1 validation sequences of `frames` frames at 32x24 (stretched to the model's
/// frame size when read).
std::string small_video(const testing::TempDir& dir, std::int64_t frames) {
  return testing::write_small_video(dir / "video", 2, frames, 4);
}

TrainConfig video_config(const std::string& data, const std::string& out) {
  TrainConfig c;
  c.run.model = "prednet-study";
  c.data.source = data;
  c.run.epochs = 2;
  c.run.batch_size = 1;
  c.run.tbptt = 2;
  c.run.out_dir = out;
  c.run.quiet = true;
  c.execution.threads = 2;
  c.run.seed = 5;
  c.run.log_every = 1;
  c.data.limit_train = 2;  // the first sequence's two windows: carried state, few updates
  return c;
}

using testing::expect_same_checkpoint_tensors;
using testing::read_metrics;

TEST(ClipTrainer, WritesTheRunWithTheBaselineBesideEveryLoss) {
  testing::TempDir dir;
  const std::string data = small_video(dir, 4);
  const TrainResult r = train(video_config(data, dir / "run"), stdout);
  // 2 windows of 2 frames an epoch (--limit-train 2), one update per window.
  EXPECT_EQ(r.steps, 4);
  EXPECT_EQ(r.frames_per_sample, 2);
  EXPECT_GT(r.frames_per_s, 0.0);
  EXPECT_EQ(r.recent_steps, 4);
  EXPECT_GT(r.recent_baseline_mse, 0.0);
  EXPECT_GT(r.test_baseline_mse, 0.0);
  EXPECT_GT(r.dataset_baseline_mse, 0.0);
  const nlohmann::json j = r.to_json();
  EXPECT_DOUBLE_EQ(j["last_losses"]["margin"].get<double>(), r.recent_baseline_mse - r.recent_loss);
  const std::vector<nlohmann::json> records = read_metrics(r.run_dir);
  int steps = 0, epochs = 0;
  double baseline_sum = 0.0;
  for (const nlohmann::json& rec : records) {
    if (rec["kind"] == "step") {
      ++steps;
      baseline_sum += rec["baseline_mse"].get<double>();
      EXPECT_TRUE(std::isfinite(rec["loss"].get<double>()));
    } else {
      ++epochs;
      EXPECT_GT(rec["frames_per_s"].get<double>(), 0.0);
      EXPECT_GT(rec["test_baseline_mse"].get<double>(), 0.0);
    }
  }
  EXPECT_EQ(steps, 4);
  EXPECT_EQ(epochs, 2);
  // The reported baseline is the mean of the steps' (every step is among the last 50).
  EXPECT_NEAR(r.recent_baseline_mse, baseline_sum / 4.0, 1e-12);
  EXPECT_TRUE(std::filesystem::exists(r.run_dir + "/checkpoints/best.safetensors"));
  EXPECT_TRUE(std::filesystem::exists(r.run_dir + "/checkpoints/epoch-2.safetensors"));
}

TEST(ClipTrainer, ResumingEqualsNotStoppingWithCarriedState) {
  testing::TempDir dir;
  const std::string data = small_video(dir, 4);
  const TrainResult straight = train(video_config(data, dir / "straight"), stdout);
  TrainConfig first = video_config(data, dir / "resumed");
  first.run.stop_after_epochs = 1;
  EXPECT_EQ(train(first, stdout).epochs, 1);
  TrainConfig second = video_config(data, dir / "resumed");
  second.run.resume = true;
  const TrainResult resumed = train(second, stdout);
  EXPECT_EQ(resumed.steps, straight.steps);
  expect_same_checkpoint_tensors(straight.checkpoint, resumed.checkpoint);
  // The last losses span the stop: the same figure as the run that did not stop.
  EXPECT_EQ(resumed.recent_steps, straight.recent_steps);
  EXPECT_DOUBLE_EQ(resumed.recent_loss, straight.recent_loss);
}

TEST(ClipTrainer, AModelWithoutCarriedStateTrainsOnShuffledBatches) {
  testing::TempDir dir;
  const std::string data = small_video(dir, 4);
  TrainConfig c = video_config(data, dir / "run");
  c.run.model = "prednet";
  c.run.batch_size = 2;
  c.run.epochs = 1;
  c.data.limit_train = 0;
  const TrainResult r = train(c, stdout);
  EXPECT_EQ(r.steps, 2);  // 4 windows of 2 frames, 2 a batch
  EXPECT_EQ(r.global_batch_size, 2);
  EXPECT_TRUE(std::isfinite(r.test_loss));
}

TEST(ClipTrainer, BadSettingsAreOneClearErrorBeforeARunFolder) {
  testing::TempDir dir;
  const std::string data = small_video(dir, 4);
  TrainConfig no_data = video_config("", dir / "a");
  EXPECT_THROW(train(no_data, stdout), ConfigError);
  EXPECT_FALSE(std::filesystem::exists(dir / "a"));
  TrainConfig batched = video_config(data, dir / "b");
  batched.run.batch_size = 2;  // carried state: one sequence at a time
  try {
    train(batched, stdout);
    FAIL() << "trained a carried-state model on batches";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--batch-size 1"), std::string::npos) << e.what();
  }
  TrainConfig one_frame = video_config(data, dir / "c");
  one_frame.run.tbptt = 1;
  EXPECT_THROW(train(one_frame, stdout), ConfigError);
  TrainConfig too_long = video_config(data, dir / "d");
  for (const std::int64_t tbptt : {std::int64_t{5}, std::int64_t{1000000}}) {
    too_long.run.tbptt = tbptt;  // no sequence holds 5 frames; a million would not fit memory
    try {
      train(too_long, stdout);
      FAIL() << "trained on windows longer than every sequence";
    } catch (const ConfigError& e) {
      const std::string msg = e.what();
      EXPECT_EQ(msg.rfind("--tbptt " + std::to_string(tbptt) + ": longer than every training "
                          "sequence",
                          0),
                0u)
          << msg;
      EXPECT_NE(msg.find("(the longest has 4 frames): pass --tbptt 4 or less"), std::string::npos)
          << msg;
      EXPECT_EQ(msg.find("--batch-size"), std::string::npos) << msg;
    }
    EXPECT_FALSE(std::filesystem::exists(dir / "d"));  // refused before a run folder
  }
  TrainConfig no_validation = video_config(data + "/train", dir / "e");
  EXPECT_THROW(train(no_validation, stdout), ConfigError);
  no_validation.data.val_split = 0.5;  // one of the two sequences held out
  no_validation.run.epochs = 1;
  no_validation.data.limit_train = 0;
  EXPECT_EQ(train(no_validation, stdout).steps, 2);
}

}  // namespace
}  // namespace epoch::train
