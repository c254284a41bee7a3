// The study runner: configurations parsed and refused with one clear error (duplicates by
// value, learning rates the optimizer cannot take, a figure no update moves), those this
// machine cannot run listed with the reason, every configuration of a seed started from the
// same weights and data, study.json holding the runs and the paired comparisons, a failed run
// named, and an interrupted study resumed without training its finished runs again.
#include "epoch/study/study.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

#include "epoch/data/synth_video.h"
#include "epoch/tensor/error.h"
#include "epoch/tensor/storage.h"
#include "testing/testing.h"

namespace epoch::study {
namespace {

namespace fs = std::filesystem;

/// The message of the `E` that `f` throws ("" and a failure when it throws none).
template <typename E>
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error thrown";
  return "";
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

TEST(Study, ParsesConfigurationsAndRefusesBadOnes) {
  const std::vector<StudyConfigSpec> s = parse_study_configs(
      "cpu:1,cpu:2+perturb,cpu:2+reference,cuda,cuda-nocudnn,cpu:3+perturb-order");
  ASSERT_EQ(s.size(), 6u);
  EXPECT_EQ(s[0].execution.threads, 1);
  EXPECT_EQ(s[0].execution.perturb, train::Perturb::none);
  EXPECT_EQ(s[0].execution.determinism, train::Determinism::reproducible);
  EXPECT_EQ(s[1].execution.perturb, train::Perturb::ulp);
  EXPECT_EQ(s[5].execution.perturb, train::Perturb::order);
  EXPECT_EQ(s[5].execution.threads, 3);
  EXPECT_EQ(s[1].execution.threads, 2);
  EXPECT_EQ(s[2].execution.determinism, train::Determinism::reference);
  EXPECT_EQ(s[3].execution.device, "cuda");
  EXPECT_TRUE(s[3].execution.cudnn);
  EXPECT_FALSE(s[4].execution.cudnn);
  // Variants chain, and +lr=X sets the learning rate on any configuration.
  const std::vector<StudyConfigSpec> v =
      parse_study_configs("cpu:2+perturb+lr=0.0005,cuda-nocudnn+lr=1e-3,cpu:1+reference");
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0].execution.perturb, train::Perturb::ulp);
  EXPECT_DOUBLE_EQ(v[0].lr, 0.0005);
  EXPECT_FALSE(v[1].execution.cudnn);
  EXPECT_DOUBLE_EQ(v[1].lr, 1e-3);
  EXPECT_EQ(v[2].lr, 0.0);
  for (const char* bad : {"cpu",
                          "cpu:0",
                          "cpu:x",
                          "cpu:+1",
                          "cpu: 1",
                          "cpu:1 ",
                          "cpu:-1",
                          "cpu:257",
                          "cpu:2+fast",
                          "cpu:2+order",
                          "gpu",
                          "cpu:1,,cpu:2",
                          "cpu:1,cpu:1",
                          "cpu:2 ",
                          "cpu:2+",
                          "cpu:2+lr=",
                          "cpu:2+lr=0",
                          "cpu:2+lr=-1",
                          "cpu:2+lr=nan",
                          "cpu:2+lr=inf",
                          "cpu:2+lr=1e99",
                          "cpu:2+lr=1e-300",
                          "cpu:2+lr=1e-9999",
                          "cpu:2+lr=1e9999",
                          "cpu:2+lr= 0.1",
                          "cpu:2+lr=0x1p-3",
                          "cpu:2+lr=0.1x",
                          "cpu:2+lr=1+lr=2",
                          "cpu:2+perturb+perturb-order",
                          "cpu:2+reference+reference",
                          "cpu:2+reference+determinism=strict",
                          "cpu:2+determinism=quick",
                          "cpu:2+determinism",
                          "cpu:2+threads=4",
                          "cpu:2+device=cuda",
                          "cpu:2+perturb_seed=3",
                          "cpu:2+cudnn=off",
                          "cpu:2+cudnn=on",
                          "cpu:2+conv-algo=winograd",
                          "cpu:2+conv-algo=direct+conv_algorithm=auto",
                          "cuda+perturb",
                          "cuda+reference",
                          "cuda+determinism=strict",
                          "cuda+conv-algo=direct",
                          "cuda-nocudnn+cudnn=on",
                          "cuda+cudnn=maybe",
                          "cuda-nocudnn+"})
    EXPECT_THROW(parse_study_configs(bad), ConfigError) << bad;
  EXPECT_EQ(skip_reason(s[0]), "");
  if (memory::cuda_device_count() == 0) {
    EXPECT_NE(skip_reason(s[3]), "");
    EXPECT_NE(skip_reason(s[4]), "");
  }
}

