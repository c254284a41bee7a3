// The video commands end to end: generate sequences, train prednet-study on them, evaluate the
// checkpoint against the previous-frame baseline, and write predicted frames for a sequence.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/cli_testing.h"

namespace epoch {
namespace {

using testing::CommandResult;
using testing::expect_one_line_error;
using testing::run_epoch;

TEST(VideoCli, TrainEvalAndPredictASequence) {
  testing::TempDir dir;
  const std::string data = dir / "video";
  ASSERT_EQ(run_epoch("data synth --kind video --sequences 2 --val-sequences 1 --frames 4 "
                      "--size 32x24 --out " +
                          data,
                      dir)
                .exit_code,
            0);
  const std::string run = dir / "run";
  const CommandResult t =
      run_epoch("train --model prednet-study --data " + data +
                    " --tbptt 2 --epochs 1 --threads 2 --json --quiet --out " + run,
                dir);
  ASSERT_EQ(t.exit_code, 0) << t.err;
  const std::string last_line = t.out.substr(t.out.rfind('\n', t.out.size() - 2) + 1);
  const nlohmann::json summary = nlohmann::json::parse(last_line);
  EXPECT_EQ(summary["steps"], 4);
  EXPECT_EQ(summary["frames_per_sample"], 2);
  EXPECT_GT(summary["last_losses"]["baseline_mse"].get<double>(), 0.0);
  EXPECT_TRUE(summary["last_losses"].contains("margin"));
  EXPECT_GT(summary["dataset_baseline_mse"].get<double>(), 0.0);

  const std::string ckpt = run + "/checkpoints/last.safetensors";
  const CommandResult e = run_epoch("eval " + ckpt + " --json", dir);
  ASSERT_EQ(e.exit_code, 0) << e.err;
  const nlohmann::json ej = nlohmann::json::parse(e.out);
  EXPECT_EQ(ej["windows"], 2);
  EXPECT_DOUBLE_EQ(ej["test_baseline_mse"].get<double>(),
                   summary["test_baseline_mse"].get<double>());
  EXPECT_NEAR(ej["test_loss"].get<double>(), summary["test_loss"].get<double>(), 1e-6);
  const CommandResult limited = run_epoch("eval " + ckpt + " --limit 1 --json", dir);
  ASSERT_EQ(limited.exit_code, 0) << limited.err;
  EXPECT_EQ(nlohmann::json::parse(limited.out)["windows"], 1);  // --limit counts windows
  const CommandResult words = run_epoch("eval " + ckpt, dir);
  EXPECT_NE(words.out.find("previous-frame baseline"), std::string::npos) << words.out;

  const std::string seq = data + "/validation/seq_00002";
  const CommandResult p = run_epoch("predict " + ckpt + " " + seq + " --json", dir);
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const nlohmann::json pj = nlohmann::json::parse(p.out);
  EXPECT_EQ(pj["frames"], 4);
  EXPECT_TRUE(std::filesystem::exists(seq + "/predicted/pred_frame_00003.png"));
  const CommandResult elsewhere =
      run_epoch("predict " + ckpt + " " + seq + " --out " + (dir / "pred"), dir);
  ASSERT_EQ(elsewhere.exit_code, 0) << elsewhere.err;
  EXPECT_TRUE(std::filesystem::exists(dir / "pred/pred_frame_00000.png"));

  // Bad input: one line each.
  expect_one_line_error(run_epoch("predict " + ckpt + " " + (dir / "none"), dir), 1, "none");
  expect_one_line_error(run_epoch("train --model prednet-study --data " + data +
                                      " --batch-size 2 --out " + (dir / "b"),
                                  dir),
                        1, "--batch-size 1");
  expect_one_line_error(
      run_epoch("train --model prednet-study --data " + (dir / "none") + " --out " + (dir / "c"),
                dir),
      1, "no such folder");
  EXPECT_FALSE(std::filesystem::exists(dir / "c"));
}

}  // namespace
}  // namespace epoch
