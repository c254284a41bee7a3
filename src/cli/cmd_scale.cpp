// `epoch scale`: the flags of data-parallel scaling on this machine, and its table; the
// measurement (the launches, the fit, the projection, scale.json and scale.svg) is the bench
// layer's (bench/scale_run.h).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/config_flags.h"
#include "cli/flag_checks.h"
#include "epoch/bench/scale_run.h"
#include "epoch/models/zoo.h"
#include "epoch/train/config_fields.h"
#include "epoch/train/recipe.h"
#include "epoch/tensor/error.h"
#include "nlohmann/json.hpp"

namespace epoch::cli {
namespace {

using nlohmann::json;

struct ScaleOptions {
  bench::ScaleRunConfig run;
  std::string out;
  bool json = false;
  ConfigFlags flags;  // the execution flags but --threads (--threads-per-rank here)
};

int run_scale(ScaleOptions o) {
  o.run.execution = flag_values(o.flags).execution;
  o.run.execution_args = given_execution_args(o.flags);
  train::TrainConfig files;
  files.run.input_shape = o.run.input_shape;
  train::use_model_file_options(files);  // before the model file is first read
  const models::ModelSpec& spec = models::find_model(o.run.model);
  const bench::ScaleReport report = bench::run_scaling(o.run, o.json ? nullptr : stderr);
  if (!o.out.empty()) bench::write_scale_report(o.out, report);
  const json& result = report.result;
  const json& points = result["points"];
  const std::vector<bench::ProjectionPoint>& projection = report.projection;
  const std::int64_t grad_bytes = result["gradient_bytes"].get<std::int64_t>();
  if (o.json) {
    std::printf("%s\n", result.dump().c_str());
    return 0;
  }
  std::printf("%s, %s scaling, %d thread(s) per rank, batch %lld%s, %s (%lld gradient bytes)\n",
              o.run.model.c_str(), o.run.strong ? "strong" : "weak", o.run.threads_per_rank,
              static_cast<long long>(o.run.batch_size), o.run.strong ? " in all" : " per rank",
              spec.summary.c_str(), static_cast<long long>(grad_bytes));
  std::printf(
      "ranks  img/s     efficiency  step ms  all-reduce ms  exposed ms  hidden  "
      "bucketed GB/s  plain GB/s\n");
  std::printf(
      "(all-reduce ms: from each bucket's hand-over to its end, waiting for the other ranks "
      "included; GB/s: bus bandwidth from a barrier, the averager over the step's buckets "
      "against one plain MPI_Allreduce of the same bytes, alternated)\n");
  for (const json& p : points) {
    std::printf("%5d  %8.1f  %9.1f%%  %7.2f", p["ranks"].get<int>(),
                p["images_per_s"].get<double>(), 100 * p["efficiency"].get<double>(),
                p["step_ms"].get<double>());
    if (p.contains("comm_ms"))
      std::printf("  %13.2f  %10.2f  %5.0f%%  %13.2f  %10.2f", p["comm_ms"].get<double>(),
                  p["comm_exposed_ms"].get<double>(), 100 * p["comm_hidden_fraction"].get<double>(),
                  p.value("bucketed_bus_gbytes_per_s", 0.0),
                  p.value("plain_bus_gbytes_per_s", 0.0));
    std::printf("\n");
  }
  if (!projection.empty()) {
    std::printf("projection (not measured) at %.0f Gb/s, %.1f us: ", o.run.bandwidth_gbps,
                o.run.latency_us);
    for (const auto& q : projection) std::printf(" %d: %.1f%%", q.nodes, 100 * q.efficiency);
    std::printf("   (source: 73%% at 1024 CPUs)\n");
  }
  return 0;
}

}  // namespace

void add_scale_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<ScaleOptions>();
  CLI::App* cmd = app.add_subcommand(
      "scale", "Data-parallel scaling over MPI ranks on this machine, and its projection");
  cmd->add_option("--model", o->run.model, "Model from `epoch models`, or a model file")
      ->capture_default_str();
  cmd->add_option("--input-shape", o->run.input_shape, train::config_field("input_shape").help);
  cmd->add_option("--ranks", o->run.ranks, "Rank counts, starting with 1 (1,2,4)")
      ->delimiter(',')
      ->check(in_range(1, 1024));
  cmd->add_flag(
      "--weak", [o](std::int64_t) { o->run.strong = false; },
      "Each rank keeps --batch-size (the default)");
  cmd->add_flag("--strong", o->run.strong, "--batch-size in all, split over the ranks");
  cmd->add_option("--threads-per-rank", o->run.threads_per_rank, "CPU threads of each rank")
      ->capture_default_str()
      ->check(in_range(1, 1024));
  cmd->add_option("--batch-size", o->run.batch_size, "Samples per rank (weak) or in all (strong)")
      ->capture_default_str()
      ->check(positive());
  cmd->add_option("--steps", o->run.steps, "Timed steps per run (10 to 100000)")
      ->capture_default_str()
      ->check(in_range(10, 100000));
  cmd->add_option("--warmup", o->run.warmup, "Untimed steps first (0 to 100000)")
      ->capture_default_str()
      ->check(in_range(0, 100000));
  cmd->add_option("--bandwidth-gbps", o->run.bandwidth_gbps,
                  "The projection's link, Gb/s (0.001 to 100000)")
      ->capture_default_str()
      ->check(in_range(0.001, 100000));
  cmd->add_option("--latency-us", o->run.latency_us,
                  "The projection's latency, microseconds (0 to 10000000)")
      ->capture_default_str()
      ->check(in_range(0, 1e7));
  cmd->add_flag("--oversubscribe", o->run.oversubscribe,
                "Allow more ranks than this machine has cores");
  cmd->add_option("--mpirun", o->run.mpirun, "The MPI launcher")->capture_default_str();
  cmd->add_option("--out", o->out, "Write scale.json and scale.svg here");
  cmd->add_flag("--json", o->json, "Print one JSON object");
  // --device, --determinism, --conv-algo, --cudnn, --perturb: passed on to every rank's bench.
  add_execution_flags(*cmd, o->flags, {"--threads"});
  cmd->callback([o, &exit_code] { exit_code = run_scale(*o); });
}

}  // namespace epoch::cli