// A configuration is +key=value over the execution settings `epoch train` takes, by flag name
// or config.json key, in any order; its one spelling lists them in the flags' order.
TEST(Study, TakesExecutionSettingsAsKeyValue) {
  const std::vector<StudyConfigSpec> s = parse_study_configs(
      "cpu:2+conv_algorithm=direct+perturb=order+determinism=strict,cuda+cudnn=off+determinism="
      "fast,cpu:4+determinism=reference+lr=0.01");
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].execution.determinism, train::Determinism::strict);
  EXPECT_EQ(s[0].execution.perturb, train::Perturb::order);
  EXPECT_EQ(s[0].execution.conv_algorithm, ops::ConvAlgorithm::direct);
  EXPECT_EQ(canonical_config(s[0]), "cpu:2+determinism=strict+perturb=order+conv-algo=direct");
  EXPECT_EQ(s[1].execution.device, "cuda");
  EXPECT_FALSE(s[1].execution.cudnn);
  EXPECT_EQ(s[1].execution.determinism, train::Determinism::fast);
  EXPECT_EQ(canonical_config(s[1]), "cuda+determinism=fast+cudnn=off");
  EXPECT_EQ(canonical_config(s[2]), "cpu:4+determinism=reference+lr=0.01");
  // A word the flag does not take is named with the flag's words.
  const std::string bad = error_of<ConfigError>([] { parse_study_configs("cpu:2+perturb=tiny"); });
  EXPECT_NE(bad.find("--configs cpu:2+perturb=tiny:"), std::string::npos) << bad;
  EXPECT_NE(bad.find("none, ulp or order"), std::string::npos) << bad;
  const std::string unknown =
      error_of<ConfigError>([] { parse_study_configs("cpu:2+threads=4"); });
  EXPECT_NE(unknown.find("determinism, perturb, conv-algo, cudnn or lr"), std::string::npos)
      << unknown;
}

TEST(Study, RunsEveryConfigurationPerSeedAndComparesThemPaired) {
  testing::TempDir dir;
  StudyConfig c;
  c.configs = "cpu:1,cpu:2+perturb,cpu:2+determinism=reference,cuda-nocudnn,cpu:2+perturb=order";
  c.repeats = 2;
  c.limit_train = 512;
  c.limit_test = 256;
  c.out_dir = dir / "study";
  const StudyResult r = run_study(c, nullptr);
  ASSERT_EQ(r.ran.size(), 4u);
  ASSERT_EQ(r.skipped.size(), 1u);
  EXPECT_EQ(r.skipped[0].first, "cuda-nocudnn");
  ASSERT_EQ(r.runs.size(), 8u);  // 2 seeds x 4 configurations, seed by seed
  EXPECT_EQ(r.runs[0].seed, r.runs[3].seed);
  EXPECT_NE(r.runs[0].seed, r.runs[4].seed);
  ASSERT_EQ(r.comparisons.size(), 6u);
  EXPECT_GT(r.margin, 0.0);
  for (const ConfigComparison& cc : r.comparisons) {
    const Comparison& cmp = cc.stats;
    EXPECT_TRUE(cmp.paired);
    EXPECT_FALSE(cmp.words.empty());
    // The same seeds, weights within an ulp or a summation order of each other: never
    // called different.
    EXPECT_NE(cmp.verdict, Verdict::different)
        << cc.a << " vs " << cc.b << ": " << cmp.words;
  }
  // Every run is a run folder of its own, and the perturbed one says so.
  std::ifstream config(r.runs[1].run_dir + "/config.json");
  const nlohmann::json j = nlohmann::json::parse(config);
  EXPECT_EQ(j["perturb"], "ulp");
  std::ifstream order_config(r.runs[3].run_dir + "/config.json");
  EXPECT_EQ(nlohmann::json::parse(order_config)["perturb"], "order");
  std::ifstream reference_config(r.runs[2].run_dir + "/config.json");
  EXPECT_EQ(nlohmann::json::parse(reference_config)["determinism"], "reference");
  std::ifstream file(dir / "study/study.json");
  const nlohmann::json s = nlohmann::json::parse(file);
  EXPECT_EQ(s["runs"].size(), 8u);
  EXPECT_EQ(s["skipped"][0]["config"], "cuda-nocudnn");
  EXPECT_TRUE(s["comparisons"][0].contains("paired"));
  EXPECT_TRUE(s["comparisons"][0].contains("verdict"));
}

