// `epoch models --show FILE`, `epoch train --model FILE` and the run's checkpoint without the
// file, through the binary: Keras's counts and shapes, one line for a bad file, and eval and
// --resume of a run whose model file is gone (a new process: nothing but the checkpoint).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/cli_testing.h"

namespace epoch::testing {
namespace {

std::string fixture(const std::string& name) {
  return std::string(EPOCH_SOURCE_DIR) + "/tests/models/keras/" + name;
}

TEST(ModelFileCli, ShowGivesKerasCountAndOutputShape) {
  TempDir dir;
  std::ifstream in(fixture("expected.json"));
  const nlohmann::json expected = nlohmann::json::parse(in)["models"];
  for (const char* name : {"cifar10_keras", "residual"}) {
    SCOPED_TRACE(name);
    const CommandResult r = run_epoch("models --show " + fixture(std::string(name) + ".json") +
                                          " --json", dir);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["parameters"], expected[name]["count_params"]);
    EXPECT_EQ(j["output_shape"], expected[name]["output_shape"]);
    EXPECT_EQ(j["format"], "keras 3");
    EXPECT_EQ(j["sha256"].get<std::string>().size(), 64u);
  }
  const CommandResult text = run_epoch("models --show " + fixture("residual.keras"), dir);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("Total params: 5,461"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("(None, 8, 8, 24)"), std::string::npos) << text.out;  // channels last
  std::ofstream(dir / "bad.json") << R"({"class_name": "Sequential", "config": {"layers": [
      {"class_name": "InputLayer", "config": {"name": "in", "batch_shape": [null, 8, 8, 3]}},
      {"class_name": "Conv2D", "config": {"name": "conv3", "filters": 4, "kernel_size": 3,
       "data_format": "channels_first"}}]}})";
  expect_one_line_error(run_epoch("models --show " + (dir / "bad.json"), dir), 1,
                        "bad.json: conv3: Conv2D data_format channels_first is not supported");
  expect_one_line_error(run_epoch("train --model " + (dir / "bad.json") + " --data synthetic --out " +
                                      (dir / "r"),
                                  dir),
                        1, "conv3: Conv2D data_format channels_first is not supported");
  EXPECT_FALSE(std::filesystem::exists(dir / "r"));
  expect_one_line_error(run_epoch("models --show " + (dir / "missing.json"), dir), 1,
                        "missing.json: cannot open the model file");
}

