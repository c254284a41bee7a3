// The `epoch` binary as a user meets it: end-to-end train/eval/predict, and one clear error
// line with a non-zero exit for every kind of bad input.
#include <gtest/gtest.h>

#include <filesystem>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "cli/cli_testing.h"
#include "epoch/data/image.h"
#include "epoch/tensor/safetensors.h"
#include "epoch/train/config_fields.h"
#include "testing/testing.h"

namespace epoch {
namespace {

using testing::CommandResult;
using testing::count_lines;
using testing::expect_one_line_error;
using testing::run_epoch;

TEST(Cli, UsageErrorsAreOneLine) {
  testing::TempDir dir;
  expect_one_line_error(run_epoch("train --bogus", dir), 2, "--bogus");
  expect_one_line_error(run_epoch("train --epochs 0", dir), 2, "--epochs");
  expect_one_line_error(run_epoch("train --lr abc", dir), 2, "--lr");
  expect_one_line_error(run_epoch("frobnicate", dir), 2, "frobnicate");
}

// The flags of `epoch train` come from the settings table: each field with a flag is offered,
// and the flags that are not fields are the few that set several fields or say how to run.
TEST(Cli, TrainFlagsAreTheSettingsTable) {
  testing::TempDir dir;
  const testing::CommandResult r = testing::run_epoch("train --help", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::set<std::string> offered;
  for (std::size_t at = r.out.find("--"); at != std::string::npos; at = r.out.find("--", at + 2)) {
    std::size_t end = at + 2;
    while (end < r.out.size() &&
           (std::isalnum(static_cast<unsigned char>(r.out[end])) || r.out[end] == '-'))
      ++end;
    if (at == 0 || r.out[at - 1] == ' ' || r.out[at - 1] == ',')
      offered.insert(r.out.substr(at, end - at));
  }
  std::set<std::string> expected = {"--help", "--augment", "--contrast", "--resume", "--json"};
  for (const train::ConfigField& f : train::config_fields())
    if (!f.flag.empty()) expected.insert(f.flag);
  for (const std::string& flag : expected) EXPECT_EQ(offered.count(flag), 1u) << flag;
  for (const std::string& flag : offered) EXPECT_EQ(expected.count(flag), 1u) << flag;
}

TEST(Cli, BadConfigurationIsOneLine) {
  testing::TempDir dir;
  expect_one_line_error(run_epoch("train --model nope --data synthetic --out " + (dir / "r"), dir),
                        1, "unknown model 'nope'");
  expect_one_line_error(
      run_epoch("train --optimizer nadam --data synthetic --out " + (dir / "r"), dir), 1, "nadam");
  expect_one_line_error(run_epoch("train --data " + (dir / "none") + " --out " + (dir / "r"), dir),
                        1, dir / "none");
  expect_one_line_error(run_epoch("train --determinism sloppy --out " + (dir / "r"), dir), 1,
                        "sloppy");
  expect_one_line_error(run_epoch("train --conv-algo winograd --out " + (dir / "r"), dir), 1,
                        "winograd");
  // The MNIST digits are in no Debian package: the line says what to pass instead.
  expect_one_line_error(
      run_epoch("train --model autoencoder --data mnist --out " + (dir / "r"), dir), 1,
      "--data DIR of the four MNIST IDX files");
}

TEST(Cli, CorruptDatasetIsOneLineNamingTheFile) {
  testing::TempDir dir;
  std::ofstream(dir / "train-images-idx3-ubyte") << "this is not an idx file";
  std::ofstream(dir / "train-labels-idx1-ubyte") << "nor is this";
  std::ofstream(dir / "t10k-images-idx3-ubyte") << "x";
  std::ofstream(dir / "t10k-labels-idx1-ubyte") << "x";
  const CommandResult r = run_epoch("train --data " + dir.path() + " --out " + (dir / "r"), dir);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("idx"), std::string::npos) << r.err;
}

TEST(Cli, BadCheckpointIsOneLine) {
  testing::TempDir dir;
  expect_one_line_error(run_epoch("predict " + (dir / "missing.safetensors") + " a.png", dir), 1,
                        "missing.safetensors");
  std::ofstream(dir / "garbage.safetensors") << "garbage garbage garbage";
  expect_one_line_error(run_epoch("eval " + (dir / "garbage.safetensors"), dir), 1,
                        "garbage.safetensors");
}

/// A 28x28 gray PNG (what fmnist-cnn takes): every `stride`-th pixel `value`, the rest black.
void write_gray_png(const std::string& path, int stride, std::uint8_t value) {
  data::Image img;
  img.width = img.height = 28;
  img.channels = 1;
  img.pixels.assign(28 * 28, 0);
  for (int i = 0; i < 28 * 28; i += stride) img.pixels[static_cast<std::size_t>(i)] = value;
  data::write_png(path, img);
}

TEST(Cli, TrainEvalPredictEndToEnd) {
  testing::TempDir dir;
  const std::string run = dir / "run";
  const CommandResult t = run_epoch(
      "train --data synthetic --synthetic-count 512 --epochs 2 --batch-size 32 "
      "--threads 2 --out " +
          run + " --json",
      dir);
  ASSERT_EQ(t.exit_code, 0) << t.err;
  ASSERT_EQ(count_lines(t.out), 1) << t.out;
  const auto summary = nlohmann::json::parse(t.out);
  for (const char* key : {"test_accuracy", "test_loss", "images_per_s", "wall_s"})
    EXPECT_TRUE(summary.contains(key)) << key;
  EXPECT_GT(summary["test_accuracy"].get<double>(), 0.5);

  const std::string ckpt = run + "/checkpoints/last.safetensors";
  const CommandResult e = run_epoch("eval " + ckpt + " --json", dir);
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(e.out)["test_accuracy"].get<double>(),
                   summary["test_accuracy"].get<double>());

