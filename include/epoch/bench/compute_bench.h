// Compute-only benchmark: training steps (forward, loss, backward, optimizer) and inference of
// a zoo model on synthetic in-memory data. Warm-up, then the median of timed steps, with
// achieved GFLOP/s (training = 3x forward FLOPs, as BENCHMARKING.md counts).
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "epoch/train/execution.h"

namespace epoch::bench {

struct ComputeBenchConfig {
  std::string model = "fmnist-cnn";
  std::int64_t batch_size = 64;
  /// The device, threads, kernels (determinism), convolution algorithm, cuDNN and
  /// perturbation, as `epoch train` takes them.
  train::ExecutionConfig execution;
  int warmup = 5;
  int steps = 20;  // timed steps (at least 10 are required)
  std::string optimizer = "adam";
  std::uint64_t seed = 0;
};

struct ComputeBenchResult {
  ComputeBenchConfig config;
  int threads_used = 0;
  std::int64_t forward_flops_per_sample = 0;
  std::int64_t frames_per_sample = 1;  // a video model's clip length (its figures per frame too)
  double train_step_ms_median = 0, train_step_ms_min = 0, train_images_per_s = 0, train_gflops = 0;
  double infer_ms_median = 0, infer_images_per_s = 0, infer_gflops = 0;
  // Under mpirun (several ranks): each rank's batch is the batch; the step's communication.
  int world_size = 1;
  double global_train_images_per_s = 0;  // over every rank
  double comm_ms_median = 0;             // the all-reduces, on the communication thread
  double comm_exposed_ms_median = 0;     // of them, what the step waited for
  double comm_hidden_fraction = 1.0;     // of the timed steps' communication, hidden by backward
  std::int64_t comm_bytes_per_step = 0;
  std::vector<std::int64_t> bucket_counts;  // the gradient buckets' floats, in order
  double peak_rss_mib = 0.0;                // this process's peak resident memory
  nlohmann::json to_json() const;
};

ComputeBenchResult run_compute_bench(const ComputeBenchConfig& config);

}  // namespace epoch::bench