TEST(ModelFileCli, ARunNeedsOnlyItsCheckpoint) {
  TempDir dir;
  std::filesystem::copy_file(fixture("catdog.json"), dir / "net.json");
  const CommandResult t = run_epoch("train --model " + (dir / "net.json") +
                                        " --data synthetic --synthetic-count 128 --epochs 1 "
                                        "--quiet --out " + (dir / "run"),
                                    dir);
  ASSERT_EQ(t.exit_code, 0) << t.err;
  std::filesystem::remove(dir / "net.json");
  const CommandResult e = run_epoch(
      "eval " + (dir / "run/checkpoints/last.safetensors") + " --data synthetic --json", dir);
  ASSERT_EQ(e.exit_code, 0) << e.err;
  const CommandResult r = run_epoch("train --resume " + (dir / "run") + " --epochs 2 --quiet", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream config(dir / "run/config.json");
  EXPECT_EQ(nlohmann::json::parse(config)["model_sha256"].get<std::string>().size(), 64u);
}

TEST(ModelFileCli, CaffeNetsWithTheirSolver) {
  TempDir dir;
  const std::string caffe = std::string(EPOCH_SOURCE_DIR) + "/tests/models/caffe/";
  const CommandResult show =
      run_epoch("models --show " + caffe + "alexnet_train_val_v1.prototxt --json", dir);
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_EQ(nlohmann::json::parse(show.out)["parameters"], 60965224);
  EXPECT_NE(show.err.find("epoch: warning:"), std::string::npos);  // mean_file
  expect_one_line_error(run_epoch("models --show " + caffe + "lenet_train_test.prototxt", dir), 1,
                        "mnist: Data carries no shape: pass --input-shape C,H,W");
  expect_one_line_error(run_epoch("models --show " + caffe +
                                      "lenet_train_test.prototxt --input-shape 1,28",
                                  dir),
                        1, "--input-shape 1,28: give C,H,W");
  const CommandResult t = run_epoch(
      "train --model " + caffe + "lenet_train_test.prototxt --solver " + caffe +
          "lenet_solver.prototxt --input-shape 1,28,28 --data synthetic --synthetic-count 128 "
          "--epochs 1 --quiet --out " + (dir / "run"),
      dir);
  ASSERT_EQ(t.exit_code, 0) << t.err;
  std::ifstream config(dir / "run/config.json");
  const nlohmann::json c = nlohmann::json::parse(config);
  EXPECT_EQ(c["optimizer"]["name"], "lars");  // the solver's, with Intel-Caffe's LARS
  EXPECT_EQ(c["batch_size"], 64);              // the Data layer's
  EXPECT_EQ(c["schedule"]["name"], "step");
  EXPECT_NE(c["model_summary"].get<std::string>().find("Total params: 431,080"), std::string::npos);
  EXPECT_EQ(c["max_steps"], 0);  // --epochs given: the solver's max_iter gives way

  // Without --epochs the solver's max_iter is the run's length: 3 steps of 64 out of 128
  // samples are two epochs, the second cut short after its first step.
  {
    std::ofstream solver(dir / "short_solver.prototxt");
    solver << "base_lr: 0.01\nmomentum: 0.9\nlr_policy: \"poly\"\npower: 1\nmax_iter: 3\n";
  }
  const CommandResult s = run_epoch(
      "train --model " + caffe + "lenet_train_test.prototxt --solver " +
          (dir / "short_solver.prototxt") +
          " --input-shape 1,28,28 --data synthetic --synthetic-count 128 --json --quiet --out " +
          (dir / "short"),
      dir);
  ASSERT_EQ(s.exit_code, 0) << s.err;
  const nlohmann::json r = nlohmann::json::parse(s.out);
  EXPECT_EQ(r["steps"], 3);
  EXPECT_EQ(r["epochs"], 2);
  std::ifstream short_config(dir / "short/config.json");
  const nlohmann::json sc = nlohmann::json::parse(short_config);
  EXPECT_EQ(sc["max_steps"], 3);
  EXPECT_EQ(sc["schedule"]["name"], "poly");
}

// bench and study take model files too: a Caffe net with --input-shape timed by bench, and a
// study of the Keras autoencoder (its SHA-256 in the plan: a changed file is not resumed).
TEST(ModelFileCli, BenchAndStudyTakeModelFiles) {
  TempDir dir;
  const std::string lenet =
      std::string(EPOCH_SOURCE_DIR) + "/tests/models/caffe/lenet_train_test.prototxt";
  const CommandResult b = run_epoch("bench --model " + lenet +
                                        " --input-shape 1,28,28 --batch-size 8 --steps 10 "
                                        "--warmup 1 --threads 1 --json",
                                    dir);
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_GT(nlohmann::json::parse(b.out)["train_images_per_s"].get<double>(), 0.0);
  expect_one_line_error(run_epoch("bench --model " + lenet + " --steps 10", dir), 1,
                        "Data carries no shape: pass --input-shape C,H,W");

  std::filesystem::copy_file(fixture("autoencoder.json"), dir / "ae.json");
  const std::string out = dir / "study";
  const std::string study = "study --model " + (dir / "ae.json") +
                            " --configs cpu:1,cpu:1+determinism=reference --repeats 2 "
                            "--limit-train 256 --limit-test 64 --json --out " + out;
  const CommandResult r = run_epoch(study, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream plan(dir / "study/study-plan.json");
  const nlohmann::json p = nlohmann::json::parse(plan);
  EXPECT_EQ(p["model"], (dir / "ae.json"));
  EXPECT_EQ(p["model_sha256"].get<std::string>().size(), 64u);
  std::ifstream config(dir / "study/cpu:1/seed-0/config.json");
  EXPECT_EQ(nlohmann::json::parse(config)["model_sha256"], p["model_sha256"]);
  std::ofstream(dir / "ae.json", std::ios::app) << " ";  // the same model, another file
  expect_one_line_error(run_epoch("study --resume --out " + out, dir), 1,
                        "is not the one the interrupted study started with");
  expect_one_line_error(
      run_epoch("study --protocol prednet-study --model " + (dir / "ae.json") +
                    " --data x --out " + (dir / "p"),
                dir),
      1, "--model goes with --protocol autoencoder");
}

}  // namespace
}  // namespace epoch::testing
