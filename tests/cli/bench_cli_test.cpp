// `epoch bench --layers` and `--peak`: every named layer of a small model is listed with its
// times, FLOPs and kernels, and the totals against one full step; the peak is a positive
// figure with its ISA; a model's GFLOP/s read as % of the peak measured in the same run; flag
// combinations that cannot go together end in one line.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli_testing.h"
#include "testing/testing.h"

namespace epoch {
namespace {

using nlohmann::json;
using testing::CommandResult;
using testing::expect_one_line_error;
using testing::run_epoch;

// fmnist-cnn's LayerStack, in order.
const std::vector<std::string> kFmnistLayers = {"conv1", "relu1",   "pool1", "conv2", "relu2",
                                                "pool2", "flatten", "fc1",   "relu3", "fc2"};
const std::string kQuickLayers =
    "bench --layers --model fmnist-cnn --batch-size 4 --threads 1 --warmup 0 --steps 3";

TEST(BenchCli, LayersListsEveryNamedLayerAndTotals) {
  testing::TempDir dir;
  const CommandResult t = run_epoch(kQuickLayers, dir);
  ASSERT_EQ(t.exit_code, 0) << t.err;
  std::istringstream lines(t.out);
  std::vector<std::string> first_words;
  for (std::string line; std::getline(lines, line);)
    first_words.push_back(line.substr(0, line.find(' ')));
  std::size_t at = 0;  // the layers appear as rows, in order
  for (const std::string& name : kFmnistLayers) {
    while (at < first_words.size() && first_words[at] != name) ++at;
    EXPECT_LT(at, first_words.size()) << name << " missing or out of order:\n" << t.out;
  }
  for (const char* row : {"total", "loss", "full"})
    EXPECT_NE(std::find(first_words.begin(), first_words.end(), row), first_words.end())
        << row << "\n"
        << t.out;
  EXPECT_NE(t.out.find("onednn:"), std::string::npos) << t.out;  // the kernels that ran
  EXPECT_NE(t.out.find("FLOPs: forward = multiply-adds x 2"), std::string::npos) << t.out;
}

TEST(BenchCli, LayersJson) {
  testing::TempDir dir;
  const CommandResult j = run_epoch(kQuickLayers + " --json", dir);
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const json r = json::parse(j.out);
  EXPECT_EQ(r["benchmark"], "layers");
  EXPECT_EQ(r["steps"].get<int>(), 3);
  ASSERT_EQ(r["layers"].size(), kFmnistLayers.size()) << j.out;
  double share = 0, fwd = 0, bwd = 0;
  for (std::size_t i = 0; i < kFmnistLayers.size(); ++i) {
    const json& l = r["layers"][i];
    EXPECT_EQ(l["name"], kFmnistLayers[i]);
    EXPECT_GT(l["forward_ms"].get<double>(), 0.0) << l.dump();
    if (kFmnistLayers[i] != "flatten") {  // a view: no kernel
      EXPECT_FALSE(l["impls"].empty()) << l.dump();
    }
    share += l["share"].get<double>();
    fwd += l["forward_ms"].get<double>();
    bwd += l["backward_ms"].get<double>();
  }
  EXPECT_NEAR(share, 1.0, 1e-9);
  EXPECT_NEAR(r["layers_forward_ms"].get<double>(), fwd, 1e-9);
  EXPECT_NEAR(r["layers_backward_ms"].get<double>(), bwd, 1e-9);
  EXPECT_GT(r["step_ms"].get<double>(), 0.0);
  EXPECT_GT(r["layers_gflops"].get<double>(), 0.0);
  // conv1's input needs no gradient (the weights' alone: x 1), conv2's does (x 2).
  const json& conv1 = r["layers"][0];
  const json& conv2 = r["layers"][3];
  EXPECT_FALSE(conv1["input_grad"].get<bool>());
  EXPECT_TRUE(conv2["input_grad"].get<bool>());
  EXPECT_DOUBLE_EQ(conv1["backward_flops"].get<double>(), conv1["forward_flops"].get<double>());
  EXPECT_DOUBLE_EQ(conv2["backward_flops"].get<double>(),
                   2.0 * conv2["forward_flops"].get<double>());
  EXPECT_DOUBLE_EQ(r["layers"][1]["forward_flops"].get<double>(), 0.0);  // relu1
  EXPECT_FALSE(conv1["backward_kernels"].empty());
  EXPECT_FALSE(r.contains("peak_gflops"));
}

TEST(BenchCli, PeakIsAPositiveFigureWithItsIsa) {
  testing::TempDir dir;
  const CommandResult j = run_epoch("bench --peak --peak-size 128 --threads 1 --json", dir);
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const json p = json::parse(j.out);
  EXPECT_EQ(p["benchmark"], "peak");
  EXPECT_EQ(p["size"].get<int>(), 128);
  EXPECT_EQ(p["threads"].get<int>(), 1);
  EXPECT_GT(p["best_gflops"].get<double>(), 0.0);
  EXPECT_GE(p["best_gflops"].get<double>(), p["median_gflops"].get<double>());
  EXPECT_FALSE(p["isa"].get<std::string>().empty());
  const CommandResult t = run_epoch("bench --peak --peak-size 128 --threads 1", dir);
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_EQ(testing::count_lines(t.out), 1) << t.out;
  EXPECT_NE(t.out.find("GFLOP/s"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("ISA"), std::string::npos) << t.out;
}

TEST(BenchCli, PeakWithAModelGivesPercentOfPeak) {
  testing::TempDir dir;
  const CommandResult j = run_epoch(
      "bench --peak --peak-size 128 --model autoencoder --batch-size 8 --threads 1 --warmup 1 "
      "--steps 10 --json",
      dir);
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const json rows = json::parse(j.out);
  ASSERT_EQ(rows.size(), 2u) << j.out;
  EXPECT_EQ(rows[0]["benchmark"], "peak");
  EXPECT_DOUBLE_EQ(rows[1]["peak_gflops"].get<double>(), rows[0]["best_gflops"].get<double>());
  EXPECT_GT(rows[1]["train_percent_of_peak"].get<double>(), 0.0);
  const CommandResult t = run_epoch(
      "bench --peak --peak-size 128 --model autoencoder --batch-size 8 --threads 1 --warmup 1 "
      "--steps 10",
      dir);
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("% of peak"), std::string::npos) << t.out;
  const CommandResult l = run_epoch(kQuickLayers + " --peak --peak-size 128", dir);
  ASSERT_EQ(l.exit_code, 0) << l.err;
  EXPECT_NE(l.out.find("% peak"), std::string::npos) << l.out;
  EXPECT_NE(l.out.find("of peak"), std::string::npos) << l.out;
}

TEST(BenchCli, BadCombinationsEndInOneLine) {
  testing::TempDir dir;
  expect_one_line_error(run_epoch("bench --layers --pipeline --data " + (dir / "none"), dir), 1,
                        "--layers");
  expect_one_line_error(run_epoch("bench --layers --data " + (dir / "none"), dir), 1, "--data");
  expect_one_line_error(run_epoch("bench --layers --compare pytorch", dir), 1, "--compare");
  expect_one_line_error(run_epoch("bench --layers --device cuda", dir), 1, "--device");
  expect_one_line_error(run_epoch("bench --layers --steps 2", dir), 1, "--steps");
  expect_one_line_error(run_epoch("bench --peak --data " + (dir / "none"), dir), 1, "--peak");
  expect_one_line_error(run_epoch("bench --peak --device cuda", dir), 1, "--device");
  expect_one_line_error(run_epoch("bench --peak-size 64", dir), 1, "--peak-size");
  expect_one_line_error(run_epoch("bench --peak --peak-size 0", dir), 1, "--peak-size");
  expect_one_line_error(run_epoch("bench --conv-algo winograd", dir), 1, "--conv-algo");
  // The kernels are chosen as `epoch train` chooses them; the earlier switches name the flag.
  expect_one_line_error(run_epoch("bench --strict", dir), 2, "--determinism strict");
  expect_one_line_error(run_epoch("bench --reference-kernels", dir), 2, "--determinism reference");
  expect_one_line_error(run_epoch("bench --determinism exact", dir), 1, "--determinism");
}

// --determinism picks the kernels timed, as in training, and the row records both.
TEST(BenchCli, TheDeterminismIsRecorded) {
  testing::TempDir dir;
  for (const auto& [level, kernels] : std::vector<std::pair<std::string, std::string>>{
           {"reproducible", "fast"}, {"strict", "strict"}, {"reference", "reference"}}) {
    const CommandResult j = run_epoch(
        "bench --model fmnist-cnn --batch-size 4 --threads 1 --warmup 0 --steps 10 --json "
        "--determinism " +
            level,
        dir);
    ASSERT_EQ(j.exit_code, 0) << j.err;
    EXPECT_EQ(json::parse(j.out)["determinism"], level);
    EXPECT_EQ(json::parse(j.out)["kernels"], kernels);
  }
  const CommandResult l = run_epoch(kQuickLayers + " --json --determinism strict", dir);
  ASSERT_EQ(l.exit_code, 0) << l.err;
  EXPECT_EQ(json::parse(l.out)["kernels"], "strict");
}

TEST(BenchCli, TheConvolutionAlgorithmIsRecorded) {
  testing::TempDir dir;
  for (const std::string algo : {"auto", "direct"}) {
    const std::string flags = " --json --conv-algo " + algo;
    const CommandResult j = run_epoch(
        "bench --model fmnist-cnn --batch-size 4 --threads 1 --warmup 0 --steps 10" + flags, dir);
    ASSERT_EQ(j.exit_code, 0) << j.err;
    EXPECT_EQ(json::parse(j.out)["conv_algorithm"], algo);
    const CommandResult l = run_epoch(kQuickLayers + flags, dir);
    ASSERT_EQ(l.exit_code, 0) << l.err;
    EXPECT_EQ(json::parse(l.out)["conv_algorithm"], algo);
  }
}

}  // namespace
}  // namespace epoch
