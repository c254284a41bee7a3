// `epoch scale`: data-parallel scaling on this machine. For each rank count it launches
// `mpirun -np N epoch bench ...` itself (weak scaling: each rank keeps the batch; strong: the
// batch is split), then times plain MPI_Allreduce of the gradient's size (and smaller ones) the
// same way, fits the ring all-reduce's alpha-beta model, and projects the efficiency to many
// nodes on the network the flags describe, clearly labelled as a projection; a table, JSON and
// an SVG plot.
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "cli/child_process.h"
#include "cli/commands.h"
#include "cli/config_flags.h"
#include "cli/flag_checks.h"
#include "epoch/bench/scale.h"
#include "epoch/models/zoo.h"
#include "epoch/tensor/error.h"
#include "nlohmann/json.hpp"

namespace epoch::cli {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

struct ScaleOptions {
  std::string model = "cifar10-keras";
  std::vector<int> ranks{1, 2};
  bool strong = false;
  int threads_per_rank = 1;
  std::int64_t batch_size = 32;
  int steps = 10, warmup = 2;
  double bandwidth_gbps = 100.0, latency_us = 1.0;
  std::string mpirun = "mpirun";
  std::string out;
  bool json = false;
  bool oversubscribe = false;
  ConfigFlags flags;  // the execution flags but --threads (--threads-per-rank here)
};

std::string self_path() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("epoch") : p.string();
}

// Runs `mpirun -np N epoch ARGS` (in a process group of its own, ended with epoch) and returns
// the JSON rank 0 printed.
json run_ranks(const ScaleOptions& o, int np, const std::vector<std::string>& args) {
  std::vector<std::string> argv{o.mpirun};
  if (geteuid() == 0) argv.push_back("--allow-run-as-root");
  // (epoch checked the rank count against the cores itself: mpirun's own count of slots
  // varies with the machine's description of its cores)
  argv.insert(argv.end(), {"--oversubscribe", "-np", std::to_string(np), self_path()});
  argv.insert(argv.end(), args.begin(), args.end());
  std::string shown;
  for (const std::string& a : args) shown += " " + a;
  const ChildResult r = run_child(argv);
  const auto brace = r.output.find_first_of("[{");
  if (r.exit_code != 0 || brace == std::string::npos) {
    // The line epoch printed, else mpirun's first.
    std::string line;
    const auto at = r.output.find("epoch: ");
    const auto from = at == std::string::npos ? 0 : at;
    line = r.output.substr(from, r.output.find('\n', from) - from);
    EPOCH_THROW(IoError, o.mpirun, " -np ", np, " epoch", shown, " failed",
                line.empty() ? "" : ": " + line);
  }
  const auto end = r.output.find('\n', brace);
  try {
    return json::parse(
        r.output.substr(brace, end == std::string::npos ? std::string::npos : end - brace));
  } catch (const json::exception&) {
    EPOCH_THROW(IoError, o.mpirun, " -np ", np, " epoch", shown, " printed no result");
  }
}

/// The cores this process may run on.
int usable_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
}

/// MemAvailable of /proc/meminfo in MiB (0 when unknown).
double available_mib() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib / 1024.0;
  return 0.0;
}

