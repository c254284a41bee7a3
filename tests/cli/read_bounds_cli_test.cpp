// What the binary reads is bounded: /dev/zero, a FIFO or a folder given as an image, an IDX
// file or a CIFAR-10 batch ends in one line at once (never a read without end or a wait for a
// writer), and the video commands' own traps: a sequence linked twice, a frame that is a FIFO,
// a frame given for a sequence folder, predictions written over earlier ones, a window longer
// than every sequence, and a throughput line that read 0. Every command runs under timeout(1):
// one given a hostile input fails in seconds instead of hanging the suite, one that trains or
// predicts has room for the sanitizer build.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "cli/cli_testing.h"
#include "testing/testing.h"

namespace epoch {
namespace {

namespace fs = std::filesystem;
using testing::CommandResult;
using testing::expect_one_line_error;

/// `epoch ARGS` under timeout(1): a command that hangs exits 124 after 20 s.
CommandResult run_bounded(const std::string& args, const testing::TempDir& dir) {
  return testing::run_epoch(args, dir, "timeout 20");
}

/// A command that does real work (training, predicting a sequence): its bound leaves room for
/// the sanitizer build, whose training runs several times slower.
CommandResult run_working(const std::string& args, const testing::TempDir& dir) {
  return testing::run_epoch(args, dir, "timeout 600");
}

TEST(ReadBoundsCli, PredictRefusesDevicesFifosAndFoldersAtOnce) {
  testing::TempDir dir;
  const std::string run = dir / "run";
  const CommandResult t = run_working(
      "train --data synthetic --synthetic-count 128 --epochs 1 --batch-size 32 --threads 1 "
      "--quiet --out " +
          run,
      dir);
  ASSERT_EQ(t.exit_code, 0) << t.err;
  const std::string ckpt = run + "/checkpoints/last.safetensors";
  const std::string fifo = dir / "pipe.png", folder = dir / "folder.png";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  fs::create_directory(folder);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"/dev/zero", "/dev/zero: is a character device"},
      {fifo, fifo + ": is a FIFO"},
      {folder, folder + ": is a directory"},
      {"idx:/dev/zero:0", "/dev/zero: is a character device"},
      {"idx:" + fifo + ":0", fifo + ": is a FIFO"},
      {"idx:" + folder + ":0", folder + ": is a directory"}};
  for (const auto& [input, needle] : cases) {
    SCOPED_TRACE(input);
    expect_one_line_error(run_bounded("predict " + ckpt + " " + input, dir), 1, needle);
  }
  expect_one_line_error(run_bounded("predict " + ckpt + " " + fifo + " --overwrite", dir), 1,
                        "--overwrite");
}

TEST(ReadBoundsCli, ACifarBatchThatIsAFifoIsRefusedAtOnce) {
  testing::TempDir dir;
  const std::string data = dir / "cifar";
  fs::create_directories(data);
  std::string record(3073, '\0');  // a test batch of one image, so the train batch is read
  std::ofstream(data + "/test_batch.bin", std::ios::binary).write(record.data(), 3073);
  ASSERT_EQ(::mkfifo((data + "/data_batch_1.bin").c_str(), 0600), 0);
  expect_one_line_error(
      run_bounded("train --data " + data + " --epochs 1 --threads 1 --quiet --out " + (dir / "r"),
                  dir),
      1, data + "/data_batch_1.bin: is a FIFO");
}

TEST(ReadBoundsCli, VideoSequencesFramesAndPredictions) {
  testing::TempDir dir;
  const std::string data = dir / "video";
  ASSERT_EQ(run_working("data synth --kind video --sequences 2 --val-sequences 1 --frames 4 "
                        "--size 32x24 --out " +
                            data,
                        dir)
                .exit_code,
            0);
  // A window longer than every sequence is blamed on --tbptt, not on --batch-size.
  expect_one_line_error(run_bounded("train --model prednet-study --data " + data +
                                        " --tbptt 1000000 --epochs 1 --out " + (dir / "long"),
                                    dir),
                        1, "--tbptt 1000000: longer than every training sequence");

  // A sequence linked under a second name trains once, with a warning naming the link.
  fs::create_directory_symlink(data + "/train/seq_00000", data + "/train/seq_00000_again");
  const std::string run = dir / "run";
  const CommandResult t = run_working("train --model prednet-study --data " + data +
                                          " --tbptt 2 --epochs 1 --threads 2 --out " + run,
                                      dir);
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.err.find(data + "/train/seq_00000_again: the same sequence folder as " + data +
                       "/train/seq_00000"),
            std::string::npos)
      << t.err;
  // A few windows a second printed as "0 images/s": the rate is in frames, never 0.
  const std::size_t at = t.out.find("throughput:");
  ASSERT_NE(at, std::string::npos) << t.out;
  const std::string line = t.out.substr(at, t.out.find('\n', at) - at);
  EXPECT_NE(line.find(" frames/s ("), std::string::npos) << line;
  EXPECT_NE(line.find("windows of 2 frames/s"), std::string::npos) << line;
  EXPECT_EQ(line.find(" 0 "), std::string::npos) << line;
  EXPECT_EQ(line.find("images/s"), std::string::npos) << line;

  // A frame for a sequence folder: what a video model predicts from, not "no such folder".
  const std::string ckpt = run + "/checkpoints/last.safetensors";
  const std::string seq = data + "/validation/seq_00002";
  const CommandResult frame = run_bounded("predict " + ckpt + " " + seq + "/frame_00000.png", dir);
  expect_one_line_error(frame, 1, seq + "/frame_00000.png: not a folder");
  EXPECT_NE(frame.err.find("sequence folder (SEQUENCE_DIR"), std::string::npos) << frame.err;
  EXPECT_EQ(frame.err.find("no such folder"), std::string::npos) << frame.err;

  // Predictions never replace earlier ones unasked.
  const std::string out = dir / "pred";
  ASSERT_EQ(run_working("predict " + ckpt + " " + seq + " --out " + out, dir).exit_code, 0);
  const CommandResult again = run_bounded("predict " + ckpt + " " + seq + " --out " + out, dir);
  expect_one_line_error(again, 1, out + ": already holds 4 predicted frames (pred_frame_00000.png");
  EXPECT_NE(again.err.find("--overwrite"), std::string::npos) << again.err;
  const CommandResult replaced =
      run_working("predict " + ckpt + " " + seq + " --out " + out + " --overwrite", dir);
  EXPECT_EQ(replaced.exit_code, 0) << replaced.err;
  const CommandResult help = run_bounded("predict --help", dir);
  EXPECT_NE(help.out.find("--overwrite"), std::string::npos) << help.out;

  // A frame that is a FIFO is a bad frame: warned about and its window left out in eval,
  // fatal where every frame is needed (predict); never a wait for a writer.
  ASSERT_EQ(::mkfifo((seq + "/frame_00001b.png").c_str(), 0600), 0);
  const CommandResult e = run_working("eval " + ckpt, dir);
  EXPECT_EQ(e.exit_code, 0) << e.err;
  EXPECT_NE(e.err.find(seq + "/frame_00001b.png: is a FIFO"), std::string::npos) << e.err;
  expect_one_line_error(
      run_bounded("predict " + ckpt + " " + seq + " --out " + (dir / "pred2"), dir), 1,
      seq + "/frame_00001b.png: is a FIFO");
}

}  // namespace
}  // namespace epoch
