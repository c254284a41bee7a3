// `epoch scale`'s measurement (see scale_run.h).
#include "epoch/bench/scale_run.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "child_process.h"
#include "epoch/models/zoo.h"
#include "epoch/tensor/error.h"

namespace epoch::bench {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

std::string self_path() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("epoch") : p.string();
}

// Runs `mpirun -np N epoch ARGS` (in a process group of its own, ended with epoch) and returns
// the JSON rank 0 printed.
json run_ranks(const ScaleRunConfig& o, int np, const std::vector<std::string>& args) {
  std::vector<std::string> argv{o.mpirun};
  if (geteuid() == 0) argv.push_back("--allow-run-as-root");
  // (epoch checked the rank count against the cores itself: mpirun's own count of slots
  // varies with the machine's description of its cores)
  argv.insert(argv.end(), {"--oversubscribe", "-np", std::to_string(np), o.epoch_binary.empty() ? self_path() : o.epoch_binary});
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

}  // namespace

ScaleReport run_scaling(const ScaleRunConfig& o, std::FILE* notes) {
  (void)models::find_model(o.model);  // an unknown model: one line before any launch
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
      if (notes != nullptr)
        std::fprintf(notes,
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
    if (!o.input_shape.empty()) {
      args.push_back("--input-shape");
      args.push_back(o.input_shape);
    }
    for (const std::string& a : o.execution_args) args.push_back(a);
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
  std::vector<AllReducePoint> timings;
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
          p["bucketed_bus_gbytes_per_s"] = bus_bandwidth(n, grad_bytes, bucketed) / 1e9;
          p["plain_allreduce_ms"] = plain * 1e3;
          p["plain_bus_gbytes_per_s"] = bus_bandwidth(n, grad_bytes, plain) / 1e9;
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
               train::determinism_name(o.execution.determinism)},
              {"batch_size", o.batch_size},
              {"gradient_bytes", grad_bytes},
              {"points", points}};
  std::vector<ProjectionPoint> projection;
  if (timings.size() >= 2 && grad_bytes > 0) {
    try {
      const AlphaBeta here = fit_ring_alpha_beta(timings);
      result["local_fit"] = {
          {"alpha_us", here.alpha_s * 1e6},
          {"bandwidth_gbytes_per_s", here.beta_s_per_byte > 0 ? 1e-9 / here.beta_s_per_byte : 0.0}};
    } catch (const ConfigError&) {  // one rank count of timings of one size: no fit
    }
    AlphaBeta net;
    net.alpha_s = o.latency_us * 1e-6;
    net.beta_s_per_byte = 8.0 / (o.bandwidth_gbps * 1e9);
    // Per-node compute: the one-rank step (weak scaling keeps it).
    projection = project_efficiency(base_step_s, grad_bytes, hidden_at_most_ranks, net,
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
  ScaleReport report;
  report.result = std::move(result);
  report.projection = std::move(projection);
  return report;
}

void write_scale_report(const std::string& out_dir, const ScaleReport& report) {
  const json& r = report.result;
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) EPOCH_THROW(IoError, out_dir, ": cannot create: ", ec.message());
  std::ofstream(fs::path(out_dir) / "scale.json") << r.dump(2) << "\n";
  std::vector<ScalePlotPoint> measured;
  for (const json& p : r["points"])
    measured.push_back({p["ranks"].get<int>(), p["efficiency"].get<double>()});
  const std::string model = r["model"].get<std::string>(), mode = r["mode"].get<std::string>();
  std::ofstream(fs::path(out_dir) / "scale.svg")
      << scaling_svg(model + ": data-parallel efficiency (" + mode + " scaling)", measured,
                     report.projection, {1024, 0.73}, "source: 73% at 1024 CPUs");
}

}  // namespace epoch::bench