  write_gray_png(dir / "sample.png", 3, 200);
  const CommandResult p =
      run_epoch("predict " + ckpt + " " + (dir / "sample.png") + " --json", dir);
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const auto pj = nlohmann::json::parse(p.out);
  EXPECT_TRUE(pj.contains("class"));
  EXPECT_GT(pj["probability"].get<double>(), 0.0);

  const CommandResult resume_done = run_epoch("train --resume " + run + " --epochs 2", dir);
  expect_one_line_error(resume_done, 1, "already completed 2 epochs");
  expect_one_line_error(run_epoch("train --data synthetic --out " + run, dir), 1, "--resume");
  expect_one_line_error(run_epoch("predict " + ckpt + " " + (dir / "nope.png"), dir), 1,
                        "nope.png");
}

// eval and predict run a checkpoint with the kernels it was trained with: a strict run trained
// on 2 threads is evaluated on 1 to the bits of its own final evaluation, and says so; a flag
// overrides the checkpoint's setting.
TEST(Cli, EvalAndPredictUseTheCheckpointsKernels) {
  testing::TempDir dir;
  const std::string run = dir / "run";
  const CommandResult t = run_epoch(
      "train --data synthetic --synthetic-count 256 --epochs 1 --batch-size 32 --threads 2 "
      "--determinism strict --out " +
          run + " --json",
      dir);
  ASSERT_EQ(t.exit_code, 0) << t.err;
  const double run_loss = nlohmann::json::parse(t.out)["test_loss"].get<double>();
  const std::string ckpt = run + "/checkpoints/last.safetensors";
  const CommandResult e = run_epoch("eval " + ckpt + " --threads 1 --json", dir);
  ASSERT_EQ(e.exit_code, 0) << e.err;
  const auto ej = nlohmann::json::parse(e.out);
  EXPECT_EQ(ej["determinism"], "strict");
  EXPECT_EQ(ej["threads"], 1);
  EXPECT_EQ(ej["test_loss"].get<double>(), run_loss);  // bit for bit
  const CommandResult text = run_epoch("eval " + ckpt + " --threads 1", dir);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("(strict kernels, 1 thread)"), std::string::npos) << text.out;
  const CommandResult ref = run_epoch("eval " + ckpt + " --determinism reference --json", dir);
  ASSERT_EQ(ref.exit_code, 0) << ref.err;
  EXPECT_EQ(nlohmann::json::parse(ref.out)["determinism"], "reference");

