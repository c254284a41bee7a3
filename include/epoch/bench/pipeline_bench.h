// Input-pipeline and end-to-end benchmarks: how fast images are decoded and augmented alone
// (per core and with N workers), and where a training step's time goes when a real dataset
// feeds it (waiting for data, forward, backward, optimizer), with a verdict naming the
// bottleneck.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "epoch/train/execution.h"

namespace epoch::bench {

struct PipelineBenchConfig {
  std::string model = "catdog";  // the output size and the recipe's augmentation
  std::string data;              // as `epoch train --data` (image folders are what it is for)
  int workers = 1;               // loader threads for the parallel measurement
  std::int64_t batch_size = 32;
  std::int64_t images = 1000;  // images per measurement (cycling over the data)
  bool augment = true;         // the model's recipe augmentation, else the evaluation resize
  std::uint64_t seed = 0;
};

struct PipelineBenchResult {
  PipelineBenchConfig config;
  std::int64_t dataset_images = 0;
  double mean_file_kib = 0, mean_source_width = 0, mean_source_height = 0;  // as decoded
  std::string output;                                                       // "3x64x64"
  std::string augmentation;   // AugmentConfig::describe()
  double read_per_s = 0;      // one thread: file reads alone (page cache)
  double decode_per_s = 0;    // one thread: read + decode (DCT-scaled)
  double per_core_per_s = 0;  // one thread: read + decode + augment + preprocess
  double workers_per_s = 0;   // the Loader with `workers` threads, whole batches
  nlohmann::json to_json() const;
};

PipelineBenchResult run_pipeline_bench(const PipelineBenchConfig& config);

struct EndToEndBenchConfig {
  std::string model = "catdog";
  std::string data;
  train::ExecutionConfig execution;  // device, threads, kernels, as `epoch train` takes them
  std::int64_t batch_size = 32;
  int workers = -1;  // -1: as `epoch train` chooses
  int prefetch = 2;
  std::int64_t cache_mib = 1024;
  /// Fill the decoded-image cache before timing (the steady state of epochs 2+); false times
  /// the first epoch's decoding too.
  bool warm_cache = true;
  int warmup = 5;
  int steps = 50;
  std::uint64_t seed = 0;
};

struct EndToEndBenchResult {
  EndToEndBenchConfig config;
  int threads_used = 0, workers_used = 0;
  double images_per_s = 0;  // timed steps: images / total time
  double step_ms = 0;       // mean step time
  double wait_ms = 0, forward_ms = 0, backward_ms = 0, optimizer_ms = 0;  // means per step
  double compute_only_images_per_s = 0;  // the same model and batch on in-memory data
  double fraction_of_compute = 0;        // images_per_s / compute_only_images_per_s
  std::int64_t cached_images = 0, dataset_images = 0;
  std::string verdict;  // one line: the bottleneck and what to change
  nlohmann::json to_json() const;
};

EndToEndBenchResult run_end_to_end_bench(const EndToEndBenchConfig& config);

}  // namespace epoch::bench
