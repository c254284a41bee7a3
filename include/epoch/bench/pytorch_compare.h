// epoch side by side with PyTorch on the same machine (`epoch bench --compare pytorch`): the
// reference scripts in the repository's bench/reference (run_torch.sh starts them in their
// virtual environment), run alternately with epoch's own benchmark, and the median of the
// per-pair ratios (BENCHMARKING.md), so both see the same load of a shared machine.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "epoch/bench/compute_bench.h"
#include "epoch/bench/pipeline_bench.h"

namespace epoch::bench {

/// bench/reference: `given` (which must hold run_torch.sh), else found from the working
/// directory or the executable's folder upwards. IoError saying how to give it when absent.
std::string find_reference_dir(const std::string& given);

/// Runs `script` of `reference_dir` with `args` through run_torch.sh and returns the last JSON
/// object it printed; IoError with the end of its output when it fails or prints none.
nlohmann::json run_reference(const std::string& reference_dir, const std::string& script,
                             const std::string& args);

/// A training-throughput pair: epoch's, PyTorch's and their ratio.
struct PairedResult {
  double epoch = 0.0, pytorch = 0.0, ratio = 0.0;  // medians over the repeats
  int repeats = 0;
  std::string torch_version;
};

/// `reference_dir`: as find_reference_dir takes it ("": found).
/// `repeats` alternated pairs of run_compute_bench(config) and train_bench.py at the same
/// model, batch, threads, warm-up and steps: training images/s. `last` receives epoch's last
/// run (its other figures).
PairedResult compare_compute_with_pytorch(const ComputeBenchConfig& config, int repeats,
                                          const std::string& reference_dir,
                                          ComputeBenchResult* last = nullptr);

/// The same for the input pipeline (catdog's augmented pipeline only: ConfigError otherwise):
/// images per second per core.
PairedResult compare_pipeline_with_pytorch(const PipelineBenchConfig& config, int repeats,
                                           const std::string& reference_dir,
                                           PipelineBenchResult* last = nullptr);

}  // namespace epoch::bench