  write_gray_png(dir / "digit.png", 5, 180);
  std::vector<nlohmann::json> predictions;
  for (const char* threads : {"1", "2"}) {
    const CommandResult p = run_epoch(
        "predict " + ckpt + " " + (dir / "digit.png") + " --json --threads " + threads, dir);
    ASSERT_EQ(p.exit_code, 0) << p.err;
    predictions.push_back(nlohmann::json::parse(p.out));
    EXPECT_EQ(predictions.back()["determinism"], "strict");
  }
  EXPECT_EQ(predictions[0]["probabilities"], predictions[1]["probabilities"]);
  // The kernels change this model's arithmetic, so the equality above says strict's ran: the
  // fast kernels (what predict used before it honoured the checkpoint) give other bits.
  const CommandResult fast = run_epoch(
      "predict " + ckpt + " " + (dir / "digit.png") + " --json --threads 1 --determinism fast", dir);
  ASSERT_EQ(fast.exit_code, 0) << fast.err;
  EXPECT_NE(nlohmann::json::parse(fast.out)["probabilities"], predictions[0]["probabilities"]);
  expect_one_line_error(run_epoch("eval " + ckpt + " --cpu-kernels reference", dir), 2,
                        "--determinism reference");
  expect_one_line_error(run_epoch("eval " + ckpt + " --device cuda", dir), 2, "--device");
}

