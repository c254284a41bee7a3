// The execution settings: each determinism level's kernels, the one mapping to the kernels'
// context, the words of each enum from its table, and configurations stored before
// --determinism reference existed ("cpu_kernels") still read as they ran.
#include "epoch/train/execution.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "epoch/train/config_fields.h"
#include "epoch/train/train_config.h"

namespace epoch::train {
namespace {

using json = nlohmann::json;

TEST(Execution, EachLevelRunsItsKernels) {
  EXPECT_EQ(cpu_kernels_for(Determinism::fast), ops::CpuKernels::fast);
  EXPECT_EQ(cpu_kernels_for(Determinism::reproducible), ops::CpuKernels::fast);
  EXPECT_EQ(cpu_kernels_for(Determinism::strict), ops::CpuKernels::strict);
  EXPECT_EQ(cpu_kernels_for(Determinism::reference), ops::CpuKernels::reference);
}

TEST(Execution, KernelContextCarriesEverySetting) {
  ExecutionConfig e;
  e.threads = 3;
  e.determinism = Determinism::strict;
  e.conv_algorithm = ops::ConvAlgorithm::direct;
  e.cudnn = false;
  e.perturb = Perturb::order;
  e.perturb_seed = 42;
  const ops::Context c = kernel_context(e);
  EXPECT_EQ(c.kernels, ops::CpuKernels::strict);
  EXPECT_EQ(c.threads, 3);
  EXPECT_EQ(c.conv, ops::ConvAlgorithm::direct);
  EXPECT_FALSE(c.cudnn);
  ASSERT_TRUE(c.perturb_order.has_value());
  EXPECT_EQ(*c.perturb_order, 42u);
  // ulp moves the initial weights only: the kernels' summation order stays fixed.
  e.perturb = Perturb::ulp;
  EXPECT_FALSE(kernel_context(e).perturb_order.has_value());
}

TEST(Execution, WordsRoundTripAndBadOnesNameTheFlagAndTheChoices) {
  for (const auto& w : kDeterminismWords) {
    EXPECT_EQ(parse_determinism(w.name), w.value);
    EXPECT_STREQ(determinism_name(w.value), w.name);
  }
  try {
    parse_determinism("sloppy");
    FAIL() << "sloppy was taken";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--determinism sloppy: expected fast, reproducible, "
                                         "strict or reference"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(words_of(kPerturbWords), (std::vector<std::string>{"none", "ulp", "order"}));
  EXPECT_THROW(ops::parse_conv_algorithm("winograd"), ConfigError);
  // The settings table's choices are the tables' words.
  EXPECT_EQ(config_field("determinism").choices, words_of(kDeterminismWords));
  EXPECT_EQ(config_field("perturb").choices, words_of(kPerturbWords));
  EXPECT_EQ(config_field("conv_algorithm").choices, words_of(ops::kConvAlgorithmWords));
}

TEST(Execution, StoredCpuKernelsOfOlderRunsReadAsTheirKernels) {
  json j = TrainConfig().to_json();
  EXPECT_FALSE(j.contains("cpu_kernels")) << "the old key is written again";
  j["determinism"] = "strict";
  j["cpu_kernels"] = "reference";  // the plain kernels, whatever the determinism
  EXPECT_EQ(TrainConfig::from_json(j).execution.determinism, Determinism::reference);
  j["cpu_kernels"] = "auto";
  EXPECT_EQ(TrainConfig::from_json(j).execution.determinism, Determinism::strict);
  j["cpu_kernels"] = "onednn";
  EXPECT_THROW(TrainConfig::from_json(j), ConfigError);
  j["cpu_kernels"] = 3;
  EXPECT_THROW(TrainConfig::from_json(j), ConfigError);
}

TEST(Execution, ExecutionFieldsAreMarkedInTheTable) {
  std::vector<std::string> keys;
  for (const ConfigField& f : config_fields())
    if (f.execution) keys.push_back(f.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"device", "threads", "determinism", "perturb",
                                            "perturb_seed", "conv_algorithm", "cudnn"}));
}

}  // namespace
}  // namespace epoch::train