// The study's power on real training, not only on drawn samples: the same configuration with a
// learning rate ten times lower trains to a higher loss for every seed, and is called different
// (and lower for the protocol's rate), while each is equivalent to itself under another thread
// count.
TEST(Study, CallsALowerLearningRateDifferent) {
  testing::TempDir dir;
  StudyConfig c;
  c.configs = "cpu:1,cpu:2,cpu:2+lr=0.0002";
  c.repeats = 3;
  c.limit_train = 2048;
  c.limit_test = 256;
  c.out_dir = dir / "study";
  const StudyResult r = run_study(c, nullptr);
  ASSERT_EQ(r.comparisons.size(), 3u);
  for (const ConfigComparison& cc : r.comparisons) {
    const Comparison& cmp = cc.stats;
    SCOPED_TRACE(cc.a + " vs " + cc.b + ": " + cmp.words);
    if (cc.b == "cpu:2+lr=0.0002") {
      EXPECT_EQ(cmp.verdict, Verdict::different);
      EXPECT_LT(cmp.paired_test.difference, 0.0);  // the protocol's rate lower
      EXPECT_NE(cmp.words.find(cc.a + " lower"), std::string::npos);
    } else {
      EXPECT_EQ(cmp.verdict, Verdict::equivalent);
    }
  }
  std::ifstream config(r.runs[2].run_dir + "/config.json");
  EXPECT_FLOAT_EQ(nlohmann::json::parse(config)["optimizer"]["lr"].get<float>(), 0.0002f);
}

// Configurations are compared by value: the thread count as a number, the variants in any
// order, the learning rate as the float the optimizer gets, and the protocol's own rate as
// none; a duplicate is refused naming both spellings.
TEST(Study, RefusesConfigurationsEqualByValue) {
  EXPECT_EQ(canonical_config(parse_study_configs("cpu:01+lr=1e-3+perturb")[0]),
            "cpu:1+perturb=ulp+lr=0.001");
  EXPECT_EQ(canonical_config(parse_study_configs("cpu:2+lr=0.002")[0], 0.002f), "cpu:2");
  EXPECT_EQ(canonical_config(parse_study_configs("cuda-nocudnn+lr=2E-4")[0]),
            "cuda+cudnn=off+lr=0.0002");
  const std::map<std::string, std::vector<std::string>> duplicates = {
      {"cpu:1,cpu:01", {"--configs cpu:01:", "cpu:1 "}},
      {"cpu:2+lr=1e-3,cpu:2+lr=0.001", {"--configs cpu:2+lr=0.001:", "cpu:2+lr=1e-3"}},
      {"cpu:2+perturb+lr=0.001,cpu:2+lr=0.001+perturb",
       {"cpu:2+lr=0.001+perturb", "cpu:2+perturb+lr=0.001 "}},
      {"cpu:2+lr=0.001,cpu:2+lr=0.0010000000001", {"cpu:2+lr=0.0010000000001", "the same"}},
      {"cpu:3+reference+perturb-order,cpu:3+perturb-order+reference", {"the same"}},
      {"cpu:3+reference,cpu:3+determinism=reference", {"the same"}},
      {"cuda-nocudnn,cuda+cudnn=off", {"the same"}},
      {"cpu:2,cpu:2+determinism=reproducible", {"the same"}},
      {"cuda+lr=0.1,cuda+lr=1e-1", {"cuda+lr=1e-1"}},
      {"cpu:1,cpu:1", {"--configs cpu:1: given twice"}}};
  for (const auto& [list, needles] : duplicates) {
    const std::string message = error_of<ConfigError>([&] { parse_study_configs(list); });
    for (const std::string& needle : needles)
      EXPECT_NE(message.find(needle), std::string::npos) << list << ": " << message;
  }
  // The protocol's own rate (the autoencoder's 0.002) spelled out is the protocol's
  // configuration; without a protocol rate it is not.
  EXPECT_EQ(parse_study_configs("cpu:2,cpu:2+lr=0.002").size(), 2u);
  const std::string own =
      error_of<ConfigError>([] { parse_study_configs("cpu:2,cpu:2+lr=2e-3", 0.002f); });
  EXPECT_NE(own.find("--configs cpu:2+lr=2e-3: the same configuration as cpu:2"), std::string::npos)
      << own;
  EXPECT_NE(own.find("protocol's own learning rate"), std::string::npos) << own;
  // And run_study refuses it before anything trains.
  testing::TempDir dir;
  StudyConfig c;
  c.configs = "cpu:1,cpu:2,cpu:2+lr=0.002";
  c.out_dir = dir / "study";
  const std::string refused = error_of<ConfigError>([&] { run_study(c, nullptr); });
  EXPECT_NE(refused.find("cpu:2+lr=0.002"), std::string::npos) << refused;
  EXPECT_FALSE(fs::exists(c.out_dir));
}