TEST(Cli, KilledRunKeepsItsLastCheckpoint) {
  testing::TempDir dir;
  const std::string run = dir / "run";
  ASSERT_EQ(
      run_epoch("train --data synthetic --synthetic-count 256 --epochs 1 --quiet --out " + run, dir)
          .exit_code,
      0);
  std::filesystem::remove(run + "/report.html");  // the resumed run writes it again at each epoch's end
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const std::string resume = "--resume=" + run;
    execl(EPOCH_TEST_BINARY, EPOCH_TEST_BINARY, "train", resume.c_str(), "--epochs", "50",
          "--quiet", static_cast<char*>(nullptr));
    _exit(127);
  }
  // Killed once it has logged its third epoch (the second's report is written by then).
  const auto epochs_logged = [&] {
    std::ifstream in(run + "/metrics.jsonl");
    int n = 0;
    for (std::string line; std::getline(in, line);)
      if (line.find("\"kind\":\"epoch\"") != std::string::npos) ++n;
    return n;
  };
  for (int i = 0; i < 600 && epochs_logged() < 3; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  const SafetensorsFile last = load_safetensors(run + "/checkpoints/last.safetensors");
  EXPECT_GE(std::stoi(last.metadata.at("epoch")), 1);
  const CommandResult e = run_epoch("eval " + run + "/checkpoints/last.safetensors", dir);
  EXPECT_EQ(e.exit_code, 0) << e.err;
  EXPECT_GE(epochs_logged(), 3);
  EXPECT_TRUE(std::filesystem::exists(run + "/report.html"));  // the page of the epochs it completed
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Ctrl-C during `epoch train` ends the run after the current step with a checkpoint of where
// it stood, mid-epoch included, and a line saying how to resume; the resumed run ends with
// the same bits (parameters, optimizer state, losses) as a run never interrupted.
TEST(Cli, CtrlCStopsWithACheckpointThatResumesBitForBit) {
  testing::TempDir dir;
  const std::string flags =
      "train --data synthetic --synthetic-count 6144 --epochs 2 --batch-size 32 --threads 2 "
      "--log-every 1 --quiet --json --out ";
  const CommandResult whole = run_epoch(flags + (dir / "whole"), dir);
  ASSERT_EQ(whole.exit_code, 0) << whole.err;

  const std::string run = dir / "stopped", err = dir / "stderr.txt";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::FILE* to = std::freopen(err.c_str(), "w", stderr);
    std::FILE* out = std::freopen("/dev/null", "w", stdout);
    if (to == nullptr || out == nullptr) _exit(126);
    execl(EPOCH_TEST_BINARY, EPOCH_TEST_BINARY, "train", "--data", "synthetic",
          "--synthetic-count", "6144", "--epochs", "2", "--batch-size", "32", "--threads", "2",
          "--log-every", "1", "--quiet", "--out", run.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // Once its first steps are logged, the run is under way (its handler installed).
  for (int i = 0; i < 600 && count_lines(read_text(run + "/metrics.jsonl")) < 3; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << "ended by signal " << WTERMSIG(status) << ": "
                                 << read_text(err);
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGINT);
  const std::string said = read_text(err);
  EXPECT_EQ(count_lines(said), 1) << said;
  EXPECT_NE(said.find("stopped by Ctrl-C (SIGINT) in epoch"), std::string::npos) << said;
  EXPECT_NE(said.find("epoch train --resume " + run), std::string::npos) << said;
  const SafetensorsFile stop = load_safetensors(run + "/checkpoints/last.safetensors");
  ASSERT_GT(stop.metadata.count("epoch_step"), 0u) << "stopped at an epoch's end";

  const CommandResult resumed = run_epoch("train --resume " + run + " --quiet --json", dir);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  const auto a = nlohmann::json::parse(whole.out), b = nlohmann::json::parse(resumed.out);
  EXPECT_EQ(a["test_loss"], b["test_loss"]);
  EXPECT_EQ(a["train_loss"], b["train_loss"]);
  EXPECT_EQ(a["steps"], b["steps"]);
  const SafetensorsFile x = load_safetensors(dir / "whole/checkpoints/last.safetensors");
  const SafetensorsFile y = load_safetensors(run + "/checkpoints/last.safetensors");
  ASSERT_EQ(x.tensors.size(), y.tensors.size());
  for (std::size_t i = 0; i < x.tensors.size(); ++i) {
    ASSERT_EQ(x.tensors[i].name, y.tensors[i].name);
    const std::vector<float> p = x.tensors[i].tensor.to_vector();
    const std::vector<float> q = y.tensors[i].tensor.to_vector();
    ASSERT_EQ(p.size(), q.size()) << x.tensors[i].name;
    EXPECT_EQ(std::memcmp(p.data(), q.data(), p.size() * sizeof(float)), 0) << x.tensors[i].name;
  }
  EXPECT_EQ(y.metadata.count("epoch_step"), 0u);
}

TEST(Cli, ModelsInfoAndBench) {
  testing::TempDir dir;
  const CommandResult m = run_epoch("models --json", dir);
  ASSERT_EQ(m.exit_code, 0) << m.err;
  const nlohmann::json models = nlohmann::json::parse(m.out);
  EXPECT_EQ(models.size(), 13u);
  EXPECT_EQ(models.back()["input"], nlohmann::json({20, 3, 120, 160}));  // prednet-study's clips
  EXPECT_EQ(models.back()["task"], "frame prediction");
  // One model's layer table: its totals as the list gives them, a row per layer.
  const CommandResult show = run_epoch("models --show fmnist-cnn --json", dir);
  ASSERT_EQ(show.exit_code, 0) << show.err;
  const nlohmann::json table = nlohmann::json::parse(show.out);
  EXPECT_EQ(table["parameters"], models.front()["parameters"]);
  EXPECT_EQ(table["forward_flops_per_sample"], models.front()["forward_flops_per_sample"]);
  EXPECT_EQ(table["output_shape"], nlohmann::json::parse("[null, 10]"));  // as Keras gives it
  EXPECT_EQ(table["layers"][0]["parameters"], 320);  // conv 32 3x3 over 1 channel
  const CommandResult text = run_epoch("models --show fmnist-cnn", dir);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("Total params: 421,642"), std::string::npos) << text.out;
  expect_one_line_error(run_epoch("models --show no-such-model", dir), 1, "no-such-model");
  // Video models train on sequence folders: without one, one line before a run folder is made.
  expect_one_line_error(run_epoch("train --model prednet --out " + (dir / "p"), dir), 1,
                        "trains on a folder of sequences");
  EXPECT_FALSE(std::filesystem::exists(dir / "p"));
  const CommandResult i = run_epoch("info --json", dir);
  ASSERT_EQ(i.exit_code, 0) << i.err;
  const nlohmann::json info = nlohmann::json::parse(i.out);
  EXPECT_TRUE(info.contains("gpus"));
  // oneDNN's Winograd exactly where it dispatches to AVX-512, epoch's own below it, as a
  // capped ISA shows.
  if (info["onednn_isa"] != "none") {
    EXPECT_EQ(
        info["winograd"].get<std::string>(),
        info["onednn_isa"].get<std::string>().rfind("avx512_core", 0) == 0 ? "onednn" : "epoch");
    const CommandResult capped = run_epoch("info --json", dir, "ONEDNN_MAX_CPU_ISA=AVX2");
    ASSERT_EQ(capped.exit_code, 0) << capped.err;
    const nlohmann::json c = nlohmann::json::parse(capped.out);
    EXPECT_EQ(c["onednn_isa"], "avx2");
    EXPECT_EQ(c["winograd"].get<std::string>(), "epoch");
  }
  const CommandResult b =
      run_epoch("bench --model autoencoder --batch-size 16 --warmup 1 --steps 10 --json", dir);
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_GT(nlohmann::json::parse(b.out)["train_images_per_s"].get<double>(), 0.0);
  expect_one_line_error(run_epoch("bench --steps 3", dir), 1, "--steps");
}

TEST(Cli, DataSynthWritesADatasetAndRejectsBadArguments) {
  testing::TempDir dir;
  const std::string out = dir / "cd";
  const CommandResult j = run_epoch(
      "data synth --kind catdog --count 4 --val-count 2 --size 64x48 "
      "--threads 1 --json --out " +
          out,
      dir);
  ASSERT_EQ(j.exit_code, 0) << j.err;
  ASSERT_EQ(count_lines(j.out), 1) << j.out;
  const auto summary = nlohmann::json::parse(j.out);
  EXPECT_EQ(summary["train_images"].get<int>(), 4);
  EXPECT_EQ(summary["val_images"].get<int>(), 2);
  EXPECT_EQ(summary["width"].get<int>(), 64);
  EXPECT_EQ(summary["height"].get<int>(), 48);
  EXPECT_GT(summary["bytes"].get<double>(), 0.0);
  for (const char* f : {"train/cat/cat.1.jpg", "train/dog/dog.1.jpg", "validation/dog/dog.2.jpg"})
    EXPECT_TRUE(std::ifstream(out + "/" + f).good()) << f;

  const CommandResult t =
      run_epoch("data synth --kind cifar10 --count 10 --out " + (dir / "c10"), dir);
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_EQ(count_lines(t.out), 1) << t.out;
  EXPECT_NE(t.out.find("10 train + 2 validation images, 10 classes"), std::string::npos) << t.out;
  EXPECT_TRUE(std::ifstream(dir / "c10/cifar-10-batches-bin/test_batch.bin").good());

  expect_one_line_error(run_epoch("data synth --kind catdog --count 4 --out " + out, dir), 1,
                        "already exists");
  expect_one_line_error(
      run_epoch("data synth --kind catdog --size 64by48 --out " + (dir / "s"), dir), 1,
      "--size: expected WIDTHxHEIGHT");
  expect_one_line_error(run_epoch("data synth --kind catdog --size 4x4 --out " + (dir / "s"), dir),
                        1, "4x4");
  expect_one_line_error(run_epoch("data synth --kind zebra --out " + (dir / "s"), dir), 1,
                        "unknown synth kind 'zebra' (valid: catdog, cifar10, imagenet, video)");
  expect_one_line_error(run_epoch("data synth --kind catdog", dir), 2, "--out");
  expect_one_line_error(run_epoch("data synth --kind catdog --frames 3 --out " + (dir / "s"), dir),
                        1, "--frames does not apply to --kind catdog");
}

TEST(Cli, DataSynthVideoWritesSequencesAndTheirBaseline) {
  testing::TempDir dir;
  const std::string out = dir / "v";
  const CommandResult j = run_epoch(
      "data synth --kind video --sequences 2 --val-sequences 1 --frames 3 --size 32x24 --json "
      "--out " +
          out,
      dir);
  ASSERT_EQ(j.exit_code, 0) << j.err;
  ASSERT_EQ(count_lines(j.out), 1) << j.out;
  const auto summary = nlohmann::json::parse(j.out);
  EXPECT_EQ(summary["train_sequences"].get<int>(), 2);
  EXPECT_EQ(summary["val_sequences"].get<int>(), 1);
  EXPECT_EQ(summary["frames_per_sequence"].get<int>(), 3);
  EXPECT_GT(summary["train_previous_frame_mse"].get<double>(), 0.0);
  for (const char* f : {"train/seq_00000/frame_00000.png", "train/seq_00001/frame_00002.png",
                        "validation/seq_00002/frame_00002.png", "baseline.json"})
    EXPECT_TRUE(std::ifstream(out + "/" + f).good()) << f;
  std::ifstream baseline(out + "/baseline.json");
  EXPECT_EQ(nlohmann::json::parse(baseline)["train"]["previous_frame_mse"].get<double>(),
            summary["train_previous_frame_mse"].get<double>());
  expect_one_line_error(run_epoch("data synth --kind video --count 4 --out " + (dir / "s"), dir), 1,
                        "--count does not apply to --kind video");
  expect_one_line_error(run_epoch("data synth --kind video --frames 1 --out " + (dir / "s"), dir),
                        1, "frames per sequence 1");
  expect_one_line_error(run_epoch("data synth --kind video --format gif --out " + (dir / "s"), dir),
                        1, "unknown format 'gif'");
  expect_one_line_error(run_epoch("data synth --kind video --frames 2 --out " + out, dir), 1,
                        "already exists");
  expect_one_line_error(run_epoch("data", dir), 2, "subcommand");
}

}  // namespace
}  // namespace epoch
