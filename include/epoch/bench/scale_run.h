// `epoch scale`: data-parallel scaling on this machine. For each rank count it launches
// `mpirun -np N epoch bench ...` (weak scaling: each rank keeps the batch; strong: the batch is
// split), then times plain MPI_Allreduce of the gradient's size (and smaller ones) the same
// way, fits the ring all-reduce's alpha-beta model (scale.h), and projects the efficiency to
// many nodes on the network described, labelled as a projection; the result as JSON, and its
// plot.
#pragma once

#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "epoch/bench/scale.h"
#include "epoch/train/execution.h"

namespace epoch::bench {

struct ScaleRunConfig {
  std::string model = "cifar10-keras";
  std::string input_shape;  // a Caffe net's C,H,W where its data layer gives none (bench's flag)
  std::vector<int> ranks{1, 2};  // starting with 1, the baseline
  bool strong = false;           // split batch_size over the ranks (else each keeps it)
  int threads_per_rank = 1;
  std::int64_t batch_size = 32;
  int steps = 10, warmup = 2;
  double bandwidth_gbps = 100.0, latency_us = 1.0;  // the projection's network
  std::string mpirun = "mpirun";
  bool oversubscribe = false;  // allow more ranks than cores
  /// The kernels the ranks run (recorded in the result), and the `epoch bench` flags that ask
  /// for them, passed on to every launch.
  train::ExecutionConfig execution;
  std::vector<std::string> execution_args;
  std::string epoch_binary;  // the epoch to launch ("": this process's executable)
};

struct ScaleReport {
  /// model, mode, threads_per_rank, determinism, batch_size, gradient_bytes, points (ranks,
  /// images_per_s, efficiency, step and communication times, bus bandwidths), local_fit,
  /// projection (labelled), source.
  nlohmann::json result;
  std::vector<ProjectionPoint> projection;
};

/// Measures as described above. ConfigError for ranks that do not start with 1, more ranks
/// than cores (without oversubscribe), a strong batch that does not split, or ranks that would
/// need more memory than the machine has available (measured on one rank; the estimate goes to
/// `notes` when given); IoError naming the launch that failed.
ScaleReport run_scaling(const ScaleRunConfig& config, std::FILE* notes);

/// scale.json and scale.svg in `out_dir` (created).
void write_scale_report(const std::string& out_dir, const ScaleReport& report);

}  // namespace epoch::bench