// A learning rate `epoch train --lr` would refuse is named with its configuration before the
// first run trains, not blamed on --lr after it.
TEST(Study, RefusesABadLearningRateBeforeAnythingTrains) {
  testing::TempDir dir;
  StudyConfig c;
  c.out_dir = dir / "study";
  for (const char* bad : {"cpu:1,cpu:2+lr=1e-300", "cpu:1,cpu:2+lr=1e39", "cpu:1,cpu:2+lr=-1"}) {
    c.configs = bad;
    const std::string message = error_of<ConfigError>([&] { run_study(c, nullptr); });
    EXPECT_EQ(message.rfind("--configs " + std::string(bad).substr(6) + ": ", 0), 0u) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    EXPECT_FALSE(fs::exists(c.out_dir)) << bad;
  }
  // The bounds are the optimizer's float's, whatever a double holds.
  EXPECT_GT(parse_study_configs("cpu:1+lr=1e-37")[0].lr, 0.0);
  EXPECT_GT(parse_study_configs("cpu:1+lr=3e38")[0].lr, 0.0);
  EXPECT_THROW(parse_study_configs("cpu:1+lr=1e-46"), ConfigError);
}

// prednet-study's figure is the mean of the last 50 losses, each taken before its step's
// update: with one step in all it is the loss before any update, whatever the learning rate,
// so such a study is refused naming the flag (or the data) that leaves one step.
TEST(Study, RefusesAFigureNoUpdateMoves) {
  testing::TempDir dir;
  data::VideoSynthConfig v;
  v.out_dir = dir / "video";
  v.sequences = 1;
  v.val_sequences = 1;
  v.frames = 40;  // two windows of 20 frames
  v.width = 32;
  v.height = 24;
  data::write_synth_video(v);
  v.out_dir = dir / "short";
  v.frames = 20;  // one window
  data::write_synth_video(v);

  StudyConfig c;
  c.protocol = "prednet-study";
  c.configs = "cpu:1,cpu:1+lr=0.01";
  c.data = dir / "video";
  c.limit_train = 1;
  c.out_dir = dir / "s";
  std::string message = error_of<ConfigError>([&] { run_study(c, nullptr); });
  EXPECT_EQ(message.rfind("--limit-train 1 with --epochs 1: prednet-study would make 1 step", 0),
            0u)
      << message;
  EXPECT_NE(message.find("before any update"), std::string::npos) << message;
  c.data = dir / "short";
  c.limit_train = 0;
  message = error_of<ConfigError>([&] { run_study(c, nullptr); });
  EXPECT_EQ(message.rfind("--data " + c.data + ": its training sequences hold 1 window(s)", 0), 0u)
      << message;
  EXPECT_FALSE(fs::exists(c.out_dir));
  // Two steps (two windows, or one window twice) pass the check: the study goes on to the next
  // one, here an --out that is not empty, before anything trains.
  fs::create_directories(dir / "s/other");
  for (const auto& [data, limit, epochs] :
       {std::tuple{"video", 2, 1}, std::tuple{"video", 0, 1}, std::tuple{"short", 0, 2}}) {
    c.data = dir / data;
    c.limit_train = limit;
    c.epochs = epochs;
    message = error_of<ConfigError>([&] { run_study(c, nullptr); });
    EXPECT_NE(message.find("is not empty"), std::string::npos) << message;
  }
}

