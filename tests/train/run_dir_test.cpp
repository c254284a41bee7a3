// Run directories: one process at a time (a held lock refuses a second, a dead holder's lock
// is taken over), the state a folder is in, temporary files a killed writer left, metrics past
// a resumed checkpoint, and checkpoint retention.
#include "epoch/train/run_dir.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

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

TEST(RunDir, ALockFileThatIsALinkIsNotWrittenThrough) {
  testing::TempDir dir;
  std::ofstream(dir / "precious.txt") << "a user's";
  fs::create_directories(dir / "run");
  fs::create_symlink(dir / "precious.txt", dir / "run/.lock");
  EXPECT_THROW(RunDirLock lock(dir / "run"), IoError);
  std::ifstream in(dir / "precious.txt");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "a user's");
}

TEST(RunDir, StateSeesRunsWithoutCheckpoints) {
  testing::TempDir dir;
  const std::string run = dir / "run";
  EXPECT_EQ(run_state(run), RunState::empty);
  fs::create_directories(run);
  std::ofstream(run + "/.lock") << "123";
  EXPECT_EQ(run_state(run), RunState::empty) << "a lock alone is nothing";
  std::ofstream(run + "/config.json") << "{}\n";
  EXPECT_EQ(run_state(run), RunState::started);
  fs::create_directories(run + "/checkpoints");
  std::ofstream(run + "/checkpoints/last.safetensors") << "x";
  EXPECT_EQ(run_state(run), RunState::checkpointed);
}

TEST(RunDir, AFolderOfOtherFilesIsNotARun) {
  testing::TempDir dir;
  const std::string run = dir / "run";
  fs::create_directories(run + "/checkpoints");
  std::ofstream(run + "/checkpoints/epoch-0.safetensors") << "mine";
  std::ofstream(run + "/checkpoints/last.safetensors") << "mine";
  std::ofstream(run + "/report.html") << "mine";
  EXPECT_EQ(run_state(run), RunState::foreign);
  EXPECT_EQ(describe_contents(run), "checkpoints/ and report.html");
  std::ofstream(run + "/metrics.jsonl") << "{}\n";
  std::ofstream(run + "/notes.txt") << "x";
  EXPECT_EQ(run_state(run), RunState::foreign);
  EXPECT_EQ(describe_contents(run), "checkpoints/, metrics.jsonl, notes.txt and 1 more");
}

TEST(RunDir, TheRootAndHomeFoldersAreRefused) {
  testing::TempDir dir;
  EXPECT_THROW(check_run_dir_allowed("/"), ConfigError);
  EXPECT_THROW(check_run_dir_allowed("/tmp/.."), ConfigError);
  const char* saved = std::getenv("HOME");
  const std::string home_before = saved != nullptr ? saved : "";
  ::setenv("HOME", dir.path().c_str(), 1);
  EXPECT_THROW(check_run_dir_allowed(dir.path()), ConfigError);
  EXPECT_THROW(check_run_dir_allowed(dir.path() + "/."), ConfigError);
  EXPECT_NO_THROW(check_run_dir_allowed(dir / "runs"));
  if (saved != nullptr) {
    ::setenv("HOME", home_before.c_str(), 1);
  } else {
    ::unsetenv("HOME");
  }
}

TEST(RunDir, ALockOnANewFolderLeavesNothingWhenNothingWasWritten) {
  testing::TempDir dir;
  const std::string run = dir / "a/b/run";
  { const RunDirLock lock(run); }
  EXPECT_FALSE(fs::exists(dir / "a")) << "the folders the lock made go with it";
  // A folder the user made stays (without the lock file); one the run wrote into keeps all.
  fs::create_directories(dir / "mine");
  { const RunDirLock lock(dir / "mine"); }
  EXPECT_TRUE(fs::is_directory(dir / "mine"));
  EXPECT_FALSE(fs::exists(dir / "mine/.lock"));
  {
    const RunDirLock lock(run);
    std::ofstream(run + "/config.json") << "{}\n";
  }
  EXPECT_TRUE(fs::exists(run + "/config.json"));
  EXPECT_TRUE(fs::exists(run + "/.lock"));
}

TEST(RunDir, TheRecordListsTheRunsFiles) {
  testing::TempDir dir;
  EXPECT_TRUE(recorded_files(dir.path()).empty());
  record_files(dir.path(), {"config.json", "checkpoints/epoch-1.safetensors"});
  record_files(dir.path(), {"metrics.jsonl"}, {"checkpoints/epoch-1.safetensors"});
  EXPECT_EQ(recorded_files(dir.path()), (std::set<std::string>{"config.json", "metrics.jsonl"}));
  std::ofstream(dir / kRunRecordName) << "[1, 2]";
  EXPECT_THROW(recorded_files(dir.path()), IoError);
  std::ofstream(dir / kRunRecordName) << R"({"files": [3]})";
  EXPECT_THROW(recorded_files(dir.path()), IoError);
}

TEST(RunDir, ARunWrittenBeforeTheRecordAdoptsItsOwnFiles) {
  testing::TempDir dir;
  fs::create_directories(dir / "checkpoints");
  for (const char* name : {"config.json", "metrics.jsonl", "events.out.tfevents.1.h.2", "notes.txt",
                           "checkpoints/last.safetensors", "checkpoints/epoch-3.safetensors",
                           "checkpoints/mine.safetensors"})
    std::ofstream(dir / name) << "x";
  adopt_unrecorded_run(dir.path());
  EXPECT_EQ(
      recorded_files(dir.path()),
      (std::set<std::string>{"config.json", "metrics.jsonl", "events.out.tfevents.1.h.2",
                             "checkpoints/last.safetensors", "checkpoints/epoch-3.safetensors"}));
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
  for (int k : {1, 2, 3, 10, 11}) {
    std::ofstream(ckpt + "/" + epoch_checkpoint_name(k)) << "x";
    record_files(dir.path(), {"checkpoints/" + epoch_checkpoint_name(k)});
  }
  // A user's files of the same names, never recorded: never removed.
  std::ofstream(ckpt + "/epoch-0.safetensors") << "mine";
  std::ofstream(ckpt + "/epoch-99.safetensors") << "mine";
  std::ofstream(ckpt + "/last.safetensors") << "x";
  std::ofstream(ckpt + "/best.safetensors") << "x";
  prune_epoch_checkpoints(dir.path(), -1);
  EXPECT_TRUE(fs::exists(ckpt + "/epoch-1.safetensors"));
  prune_epoch_checkpoints(dir.path(), 2);
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(ckpt)) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"best.safetensors", "epoch-0.safetensors",
                                            "epoch-10.safetensors", "epoch-11.safetensors",
                                            "epoch-99.safetensors", "last.safetensors"}));
  prune_epoch_checkpoints(dir.path(), 0);
  EXPECT_FALSE(fs::exists(ckpt + "/epoch-11.safetensors"));
  EXPECT_TRUE(fs::exists(ckpt + "/epoch-0.safetensors"));
  EXPECT_TRUE(fs::exists(ckpt + "/epoch-99.safetensors"));
  EXPECT_TRUE(fs::exists(ckpt + "/last.safetensors"));
  EXPECT_EQ(recorded_files(dir.path()).count("checkpoints/epoch-11.safetensors"), 0u);
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
