// --determinism strict gives the same final weights, bit for bit, at every thread count and
// every loader worker count: the small zoo models trained briefly at 1, 2 and 3 threads, and
// from an image folder (decoding and augmentation in the workers) at 0 and 2 workers.
// --perturb order is seeded: the same seed gives the same bits, another seed other bits.
// (Every zoo model, the large ones too, is checked by bench/strict_determinism.py, a table in
// docs/BENCHMARKS.md.)
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "epoch/data/image.h"
#include "epoch/tensor/safetensors.h"
#include "epoch/train/recipe.h"
#include "epoch/train/trainer.h"
#include "testing/testing.h"
#include "train/run_testing.h"

namespace epoch::train {
namespace {

using testing::expect_same_checkpoint_tensors;

TrainConfig short_run(const std::string& model, const std::string& out, int threads) {
  TrainConfig c = recipe_for(model);
  c.data.source = "synthetic";
  c.data.synthetic_count = 48;
  c.run.batch_size = 16;
  c.run.epochs = 1;
  c.run.out_dir = out;
  c.run.quiet = true;
  c.run.seed = 5;
  c.execution.threads = threads;
  c.execution.determinism = Determinism::strict;
  return c;
}

// True when the two checkpoints hold the same model tensors, bit for bit.
bool same_weights(const std::string& a, const std::string& b) {
  const SafetensorsFile fa = load_safetensors(a), fb = load_safetensors(b);
  if (fa.tensors.size() != fb.tensors.size()) return false;
  for (std::size_t i = 0; i < fa.tensors.size(); ++i)
    if (fa.tensors[i].tensor.to_vector() != fb.tensors[i].tensor.to_vector()) return false;
  return true;
}

class StrictModel : public ::testing::TestWithParam<const char*> {};

TEST_P(StrictModel, SameWeightsAtOneTwoAndThreeThreads) {
  testing::TempDir dir;
  const std::string one = train(short_run(GetParam(), dir / "t1", 1), stdout).checkpoint;
  for (int threads : {2, 3}) {
    SCOPED_TRACE(::testing::Message() << threads << " threads against 1");
    const std::string many =
        train(short_run(GetParam(), dir / std::string("t").append(std::to_string(threads)), threads), stdout)
            .checkpoint;
    expect_same_checkpoint_tensors(one, many);
  }
}

INSTANTIATE_TEST_SUITE_P(Zoo, StrictModel,
                         ::testing::Values("fmnist-cnn", "autoencoder", "catdog", "cifar10-keras",
                                           "cifar10-tf"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& ch : s)
                             if (ch == '-') ch = '_';
                           return s;
                         });

TEST(StrictDeterminism, SameWeightsAtZeroAndTwoLoaderWorkers) {
  testing::TempDir dir;
  for (const char* cls : {"cat", "dog"})
    for (int i = 0; i < 12; ++i) {
      const std::string folder = dir / ("data/" + std::string(cls));
      std::filesystem::create_directories(folder);
      data::Image im{40, 36, 3, std::vector<std::uint8_t>(40 * 36 * 3)};
      for (std::size_t p = 0; p < im.pixels.size(); ++p)
        im.pixels[p] = static_cast<std::uint8_t>((p * (cls[0] == 'c' ? 7 : 13) + i * 31) % 251);
      data::write_png(folder + "/" + std::to_string(i) + ".png", im);
    }
  std::string checkpoints[2];
  for (int workers : {0, 2}) {
    TrainConfig c = short_run("catdog", dir / std::string("w").append(std::to_string(workers)), 2);
    c.data.source = dir / "data";  // the recipe's augmentation: crops and flips in the workers
    c.data.workers = workers;
    c.data.val_split = 0.25;
    checkpoints[workers / 2] = train(c, stdout).checkpoint;
  }
  expect_same_checkpoint_tensors(checkpoints[0], checkpoints[1]);
}

TEST(StrictDeterminism, PerturbOrderIsSeededAndThreadCountInvariant) {
  testing::TempDir dir;
  const auto run = [&](const std::string& name, std::uint64_t seed, int threads) {
    TrainConfig c = short_run("cifar10-keras", dir / name, threads);
    c.execution.perturb = Perturb::order;
    c.execution.perturb_seed = seed;
    return train(c, stdout).checkpoint;
  };
  const std::string plain = train(short_run("cifar10-keras", dir / "plain", 2), stdout).checkpoint;
  const std::string a1 = run("a1", 11, 1), a2 = run("a2", 11, 2), b2 = run("b2", 12, 2);
  expect_same_checkpoint_tensors(a1, a2);
  EXPECT_FALSE(same_weights(a2, b2)) << "another --perturb-seed changed nothing";
  EXPECT_FALSE(same_weights(a2, plain)) << "--perturb order changed nothing";
}

}  // namespace
}  // namespace epoch::train
