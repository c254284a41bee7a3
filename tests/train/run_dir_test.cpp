// Run directories: one process at a time (a held lock refuses a second, a dead holder's lock
// is taken over), the state a folder is in, temporary files a killed writer left, metrics past
// a resumed checkpoint, and checkpoint retention.
#include "epoch/train/run_dir.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "epoch/tensor/error.h"
#include "testing/testing.h"

namespace epoch::train {
namespace {
namespace fs = std::filesystem;

TEST(RunDir, ASecondHolderIsRefusedAndAStaleLockIsTakenOver) {
  testing::TempDir dir;
  const std::string run = dir / "run";
  {
    const RunDirLock first(run);
    try {
      const RunDirLock second(run);
      FAIL() << "a second lock on one run directory was granted";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("in use by another epoch process (pid "),
                std::string::npos)
          << e.what();
    }
  }
  // The lock file of a process that is gone (here: a pid written by hand, no flock held).
  std::ofstream(run + "/.lock") << "999999";
  EXPECT_NO_THROW(RunDirLock again(run));
}

TEST(RunDir, StateSeesRunsWithoutCheckpoints) {
  testing::TempDir dir;
  const std::string run = dir / "run";
  EXPECT_EQ(run_state(run), RunState::empty);
  fs::create_directories(run);
  std::ofstream(run + "/metrics.jsonl") << "{}\n";
  EXPECT_EQ(run_state(run), RunState::started);
  fs::create_directories(run + "/checkpoints");
  std::ofstream(run + "/checkpoints/last.safetensors") << "x";
  EXPECT_EQ(run_state(run), RunState::checkpointed);
}

TEST(RunDir, OrphanedTemporariesAreRemovedAndNothingElse) {
  testing::TempDir dir;
  const std::string ckpt = dir / "checkpoints";
  fs::create_directories(ckpt);
  for (const char* name : {"last.safetensors.tmp.123.0", "epoch-2.safetensors.tmp.77.3",
                           "last.safetensors", "notes.tmp.txt"})
    std::ofstream(ckpt + "/" + name) << "x";
  EXPECT_EQ(remove_orphaned_temporaries(dir.path()), 2);
  EXPECT_TRUE(fs::exists(ckpt + "/last.safetensors"));
  EXPECT_TRUE(fs::exists(ckpt + "/notes.tmp.txt"));
  EXPECT_FALSE(fs::exists(ckpt + "/last.safetensors.tmp.123.0"));
}

TEST(RunDir, MetricsAfterTheCheckpointAreDropped) {
  testing::TempDir dir;
  std::ofstream(dir / "metrics.jsonl") << R"({"kind":"step","step":50})"
                                       << "\n"
                                       << R"({"kind":"epoch","step":64})"
                                       << "\n"
                                       << R"({"kind":"step","step":100})"
                                       << "\n"
                                       << R"({"kind":"epoch","step":128})"
                                       << "\n"
                                       << R"({"kind":"step","ste)";  // cut by a kill
  truncate_metrics_after(dir.path(), 64);
  std::ifstream in(dir / "metrics.jsonl");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "{\"kind\":\"step\",\"step\":50}\n{\"kind\":\"epoch\",\"step\":64}\n");
}

TEST(RunDir, RetentionKeepsTheNewestEpochCheckpoints) {
  testing::TempDir dir;
  const std::string ckpt = dir / "checkpoints";
  fs::create_directories(ckpt);
  for (int k : {1, 2, 3, 10, 11}) std::ofstream(ckpt + "/" + epoch_checkpoint_name(k)) << "x";
  std::ofstream(ckpt + "/last.safetensors") << "x";
  std::ofstream(ckpt + "/best.safetensors") << "x";
  prune_epoch_checkpoints(dir.path(), -1);
  EXPECT_TRUE(fs::exists(ckpt + "/epoch-1.safetensors"));
  prune_epoch_checkpoints(dir.path(), 2);
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(ckpt)) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"best.safetensors", "epoch-10.safetensors",
                                            "epoch-11.safetensors", "last.safetensors"}));
  prune_epoch_checkpoints(dir.path(), 0);
  EXPECT_FALSE(fs::exists(ckpt + "/epoch-11.safetensors"));
  EXPECT_TRUE(fs::exists(ckpt + "/last.safetensors"));
}

TEST(RunDir, PublishCopyReplacesAtomically) {
  testing::TempDir dir;
  std::ofstream(dir / "a") << "first";
  publish_copy(dir / "a", dir / "b");
  std::ofstream(dir / "a2") << "second";
  publish_copy(dir / "a2", dir / "b");
  std::ifstream in(dir / "b");
  std::string text;
  in >> text;
  EXPECT_EQ(text, "second");
  EXPECT_THROW(publish_copy(dir / "missing", dir / "c"), IoError);
}

}  // namespace
}  // namespace epoch::train
