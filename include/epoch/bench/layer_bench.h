// Per-layer timing of a zoo model (`epoch bench --layers`): for each named layer of its
// LayerStack, the median forward and backward time on its own input, the implementations that
// ran (from a KernelTrace), its FLOPs and GFLOP/s and its share of the layers' time; then the
// loss and one full training step (train::Step) for comparison.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "epoch/ops/backend.h"
#include "epoch/tensor/tensor.h"
#include "epoch/train/execution.h"

namespace epoch::bench {

struct LayerBenchConfig {
  std::string model = "fmnist-cnn";
  std::int64_t batch_size = 64;
  /// Threads, kernels (determinism), convolution algorithm, as `epoch train` takes them;
  /// the device must be the CPU.
  train::ExecutionConfig execution;
  /// Untimed runs before the timed ones (the first also records the kernels); -1: 2, or 1
  /// when the steps are cut for a slow model.
  int warmup = -1;
  /// Timed runs of each layer and of the full step (at least 3); 0: 10, or fewer for a model
  /// whose step takes over 1.5 s (about 15 s of timed steps per phase, at least 3).
  int steps = 0;
  std::string optimizer = "adam";  // of the full step compared against
  std::uint64_t seed = 0;
};

/// One named layer. FLOPs count the whole batch: forward = the layer's multiply-adds x 2
/// (Module::flops; convolutions and dense layers, 0 for the rest); backward = forward x 2 (the
/// input's and the weights' gradients), or x 1 where the input needs no gradient (the first
/// layer with parameters: the step computes the weights' gradient alone).
struct LayerTiming {
  std::string name;           // "conv1"
  std::string describe;       // "Conv2d(3 -> 32, 3x3)"
  Shape output;               // per sample
  bool input_grad = false;    // backward computes the input's gradient (as in the full step)
  bool has_backward = false;  // any gradient flows through the layer at all
  double forward_ms = 0, backward_ms = 0;  // medians
  double forward_flops = 0, backward_flops = 0;
  std::vector<ops::KernelRecord> forward_kernels, backward_kernels;  // (op, impl), deduplicated
};

struct LayerBenchResult {
  LayerBenchConfig config;
  int threads_used = 0;
  int warmup_used = 0, steps_used = 0;  // what the automatic choices came to
  double first_step_ms = 0;             // the first (untimed) full step, which chose them
  std::string isa;                      // oneDNN's instruction set
  std::vector<LayerTiming> layers;
  LayerTiming loss;  // the model's loss on the last layer's output ("loss")
  // train::Step::run on the same batch: medians of its whole time and of its phases.
  double step_ms = 0, step_forward_ms = 0, step_backward_ms = 0, step_update_ms = 0;
  double layers_forward_ms() const;
  double layers_backward_ms() const;
  nlohmann::json to_json() const;
};

/// requires: a model made of named layers (models::LayerStack), batch_size >= 1, steps 0 or
/// >= 3, warmup >= -1 (ConfigError otherwise). Runs on the CPU.
LayerBenchResult run_layer_bench(const LayerBenchConfig& config);

/// The distinct implementations of a layer's records, in the order first seen (a record that
/// ran several, "a + b", counts each).
std::vector<std::string> distinct_impls(const std::vector<ops::KernelRecord>& records);

/// A --layers result (LayerBenchResult::to_json) read against the matrix-multiply peak:
/// add_percent_of_peak for the layers' and the step's GFLOP/s, and each layer's
/// "percent_of_peak" (its forward and backward multiply-adds over its time).
void add_layer_percent_of_peak(nlohmann::json& row, double peak_gflops);

}  // namespace epoch::bench