int run_scale(const ScaleOptions& o) {
  const models::ModelSpec& spec = models::find_model(o.model);
  if (o.ranks.empty() || o.ranks.front() != 1)
    EPOCH_THROW(ConfigError, "--ranks must start with 1 (the baseline), e.g. 1,2,4");
  const int cores = usable_cores();
  for (int n : o.ranks)
    if (n > cores && !o.oversubscribe)
      EPOCH_THROW(ConfigError, "--ranks ", n, ": more ranks than this machine's ", cores,
                  " cores (each rank a process of its own); pass --oversubscribe to run them "
                  "anyway");
  for (int n : o.ranks)
    if (o.strong && o.batch_size % n != 0)
      EPOCH_THROW(ConfigError, "--strong splits --batch-size ", o.batch_size, " over ", n,
                  " ranks: it must divide evenly");
  // Measured points.
  json points = json::array();
  double base_ips = 0, base_step_s = 0, hidden_at_most_ranks = 1.0;
  std::int64_t grad_bytes = 0;
  std::string buckets;      // the bucket layout's float counts, for the averager's timing
  double per_rank_mib = 0;  // the one-rank run's peak memory
  for (int n : o.ranks) {
    const std::int64_t b = o.strong ? o.batch_size / n : o.batch_size;
    if (n > 1 && per_rank_mib > 0) {  // the memory the ranks will need, from the one-rank run
      const double need = per_rank_mib * n, have = available_mib();
      if (!o.json)
        std::fprintf(stderr,
                     "epoch scale: %d ranks need about %.1f GiB (%.0f MiB each, measured "
                     "on one rank); %.1f GiB available\n",
                     n, need / 1024, per_rank_mib, have / 1024);
      if (have > 0 && need > 0.9 * have)
        EPOCH_THROW(ConfigError, "--ranks ", n, ": the ranks would need about ",
                    std::llround(need / 1024), " GiB (", std::llround(per_rank_mib),
                    " MiB each, measured on one rank), more than the ", std::llround(have / 1024),
                    " GiB this machine has available");
    }
    std::vector<std::string> args{"bench",
                                  "--model",
                                  o.model,
                                  "--batch-size",
                                  std::to_string(b),
                                  "--threads",
                                  std::to_string(o.threads_per_rank),
                                  "--steps",
                                  std::to_string(o.steps),
                                  "--warmup",
                                  std::to_string(o.warmup),
                                  "--json"};
    for (const std::string& a : given_execution_args(o.flags)) args.push_back(a);
    const json r = run_ranks(o, n, args);
    if (n == 1) per_rank_mib = r.value("peak_rss_mib", 0.0);
    const double ips = r.value("world_size", 1) > 1 ? r["global_train_images_per_s"].get<double>()
                                                    : r["train_images_per_s"].get<double>();
    const double step_s = r["train_step_ms_median"].get<double>() / 1e3;
    if (n == 1) base_ips = ips, base_step_s = step_s;
    json p{{"ranks", n},
           {"batch_per_rank", b},
           {"images_per_s", ips},
           {"step_ms", step_s * 1e3},
           {"efficiency", ips / (base_ips * n)}};
    if (n > 1) {
      grad_bytes = r["comm_bytes_per_step"].get<std::int64_t>();
      buckets.clear();
      for (const json& c : r["bucket_counts"])
        buckets += (buckets.empty() ? "" : ",") + std::to_string(c.get<std::int64_t>());
      // (on the communication thread, from each bucket's hand-over: waiting for the other
      // ranks to reach it included)
      p["comm_ms"] = r["comm_ms_median"].get<double>();
      p["comm_exposed_ms"] = r["comm_exposed_ms_median"].get<double>();
      p["compute_ms"] = step_s * 1e3 - r["comm_exposed_ms_median"].get<double>();
      p["comm_hidden_fraction"] = r["comm_hidden_fraction"].get<double>();
      hidden_at_most_ranks = r["comm_hidden_fraction"].get<double>();
    }
    points.push_back(p);
  }
  // Plain MPI_Allreduce of the same bytes, and smaller sizes for the model's fit.
  std::vector<bench::AllReducePoint> timings;
  if (grad_bytes > 0) {
    const std::vector<std::int64_t> sizes = {4096, 65536, 1 << 20, grad_bytes};
    std::string list;
    for (std::int64_t s : sizes) list += (list.empty() ? "" : ",") + std::to_string(s);
    for (json& p : points) {
      const int n = p["ranks"].get<int>();
      if (n < 2) continue;
      const json r =
          run_ranks(o, n, {"bench", "--allreduce-bytes", list, "--allreduce-buckets", buckets});
      for (const json& t : r) {
        if (t.contains("buckets")) {  // the averager over the step's buckets against one
          // plain MPI_Allreduce of the same bytes, alternated in the same repetitions
          const double bucketed = t["seconds"].get<double>(),
                       plain = t["plain_seconds"].get<double>();
          p["bucketed_allreduce_ms"] = bucketed * 1e3;
          p["bucketed_bus_gbytes_per_s"] = bench::bus_bandwidth(n, grad_bytes, bucketed) / 1e9;
          p["plain_allreduce_ms"] = plain * 1e3;
          p["plain_bus_gbytes_per_s"] = bench::bus_bandwidth(n, grad_bytes, plain) / 1e9;
          continue;
        }
        timings.push_back({n, t["bytes"].get<std::int64_t>(), t["seconds"].get<double>()});
      }
      if (p.contains("bucketed_bus_gbytes_per_s") && p.contains("plain_bus_gbytes_per_s"))
        p["bucketed_over_plain_bandwidth"] = p["bucketed_bus_gbytes_per_s"].get<double>() /
                                             p["plain_bus_gbytes_per_s"].get<double>();
    }
  }
  json result{{"model", o.model},
              {"mode", o.strong ? "strong" : "weak"},
              {"threads_per_rank", o.threads_per_rank},
              {"determinism",
               train::determinism_name(flag_values(o.flags).execution.determinism)},
              {"batch_size", o.batch_size},
              {"gradient_bytes", grad_bytes},
              {"points", points}};
  std::vector<bench::ProjectionPoint> projection;
  if (timings.size() >= 2 && grad_bytes > 0) {
    try {
      const bench::AlphaBeta here = bench::fit_ring_alpha_beta(timings);
      result["local_fit"] = {
          {"alpha_us", here.alpha_s * 1e6},
          {"bandwidth_gbytes_per_s", here.beta_s_per_byte > 0 ? 1e-9 / here.beta_s_per_byte : 0.0}};
    } catch (const ConfigError&) {  // one rank count of timings of one size: no fit
    }
    bench::AlphaBeta net;
    net.alpha_s = o.latency_us * 1e-6;
    net.beta_s_per_byte = 8.0 / (o.bandwidth_gbps * 1e9);
    // Per-node compute: the one-rank step (weak scaling keeps it).
    projection = bench::project_efficiency(base_step_s, grad_bytes, hidden_at_most_ranks, net,
                                           {16, 32, 64, 128, 256, 512, 1024});
    json proj = json::array();
    for (const auto& q : projection)
      proj.push_back({{"nodes", q.nodes},
                      {"comm_ms", q.comm_s * 1e3},
                      {"exposed_ms", q.exposed_s * 1e3},
                      {"efficiency", q.efficiency}});
    result["projection"] = {
        {"label",
         "projection, not a measurement: ring all-reduce (alpha-beta model) on the "
         "network given, this machine's one-rank step as each node's compute, and the "
         "hidden fraction measured at the most ranks"},
        {"bandwidth_gbps", o.bandwidth_gbps},
        {"latency_us", o.latency_us},
        {"hidden_fraction", hidden_at_most_ranks},
        {"points", proj}};
  }
  result["source"] = {{"nodes", 1024},
                      {"efficiency", 0.73},
                      {"what",
                       "Intel-Caffe over MPI, AlexNet/ResNet-50 on 1024 CPUs "
                       "(Stampede2, Omni-Path)"}};
  if (!o.out.empty()) {
    fs::create_directories(o.out);
    std::ofstream(fs::path(o.out) / "scale.json") << result.dump(2) << "\n";
    std::vector<bench::ScalePlotPoint> measured;
    for (const json& p : points)
      measured.push_back({p["ranks"].get<int>(), p["efficiency"].get<double>()});
    std::ofstream(fs::path(o.out) / "scale.svg") << bench::scaling_svg(
        o.model + ": data-parallel efficiency (" + (o.strong ? "strong" : "weak") + " scaling)",
        measured, projection, {1024, 0.73}, "source: 73% at 1024 CPUs");
  }
  if (o.json) {
    std::printf("%s\n", result.dump().c_str());
    return 0;
  }
  std::printf("%s, %s scaling, %d thread(s) per rank, batch %lld%s, %s (%lld gradient bytes)\n",
              o.model.c_str(), o.strong ? "strong" : "weak", o.threads_per_rank,
              static_cast<long long>(o.batch_size), o.strong ? " in all" : " per rank",
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
    std::printf("projection (not measured) at %.0f Gb/s, %.1f us: ", o.bandwidth_gbps,
                o.latency_us);
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
  cmd->add_option("--model", o->model, "Model from `epoch models`")->capture_default_str();
  cmd->add_option("--ranks", o->ranks, "Rank counts, starting with 1 (1,2,4)")
      ->delimiter(',')
      ->check(in_range(1, 1024));
  cmd->add_flag(
      "--weak", [o](std::int64_t) { o->strong = false; },
      "Each rank keeps --batch-size (the default)");
  cmd->add_flag("--strong", o->strong, "--batch-size in all, split over the ranks");
  cmd->add_option("--threads-per-rank", o->threads_per_rank, "CPU threads of each rank")
      ->capture_default_str()
      ->check(in_range(1, 1024));
  cmd->add_option("--batch-size", o->batch_size, "Samples per rank (weak) or in all (strong)")
      ->capture_default_str()
      ->check(positive());
  cmd->add_option("--steps", o->steps, "Timed steps per run (10 to 100000)")
      ->capture_default_str()
      ->check(in_range(10, 100000));
  cmd->add_option("--warmup", o->warmup, "Untimed steps first (0 to 100000)")
      ->capture_default_str()
      ->check(in_range(0, 100000));
  cmd->add_option("--bandwidth-gbps", o->bandwidth_gbps,
                  "The projection's link, Gb/s (0.001 to 100000)")
      ->capture_default_str()
      ->check(in_range(0.001, 100000));
  cmd->add_option("--latency-us", o->latency_us,
                  "The projection's latency, microseconds (0 to 10000000)")
      ->capture_default_str()
      ->check(in_range(0, 1e7));
  cmd->add_flag("--oversubscribe", o->oversubscribe,
                "Allow more ranks than this machine has cores");
  cmd->add_option("--mpirun", o->mpirun, "The MPI launcher")->capture_default_str();
  cmd->add_option("--out", o->out, "Write scale.json and scale.svg here");
  cmd->add_flag("--json", o->json, "Print one JSON object");
  // --device, --determinism, --conv-algo, --cudnn, --perturb: passed on to every rank's bench.
  add_execution_flags(*cmd, o->flags, {"--threads"});
  cmd->callback([o, &exit_code] { exit_code = run_scale(*o); });
}

}  // namespace epoch::cli
