// The machine's measured fp32 matrix-multiply peak: what the fast path's own matmul (oneDNN)
// reaches on a large square product at a thread count, so that a model's GFLOP/s can be read
// against the physical limit of the machine it was measured on (BENCHMARKING.md).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "epoch/train/execution.h"

namespace epoch::bench {

struct PeakBenchConfig {
  /// The threads (0: every core) and kernels the product runs on; the device is the CPU.
  train::ExecutionConfig execution;
  std::int64_t size = 4096;  // M = N = K of C = A B
  int warmup = 2;            // untimed products first
  int repeats = 10;          // timed products
};

struct PeakBenchResult {
  PeakBenchConfig config;
  int threads_used = 0;
  std::string isa;   // the instruction set oneDNN dispatches to (after ONEDNN_MAX_CPU_ISA)
  std::string impl;  // the implementation that ran, as a KernelTrace names it
  double best_gflops = 0, median_gflops = 0;  // 2 size^3 / time
  double best_ms = 0, median_ms = 0;
  nlohmann::json to_json() const;
};

/// Times ops::matmul on (size, size) f32 matrices on the CPU fast path.
/// requires: size >= 1, repeats >= 1, warmup >= 0 (ConfigError naming the flag otherwise).
PeakBenchResult run_peak_bench(const PeakBenchConfig& config);

/// Reads a benchmark's figures against the peak: sets "peak_gflops" and, for each GFLOP/s
/// figure of `row` named in `figures` ("train_gflops"), "<name less _gflops>_percent_of_peak".
void add_percent_of_peak(nlohmann::json& row, double peak_gflops,
                         std::initializer_list<const char*> figures);

}  // namespace epoch::bench
