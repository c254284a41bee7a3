// What the trainer tests share: a run's metrics.jsonl records, the check that two checkpoints
// hold the same tensors, and a small generated video dataset.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "epoch/data/synth_video.h"
#include "epoch/tensor/safetensors.h"

namespace epoch::testing {

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