// The autoencoder's figure, the test loss after training, follows at least one update even when
// the training samples are fewer than a batch: the learning rate moves it.
TEST(Study, AnAutoencoderFigureMovesWithFewerSamplesThanABatch) {
  testing::TempDir dir;
  StudyConfig c;
  c.configs = "cpu:1,cpu:1+lr=0.02";
  c.repeats = 2;
  c.limit_train = 1;
  c.limit_test = 64;
  c.out_dir = dir / "study";
  const StudyResult r = run_study(c, nullptr);
  ASSERT_EQ(r.runs.size(), 4u);
  EXPECT_NE(r.runs[0].figure, r.runs[1].figure);
  EXPECT_NE(r.runs[2].figure, r.runs[3].figure);
  EXPECT_EQ(read_json(r.runs[0].run_dir + "/study-run.json")["steps"], 1);
}

// A run that fails names its configuration, seed and folder in one line, and the runs that
// finished before it stay recorded for --resume.
TEST(Study, AFailedRunIsNamedAndTheFinishedOnesKept) {
  testing::TempDir dir;
  StudyConfig c;
  c.configs = "cpu:1,cpu:1+lr=1e30";
  c.repeats = 2;
  c.limit_train = 256;
  c.limit_test = 64;
  c.out_dir = dir / "study";
  const std::string message = error_of<Error>([&] { run_study(c, nullptr); });
  const std::string folder = c.out_dir + "/cpu:1+lr=1e30/seed-0";
  EXPECT_EQ(message.rfind("--configs cpu:1+lr=1e30, seed 0 (run folder " + folder +
                              ") failed; "
                              "the 1 finished run(s) are kept and `epoch study --resume --out " +
                              c.out_dir + "` trains the rest: ",
                          0),
            0u)
      << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_TRUE(fs::exists(c.out_dir + "/cpu:1/seed-0/study-run.json"));
  EXPECT_FALSE(fs::exists(folder + "/study-run.json"));
  EXPECT_FALSE(fs::exists(c.out_dir + "/study.json"));
  // Starting it again is refused, spelling the command that continues it.
  const std::string again = error_of<ConfigError>([&] { run_study(c, nullptr); });
  EXPECT_NE(
      again.find("did not finish: continue it with `epoch study --resume --out " + c.out_dir + "`"),
      std::string::npos)
      << again;
}

