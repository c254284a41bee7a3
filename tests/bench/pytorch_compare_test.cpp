// The PyTorch comparison's pairing, with a stand-in for bench/reference's run_torch.sh (the
// real one needs PyTorch): epoch's runs alternate with the reference's, the ratio is the
// median of per-pair ratios, and a reference that fails or prints no number is one clear
// error naming the script.
#include "epoch/bench/pytorch_compare.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "testing/testing.h"

namespace epoch::bench {
namespace {

/// A reference folder whose run_torch.sh runs `body` (bash) and counts its calls.
std::string fake_reference(const testing::TempDir& dir, const std::string& body) {
  const std::string ref = dir / "reference";
  std::filesystem::create_directories(ref);
  std::ofstream(ref + "/run_torch.sh") << "echo call >> '" << ref << "/calls'\n" << body << "\n";
  return ref;
}

int calls(const std::string& ref) {
  std::ifstream in(ref + "/calls");
  int n = 0;
  std::string line;
  while (std::getline(in, line)) ++n;
  return n;
}

ComputeBenchConfig small_config() {
  ComputeBenchConfig c;
  c.model = "autoencoder";
  c.batch_size = 8;
  c.warmup = 1;
  c.steps = 10;
  c.execution.threads = 1;
  return c;
}

TEST(PytorchCompare, PairsEpochsRunsWithTheReferencesAndTakesTheMedianRatio) {
  testing::TempDir dir;
  const std::string ref = fake_reference(
      dir, R"(echo "torch noise"; echo '{"train_images_per_s": 100.0, "torch_version": "9.9"}')");
  ComputeBenchResult last;
  const PairedResult r = compare_compute_with_pytorch(small_config(), 3, ref, &last);
  EXPECT_EQ(calls(ref), 3);
  EXPECT_EQ(r.repeats, 3);
  EXPECT_EQ(r.pytorch, 100.0);
  EXPECT_EQ(r.torch_version, "9.9");
  EXPECT_GT(r.epoch, 0.0);
  EXPECT_DOUBLE_EQ(r.ratio, r.epoch / 100.0);  // a constant reference: the same median
  EXPECT_GT(last.train_images_per_s, 0.0);
}

TEST(PytorchCompare, AFailingOrSilentReferenceIsOneClearError) {
  testing::TempDir dir;
  const std::string failing = fake_reference(dir, "echo 'No module named torch'; exit 1");
  try {
    compare_compute_with_pytorch(small_config(), 1, failing);
    ADD_FAILURE() << "no error";
  } catch (const IoError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("train_bench.py"), std::string::npos) << what;
    EXPECT_NE(what.find("No module named torch"), std::string::npos) << what;
  }
  testing::TempDir other;
  const std::string wrong = fake_reference(other, R"(echo '{"images": 3}')");
  try {
    compare_compute_with_pytorch(small_config(), 1, wrong);
    ADD_FAILURE() << "no error";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("train_images_per_s"), std::string::npos) << e.what();
  }
  EXPECT_THROW(find_reference_dir(dir / "nowhere"), IoError);
}

TEST(PytorchCompare, ThePipelineComparisonIsCatdogsAugmentedPipelineOnly) {
  PipelineBenchConfig p;
  p.model = "fmnist-cnn";
  EXPECT_THROW(compare_pipeline_with_pytorch(p, 1, "/nonexistent"), ConfigError);
}

}  // namespace
}  // namespace epoch::bench
