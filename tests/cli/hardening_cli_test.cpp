// What a hostile but realistic user tries: absurd thread counts, NaN and out-of-range flag
// values, a batch that cannot fit, resuming with flags that would change the run, flooding
// warnings, a class folder for the pipeline bench, a safetensors header full of raw bytes.
// Each ends in one clear line (or works), never a crash, a hang or a silent wrong answer.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/cli_testing.h"
#include "epoch/data/image.h"
#include "testing/testing.h"

namespace epoch {
namespace {
namespace fs = std::filesystem;

using testing::CommandResult;
using testing::count_lines;
using testing::expect_one_line_error;
using testing::run_epoch;

const std::string kSmall = "--data synthetic --synthetic-count 128 --threads 1 --quiet";

TEST(CliHardening, ThreadCountsAreCapped) {
  testing::TempDir dir;
  expect_one_line_error(run_epoch("bench --model fmnist-cnn --threads 100000", dir), 2, "1024");
  expect_one_line_error(run_epoch("bench --model fmnist-cnn --threads 2,20000", dir), 2, "1024");
  expect_one_line_error(
      run_epoch("data synth --kind cifar10 --count 10 --out " + (dir / "s") + " --threads 99999999",
                dir),
      2, "--threads");
  expect_one_line_error(run_epoch("train --threads 2147483647", dir), 2, "--threads");
  expect_one_line_error(run_epoch("eval x.safetensors --threads 5000", dir), 2, "--threads");
}

TEST(CliHardening, FlagValuesGetShortMessages) {
  testing::TempDir dir;
  const CommandResult zero = run_epoch("train --epochs 0", dir);
  expect_one_line_error(zero, 2, "--epochs: must be from 1 to 1000000000, got 0");
  EXPECT_LT(zero.err.size(), 120u) << zero.err;  // not the type's whole range
  expect_one_line_error(run_epoch("train --val-split nan", dir), 2, "not a finite number");
  expect_one_line_error(run_epoch("train --zoom 5", dir), 2, "from 0 to 0.99");
  expect_one_line_error(run_epoch("train --seed -1", dir), 2, "--seed");
  expect_one_line_error(run_epoch("train --seed 18446744073709551616", dir), 2, "2^64");
  const CommandResult top = run_epoch(
      "train --seed 18446744073709551615 --epochs 1 --out " + (dir / "r") + " " + kSmall, dir);
  EXPECT_EQ(top.exit_code, 0) << top.err;
  expect_one_line_error(run_epoch("train --batch-size 10000000000 " + kSmall, dir), 1,
                        "--batch-size 10000000000");
}

TEST(CliHardening, ResumeRefusesFlagsThatChangeTheRunAndKeepsItsPlan) {
  testing::TempDir dir;
  const std::string run = dir / "run";
  // A 3-epoch run killed after its first checkpoint.
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const std::string out = "--out=" + run;
    execl(EPOCH_TEST_BINARY, EPOCH_TEST_BINARY, "train", "--epochs", "3", "--data", "synthetic",
          "--synthetic-count", "4096", "--threads", "1", "--quiet", out.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!fs::exists(run + "/checkpoints/epoch-1.safetensors") &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(fs::exists(run + "/checkpoints/last.safetensors"));

  const CommandResult changed = run_epoch(
      "train --resume " + run + " --model catdog --batch-size 7 --optimizer sgd --lr 0.5", dir);
  expect_one_line_error(changed, 1, "batch_size 7 (the run has 32)");
  EXPECT_NE(changed.err.find("model \"catdog\" (the run has \"fmnist-cnn\")"), std::string::npos);
  EXPECT_EQ(changed.out.find("training catdog"), std::string::npos) << changed.out;

  // The same flags as the run, no --epochs: the stored plan of 3 epochs. (The kill may have
  // come after the shell's child finished a later epoch; the plan is what counts.)
  const CommandResult same =
      run_epoch("train --resume " + run + " --batch-size 32 --threads 1 --quiet --json", dir);
  ASSERT_EQ(same.exit_code, 0) << same.err;
  const nlohmann::json j = nlohmann::json::parse(same.out.substr(same.out.rfind('{')));
  EXPECT_EQ(j["epochs"], 3);
  EXPECT_EQ(j["steps"], 3 * 128);
}

TEST(CliHardening, WarningsGoToStderrSummarizedWithoutLocations) {
  testing::TempDir dir;
  const std::string data = dir / "images", clean = dir / "clean";
  for (const char* cls : {"a", "b"}) {
    fs::create_directories(data + "/" + cls);
    fs::create_directories(clean + "/" + cls);
    for (int i = 0; i < 8; ++i) {
      const auto shade = static_cast<std::uint8_t>(i * 30);
      const data::Image im{12, 12, 3, std::vector<std::uint8_t>(12 * 12 * 3, shade)};
      const std::string name = "/img" + std::to_string(i) + ".png";
      data::write_png(data + "/" + cls + name, im);
      data::write_png(clean + "/" + cls + name, im);
      // 0-byte files, sorted after the images (the validation split takes the first ones).
      std::ofstream(data + "/" + cls + "/zz_empty" + std::to_string(i) + ".png");
    }
  }
  const CommandResult r = run_epoch("train --model catdog --data " + data +
                                        " --val-split 0.25 --epochs 1 --threads 1 --workers 0 "
                                        "--out " +
                                        (dir / "run"),
                                    dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("epoch: warning"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("[at "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("zz_empty"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(".png: empty file"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("more bad images not shown"), std::string::npos) << r.err;
  EXPECT_LE(count_lines(r.err), 5 * 2 + 2) << r.err;  // at most 5 per loader, then a summary
  EXPECT_NE(r.out.find("validation accuracy"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("skipped:       16 bad image files"), std::string::npos) << r.out;

  // When every validation image is bad there is nothing to report: an error, not "loss 0".
  fs::create_directories(dir / "allbad/train/a");
  fs::create_directories(dir / "allbad/train/b");
  fs::create_directories(dir / "allbad/validation/a");
  fs::create_directories(dir / "allbad/validation/b");
  for (const char* cls : {"a", "b"}) {
    fs::copy(clean + "/" + cls, dir / ("allbad/train/" + std::string(cls)),
             fs::copy_options::recursive | fs::copy_options::overwrite_existing);
    std::ofstream(dir / ("allbad/validation/" + std::string(cls) + "/x.png"));
  }
  const CommandResult none =
      run_epoch("train --model catdog --data " + (dir / "allbad") +
                    " --epochs 1 --threads 1 --quiet --out " + (dir / "run2"),
                dir);
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("epoch: error: " + (dir / "allbad/validation") +
                          ": every validation image was skipped"),
            std::string::npos)
      << none.err;

  // The input-pipeline bench times training images alone: no validation split needed.
  const CommandResult bench =
      run_epoch("bench --pipeline --model catdog --data " + clean + " --images 8 --threads 1", dir);
  EXPECT_EQ(bench.exit_code, 0) << bench.err;
}

TEST(CliHardening, AHostileSafetensorsHeaderIsNotEchoed) {
  testing::TempDir dir;
  std::string header = "{\"a\": \x01\x02\x1b[31m";
  header += std::string(5000, 'x');
  std::string file(8, '\0');
  const std::uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) file[static_cast<std::size_t>(i)] = static_cast<char>(n >> (8 * i));
  file += header;
  std::ofstream(dir / "bad.safetensors", std::ios::binary) << file;
  const CommandResult r = run_epoch("eval " + (dir / "bad.safetensors"), dir);
  expect_one_line_error(r, 1, "bad.safetensors");
  EXPECT_LT(r.err.size(), 400u) << r.err;
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos);
}

// Counts that would overflow the step arithmetic are refused as flags: the cosine schedule
// once ended after 8 steps of --epochs 2305843009213693953 and trained on at a rate of 0.
TEST(CliHardening, EpochCountsCannotOverflowTheSteps) {
  testing::TempDir dir;
  expect_one_line_error(run_epoch("train --epochs 2305843009213693953 " + kSmall, dir), 2,
                        "--epochs");
  expect_one_line_error(run_epoch("train --epochs 9223372036854775807 " + kSmall, dir), 2,
                        "--epochs");
  EXPECT_FALSE(fs::exists(dir / "runs"));
}

// A run writes, replaces and prunes only its own files: a folder holding anything else is
// refused, naming what is there, and nothing in it is touched.
TEST(CliHardening, ARunNeverTouchesFilesItDidNotWrite) {
  testing::TempDir dir;
  const std::string d = dir / "d";
  fs::create_directories(d + "/checkpoints");
  std::ofstream(d + "/checkpoints/epoch-0.safetensors") << "a user's";
  std::ofstream(d + "/checkpoints/epoch-5.safetensors") << "a user's";
  const CommandResult r = run_epoch(
      "train --model autoencoder --epochs 2 --keep-checkpoints 1 --out " + d + " " + kSmall, dir);
  expect_one_line_error(r, 1, "holds files that are not an epoch run (checkpoints/)");
  for (const char* name : {"epoch-0.safetensors", "epoch-5.safetensors"}) {
    std::ifstream in(d + "/checkpoints/" + name);
    EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "a user's") << name;
  }
  EXPECT_FALSE(fs::exists(d + "/.lock"));
  const std::string page = dir / "page";
  fs::create_directories(page);
  std::ofstream(page + "/report.html") << "a user's page";
  expect_one_line_error(run_epoch("train --model autoencoder --out " + page + " " + kSmall, dir), 1,
                        "report.html");
  std::ifstream in(page + "/report.html");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "a user's page");

  // In a run's own folder, a file of the run's names that it did not write is kept too.
  const std::string run = dir / "run";
  ASSERT_EQ(run_epoch("train --model autoencoder --epochs 1 --keep-checkpoints 1 --out " + run +
                          " " + kSmall,
                      dir)
                .exit_code,
            0);
  std::ofstream(run + "/checkpoints/epoch-0.safetensors") << "a user's";
  const CommandResult more =
      run_epoch("train --resume " + run + " --epochs 3 --keep-checkpoints 1 --quiet", dir);
  ASSERT_EQ(more.exit_code, 0) << more.err;
  EXPECT_TRUE(fs::exists(run + "/checkpoints/epoch-0.safetensors"));
  EXPECT_TRUE(fs::exists(run + "/checkpoints/epoch-3.safetensors"));
  EXPECT_FALSE(fs::exists(run + "/checkpoints/epoch-1.safetensors"));
  EXPECT_FALSE(fs::exists(run + "/checkpoints/epoch-2.safetensors"));
}

TEST(CliHardening, TheRootAndHomeFoldersAreNotRunFolders) {
  testing::TempDir dir;
  expect_one_line_error(run_epoch("train --model autoencoder --out / " + kSmall, dir), 1,
                        "--out /: the root folder cannot be a run folder");
  const std::string home = dir / "home";
  fs::create_directories(home);
  expect_one_line_error(
      run_epoch("train --model autoencoder --out " + home + " " + kSmall, dir, "HOME=" + home), 1,
      "the home folder cannot be a run folder");
  EXPECT_FALSE(fs::exists(home + "/.lock"));
}

TEST(CliHardening, AFailedRunLeavesNoFolderBehind) {
  testing::TempDir dir;
  const std::string out = dir / "new/run";
  const CommandResult r = run_epoch(
      "train --model catdog --data " + (dir / "missing") + " --out " + out + " --quiet", dir);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_FALSE(fs::exists(dir / "new")) << "a folder holding only .lock was left";
}

TEST(CliHardening, AnOptionBeforeTheCommandIsNamed) {
  testing::TempDir dir;
  const CommandResult r = run_epoch("--bogus", dir);
  expect_one_line_error(r, 2, "unknown option '--bogus'");
  EXPECT_NE(r.err.find("train"), std::string::npos) << r.err;
  EXPECT_EQ(run_epoch("--version", dir).exit_code, 0);
}

// A class folder whose name is not UTF-8 cannot go into config.json: one line naming it, its
// bad bytes shown as \xNN, instead of an internal error from the JSON library.
TEST(CliHardening, AClassFolderNameThatIsNotUtf8IsNamed) {
  testing::TempDir dir;
  const std::string data = dir / "images";
  for (const std::string& cls : {std::string("ok"), std::string("bad\xff\xfename")}) {
    fs::create_directories(data + "/" + cls);
    for (int i = 0; i < 4; ++i)
      data::write_png(data + "/" + cls + "/img" + std::to_string(i) + ".png",
                      data::Image{12, 12, 3, std::vector<std::uint8_t>(12 * 12 * 3, 90)});
  }
  const CommandResult r =
      run_epoch("train --model catdog --data " + data +
                    " --val-split 0.25 --epochs 1 --threads 1 --out " + (dir / "run"),
                dir);
  expect_one_line_error(r, 1, "bad\\xff\\xfename");
  EXPECT_NE(r.err.find("not valid UTF-8"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
  const CommandResult path = run_epoch(
      "train --model autoencoder --data " + (dir / "x\xff") + " --out " + (dir / "run2"), dir);
  expect_one_line_error(path, 1, "--data");
  EXPECT_NE(path.err.find("\\xff"), std::string::npos) << path.err;
}

}  // namespace
}  // namespace epoch
