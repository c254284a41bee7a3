// `epoch bench`: compute-only training and inference throughput of a zoo model on synthetic
// in-memory data (warm-up, then the median of timed steps).
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "epoch/bench/compute_bench.h"

namespace epoch::cli {
namespace {

struct BenchOptions {
  bench::ComputeBenchConfig config;
  bool json = false;
};

int run_bench(const BenchOptions& o) {
  const bench::ComputeBenchResult r = bench::run_compute_bench(o.config);
  if (o.json) {
    std::printf("%s\n", r.to_json().dump().c_str());
    return 0;
  }
  std::printf("%s on %s, batch %lld, %d threads, %s kernels, %.2f MFLOP/sample forward\n",
              o.config.model.c_str(), o.config.device.c_str(), static_cast<long long>(o.config.batch_size), r.threads_used,
              o.config.reference_kernels ? "reference" : "fast",
              static_cast<double>(r.forward_flops_per_sample) / 1e6);
  std::printf("train:     %9.1f images/s  (step %.2f ms median, %.2f ms min, %.1f GFLOP/s)\n",
              r.train_images_per_s, r.train_step_ms_median, r.train_step_ms_min, r.train_gflops);
  std::printf("inference: %9.1f images/s  (batch %.2f ms median, %.1f GFLOP/s)\n",
              r.infer_images_per_s, r.infer_ms_median, r.infer_gflops);
  return 0;
}

}  // namespace

void add_bench_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<BenchOptions>();
  bench::ComputeBenchConfig& c = o->config;
  CLI::App* cmd = app.add_subcommand("bench", "Time training and inference steps");
  cmd->add_option("--model", c.model, "Model from `epoch models`")->capture_default_str();
  cmd->add_option("--batch-size", c.batch_size, "Samples per step")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--device", c.device, "cpu, cuda or cuda:N")->capture_default_str();
  cmd->add_option("--threads", c.threads, "CPU threads (0: all cores)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--warmup", c.warmup, "Untimed steps first")->capture_default_str()->check(CLI::NonNegativeNumber);
  cmd->add_option("--steps", c.steps, "Timed steps (>= 10)")->capture_default_str();
  cmd->add_option("--optimizer", c.optimizer, "Optimizer of the training step")->capture_default_str();
  cmd->add_flag("--reference-kernels", c.reference_kernels, "Time the plain reference kernels");
  cmd->add_flag("--json", o->json, "Print one JSON line");
  cmd->callback([o, &exit_code] { exit_code = run_bench(*o); });
}

}  // namespace epoch::cli