// An interrupted study resumed: the runs that finished are kept (their folders untouched), the
// one cut short is trained again from scratch, and study.json is the uninterrupted study's.
TEST(Study, ResumesAnInterruptedStudyKeepingItsFinishedRuns) {
  testing::TempDir dir;
  StudyConfig c;
  c.configs = "cpu:1,cpu:2";
  c.repeats = 2;
  c.limit_train = 256;
  c.limit_test = 64;
  c.seed = 7;
  c.out_dir = dir / "study";
  const StudyResult whole = run_study(c, nullptr);
  const nlohmann::json whole_json = read_json(c.out_dir + "/study.json");
  // Cut short while cpu:2 trained seed 8 (the last run): no record, no study.json.
  const std::string cut = c.out_dir + "/cpu:2/seed-8";
  ASSERT_TRUE(fs::exists(cut + "/metrics.jsonl"));
  fs::remove(cut + "/study-run.json");
  fs::remove(c.out_dir + "/study.json");
  fs::remove(c.out_dir + "/report.html");
  std::map<std::string, fs::file_time_type> untouched;
  for (const StudyRun& r : whole.runs)
    if (r.run_dir != cut) {
      untouched[r.run_dir + "/metrics.jsonl"] = fs::last_write_time(r.run_dir + "/metrics.jsonl");
      untouched[r.run_dir + "/study-run.json"] = fs::last_write_time(r.run_dir + "/study-run.json");
    }
  ASSERT_EQ(untouched.size(), 6u);

  // A new study there is refused; a resumed one with other settings names the setting.
  EXPECT_NE(error_of<ConfigError>([&] { run_study(c, nullptr); }).find("--resume"),
            std::string::npos);
  StudyConfig other = stored_study(c.out_dir);
  EXPECT_EQ(other.configs, c.configs);
  EXPECT_EQ(other.seed, 7u);
  EXPECT_EQ(other.limit_train, 256);
  other.configs = "cpu:1,cpu:3";
  std::string message = error_of<ConfigError>([&] { run_study(other, nullptr); });
  EXPECT_NE(message.find("--resume: --configs \"cpu:1,cpu:3\" differs from the interrupted "
                         "study's \"cpu:1,cpu:2\""),
            std::string::npos)
      << message;
  other = stored_study(c.out_dir);
  other.repeats = 3;
  message = error_of<ConfigError>([&] { run_study(other, nullptr); });
  EXPECT_NE(message.find("--repeats 3 differs"), std::string::npos) << message;

  const StudyResult resumed = run_study(stored_study(c.out_dir), nullptr);
  for (const auto& [path, time] : untouched)
    EXPECT_EQ(fs::last_write_time(path), time) << path << " was written again";
  EXPECT_TRUE(fs::exists(cut + "/study-run.json"));
  const nlohmann::json resumed_json = read_json(c.out_dir + "/study.json");
  EXPECT_EQ(resumed_json["comparisons"], whole_json["comparisons"]);
  EXPECT_EQ(resumed_json["margin"], whole_json["margin"]);
  ASSERT_EQ(resumed.runs.size(), whole.runs.size());
  for (std::size_t i = 0; i < whole.runs.size(); ++i) {
    EXPECT_EQ(resumed.runs[i].config, whole.runs[i].config);
    EXPECT_EQ(resumed.runs[i].seed, whole.runs[i].seed);
    EXPECT_EQ(resumed.runs[i].figure, whole.runs[i].figure) << i;
    EXPECT_EQ(resumed.runs[i].run_dir, whole.runs[i].run_dir);
    if (resumed.runs[i].run_dir != cut) {
      EXPECT_EQ(resumed.runs[i].wall_s, whole.runs[i].wall_s);
    }
  }
  // Resuming a finished study trains nothing and gives the same again.
  const StudyResult again = run_study(stored_study(c.out_dir), nullptr);
  EXPECT_EQ(read_json(c.out_dir + "/study.json"), resumed_json);
  EXPECT_EQ(again.runs.size(), whole.runs.size());
  // A folder with no study is not one to resume.
  EXPECT_THROW(stored_study(dir / "none"), IoError);
}

TEST(Study, BadSettingsAreOneClearError) {
  testing::TempDir dir;
  StudyConfig c;
  c.out_dir = dir / "s";
  c.repeats = 1;
  EXPECT_THROW(run_study(c, nullptr), ConfigError);
  c.repeats = 2;
  c.configs = "cpu:1,cuda-nocudnn";  // one that runs
  EXPECT_THROW(run_study(c, nullptr), ConfigError);
  c.configs = "cpu:1,cpu:2";
  c.protocol = "mnist-gan";
  EXPECT_THROW(run_study(c, nullptr), ConfigError);
  c.protocol = "prednet-study";  // needs --data
  EXPECT_THROW(run_study(c, nullptr), ConfigError);
  c.protocol = "autoencoder";
  c.margin = 0.0;
  EXPECT_THROW(run_study(c, nullptr), ConfigError);
}

}  // namespace
}  // namespace epoch::study
