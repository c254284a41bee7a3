// The study runner: configurations parsed and refused with one clear error, those this machine
// cannot run listed with the reason, every configuration of a seed started from the same
// weights and data, and study.json holding the runs and the paired comparisons.
#include "epoch/study/study.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "epoch/tensor/error.h"
#include "epoch/tensor/storage.h"
#include "testing/testing.h"

namespace epoch::study {
namespace {

TEST(Study, ParsesConfigurationsAndRefusesBadOnes) {
  const std::vector<StudyConfigSpec> s = parse_study_configs(
      "cpu:1,cpu:2+perturb,cpu:2+reference,cuda,cuda-nocudnn,cpu:3+perturb-order");
  ASSERT_EQ(s.size(), 6u);
  EXPECT_EQ(s[0].threads, 1);
  EXPECT_FALSE(s[0].perturb != "none" || s[0].reference);
  EXPECT_EQ(s[1].perturb, "ulp");
  EXPECT_EQ(s[5].perturb, "order");
  EXPECT_EQ(s[5].threads, 3);
  EXPECT_EQ(s[1].threads, 2);
  EXPECT_TRUE(s[2].reference);
  EXPECT_EQ(s[3].device, "cuda");
  EXPECT_TRUE(s[3].cudnn);
  EXPECT_FALSE(s[4].cudnn);
  // Variants chain, and +lr=X sets the learning rate on any configuration.
  const std::vector<StudyConfigSpec> v =
      parse_study_configs("cpu:2+perturb+lr=0.0005,cuda-nocudnn+lr=1e-3,cpu:1+reference");
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0].perturb, "ulp");
  EXPECT_DOUBLE_EQ(v[0].lr, 0.0005);
  EXPECT_FALSE(v[1].cudnn);
  EXPECT_DOUBLE_EQ(v[1].lr, 1e-3);
  EXPECT_EQ(v[2].lr, 0.0);
  for (const char* bad : {"cpu",
                          "cpu:0",
                          "cpu:x",
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
                          "cpu:2+lr=0.1x",
                          "cpu:2+lr=1+lr=2",
                          "cpu:2+perturb+perturb-order",
                          "cpu:2+reference+reference",
                          "cuda+perturb",
                          "cuda+reference",
                          "cuda-nocudnn+"})
    EXPECT_THROW(parse_study_configs(bad), ConfigError) << bad;
  EXPECT_EQ(skip_reason(s[0]), "");
  if (memory::cuda_device_count() == 0) {
    EXPECT_NE(skip_reason(s[3]), "");
    EXPECT_NE(skip_reason(s[4]), "");
  }
}

TEST(Study, RunsEveryConfigurationPerSeedAndComparesThemPaired) {
  testing::TempDir dir;
  StudyConfig c;
  c.configs = "cpu:1,cpu:2+perturb,cpu:2+reference,cuda-nocudnn,cpu:2+perturb-order";
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
  for (const auto& [names, cmp] : r.comparisons) {
    EXPECT_TRUE(cmp.paired);
    EXPECT_FALSE(cmp.words.empty());
    // The same seeds, weights within an ulp or a summation order of each other: never
    // called different.
    EXPECT_NE(cmp.verdict, Verdict::different)
        << names.first << " vs " << names.second << ": " << cmp.words;
  }
  // Every run is a run folder of its own, and the perturbed one says so.
  std::ifstream config(r.runs[1].run_dir + "/config.json");
  const nlohmann::json j = nlohmann::json::parse(config);
  EXPECT_EQ(j["perturb"], "ulp");
  std::ifstream order_config(r.runs[3].run_dir + "/config.json");
  EXPECT_EQ(nlohmann::json::parse(order_config)["perturb"], "order");
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
  for (const auto& [names, cmp] : r.comparisons) {
    SCOPED_TRACE(names.first + " vs " + names.second + ": " + cmp.words);
    if (names.second == "cpu:2+lr=0.0002") {
      EXPECT_EQ(cmp.verdict, Verdict::different);
      EXPECT_LT(cmp.paired_test.difference, 0.0);  // the protocol's rate lower
      EXPECT_NE(cmp.words.find(names.first + " lower"), std::string::npos);
    } else {
      EXPECT_EQ(cmp.verdict, Verdict::equivalent);
    }
  }
  std::ifstream config(r.runs[2].run_dir + "/config.json");
  EXPECT_FLOAT_EQ(nlohmann::json::parse(config)["optimizer"]["lr"].get<float>(), 0.0002f);
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
