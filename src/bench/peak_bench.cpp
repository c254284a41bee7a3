// The fp32 matrix-multiply peak (see peak_bench.h): C = A B through ops::matmul, the same
// oneDNN matmul the dense layers run, under the bench's own context (fast kernels, --threads).
#include "epoch/bench/peak_bench.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <vector>

#include "bench/bench_util.h"
#include "epoch/ops/backend.h"
#include "epoch/ops/linear.h"
#include "epoch/tensor/device.h"
#include "epoch/tensor/error.h"

namespace epoch::bench {

nlohmann::json PeakBenchResult::to_json() const {
  return {{"benchmark", "peak"},
          {"op", "matmul f32"},
          {"size", config.size},
          {"threads", threads_used},
          {"isa", isa},
          {"impl", impl},
          {"warmup", config.warmup},
          {"repeats", config.repeats},
          {"best_gflops", best_gflops},
          {"median_gflops", median_gflops},
          {"best_ms", best_ms},
          {"median_ms", median_ms}};
}

PeakBenchResult run_peak_bench(const PeakBenchConfig& c) {
  if (c.size < 1) EPOCH_THROW(ConfigError, "--peak-size must be at least 1");
  if (c.repeats < 1) EPOCH_THROW(ConfigError, "the peak needs at least one timed product");
  if (c.warmup < 0) EPOCH_THROW(ConfigError, "--warmup must be >= 0");
  if (parse_device(c.execution.device).is_cuda())
    EPOCH_THROW(ConfigError, "--peak measures the CPU's matrix-multiply peak: drop --device");
  const ops::ContextGuard context(train::kernel_context(c.execution));
  const std::int64_t n = c.size;
  const Tensor a = uniform_tensor({n, n}, 0, 0xa, -1.0f, 1.0f);
  const Tensor b = uniform_tensor({n, n}, 0, 0xb, -1.0f, 1.0f);

  PeakBenchResult r;
  r.config = c;
  r.threads_used = ops::num_threads();
  r.isa = ops::onednn_cpu_isa();
  {
    ops::KernelTrace trace;
    (void)ops::matmul(a, b);  // the first product (primitive creation) is never timed
    r.impl = trace.records().empty() ? "" : trace.records().back().impl;
  }
  for (int i = 0; i < c.warmup; ++i) (void)ops::matmul(a, b);
  std::vector<double> ms;
  for (int i = 0; i < c.repeats; ++i) {
    const auto t0 = Clock::now();
    const Tensor prod = ops::matmul(a, b);
    ms.push_back(ms_between(t0, Clock::now()));
  }
  const double flops =
      2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
  r.best_ms = *std::min_element(ms.begin(), ms.end());
  r.median_ms = median(ms);
  r.best_gflops = flops / (r.best_ms / 1e3) / 1e9;
  r.median_gflops = flops / (r.median_ms / 1e3) / 1e9;
  return r;
}

void add_percent_of_peak(nlohmann::json& row, double peak_gflops,
                         std::initializer_list<const char*> figures) {
  row["peak_gflops"] = peak_gflops;
  for (const char* f : figures) {
    const std::string name = f;
    const std::string stem = name.substr(0, name.size() - std::string("_gflops").size());
    row[stem + "_percent_of_peak"] =
        peak_gflops > 0 ? 100.0 * row[name].get<double>() / peak_gflops : 0.0;
  }
}

}  // namespace epoch::bench
