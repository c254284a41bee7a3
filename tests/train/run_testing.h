// What the trainer tests share: a small run's configuration, a run's metrics.jsonl records,
// the check that two checkpoints hold the same tensors, and a small generated video dataset.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "epoch/data/synth_video.h"
#include "epoch/tensor/safetensors.h"
#include "epoch/train/train_config.h"

namespace epoch::testing {

/// A small fmnist-cnn run on generated images: 768 samples (24 steps of 32 per epoch), 2
/// epochs, 2 threads, seed 3, a step record every 4 steps, quiet, in `out`.
inline train::TrainConfig small_run_config(const std::string& out) {
  train::TrainConfig c;
  c.run.model = "fmnist-cnn";
  c.data.source = "synthetic";
  c.data.synthetic_count = 768;
  c.run.epochs = 2;
  c.run.batch_size = 32;
  c.run.out_dir = out;
  c.run.quiet = true;
  c.execution.threads = 2;
  c.run.seed = 3;
  c.run.log_every = 4;
  return c;
}

inline std::vector<nlohmann::json> read_metrics(const std::string& run_dir) {
  std::ifstream in(run_dir + "/metrics.jsonl");
  std::vector<nlohmann::json> out;
  std::string line;
  while (std::getline(in, line)) out.push_back(nlohmann::json::parse(line));
  return out;
}

inline void expect_same_checkpoint_tensors(const std::string& a, const std::string& b) {
  const SafetensorsFile fa = load_safetensors(a), fb = load_safetensors(b);
  ASSERT_EQ(fa.tensors.size(), fb.tensors.size());
  for (std::size_t i = 0; i < fa.tensors.size(); ++i) {
    EXPECT_EQ(fa.tensors[i].name, fb.tensors[i].name);
    EXPECT_EQ(fa.tensors[i].tensor.to_vector(), fb.tensors[i].tensor.to_vector())
        << fa.tensors[i].name;
  }
}

/// `out_dir`: `sequences` training and 1 validation sequences of `frames` frames at 32x24.
inline std::string write_small_video(const std::string& out_dir, std::int64_t sequences,
                                     std::int64_t frames, std::uint64_t seed) {
  data::VideoSynthConfig v;
  v.out_dir = out_dir;
  v.sequences = sequences;
  v.val_sequences = 1;
  v.frames = frames;
  v.width = 32;
  v.height = 24;
  v.seed = seed;
  data::write_synth_video(v);
  return v.out_dir;
}

}  // namespace epoch::testing
