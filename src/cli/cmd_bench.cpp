// `epoch bench`: how fast, and what holds it back. Compute only (synthetic in-memory inputs),
// the input pipeline alone (--pipeline), or end to end on a dataset (--data) with the step
// time broken down and a verdict; lists of batch sizes, workers and threads sweep every
// combination (a table, or JSON); --compare pytorch runs the PyTorch reference alternately.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "epoch/bench/compute_bench.h"
#include "epoch/bench/pipeline_bench.h"
#include "epoch/tensor/error.h"

namespace epoch::cli {
namespace {
namespace fs = std::filesystem;
using json = nlohmann::json;

struct BenchOptions {
  bench::ComputeBenchConfig config;
  std::vector<std::int64_t> batch_sizes{64};
  std::vector<int> threads{0};
  std::vector<int> workers{-1};
  std::string data;
  bool pipeline = false;
  bool no_augment = false;
  std::int64_t images = 1000;
  std::int64_t cache_mib = 1024;
  bool cold_cache = false;
  int prefetch = 2;
  std::string compare;
  int repeats = 3;
  std::string reference_dir;
  bool json = false;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0.0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// bench/reference beside the sources: --reference-dir, else found from the working
/// directory or the executable's folder upwards.
std::string find_reference_dir(const std::string& given) {
  if (!given.empty()) {
    if (!fs::exists(fs::path(given) / "run_torch.sh"))
      EPOCH_THROW(IoError, given, ": no run_torch.sh (expected the repository's bench/reference)");
    return given;
  }
  std::vector<fs::path> starts{fs::current_path()};
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) starts.push_back(exe.parent_path());
  for (fs::path dir : starts) {
    for (int up = 0; up < 4 && !dir.empty(); ++up, dir = dir.parent_path()) {
      if (fs::exists(dir / "bench" / "reference" / "run_torch.sh"))
        return (dir / "bench" / "reference").string();
      if (dir == dir.parent_path()) break;
    }
  }
  EPOCH_THROW(IoError,
              "bench/reference/run_torch.sh not found: run from the repository or pass "
              "--reference-dir");
}

/// Runs a reference script through run_torch.sh and returns the last JSON line it printed.
json run_reference(const std::string& ref_dir, const std::string& script, const std::string& args) {
  const std::string command =
      "bash '" + ref_dir + "/run_torch.sh' pypi '" + ref_dir + "/" + script + "' " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) EPOCH_THROW(IoError, "cannot run ", command);
  std::string out, last_json;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, pipe)) {
    out += buf;
    std::string line = buf;
    if (!line.empty() && line[0] == '{') last_json = line;
  }
  const int status = pclose(pipe);
  if (status != 0 || last_json.empty()) {
    std::string tail = out.size() > 600 ? out.substr(out.size() - 600) : out;
    std::replace(tail.begin(), tail.end(), '\n', ' ');
    EPOCH_THROW(IoError, "the PyTorch reference failed (", script, "): ", tail);
  }
  return json::parse(last_json);
}

json compute_row(const BenchOptions& o, std::int64_t batch, int threads) {
  bench::ComputeBenchConfig c = o.config;
  c.batch_size = batch;
  c.threads = threads;
  if (o.compare.empty()) return bench::run_compute_bench(c).to_json();
  const std::string ref = find_reference_dir(o.reference_dir);
  const int t = threads > 0 ? threads : static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  std::ostringstream args;
  args << "--model " << c.model << " --batch-size " << batch << " --threads " << t << " --warmup "
       << c.warmup << " --steps " << c.steps << " --json";
  std::vector<double> ratios, ours, theirs;
  json last;
  for (int r = 0; r < o.repeats; ++r) {  // alternate: epoch, PyTorch, epoch, PyTorch, ...
    last = bench::run_compute_bench(c).to_json();
    const json torch = run_reference(ref, "train_bench.py", args.str());
    const double a = last["train_images_per_s"], b = torch["train_images_per_s"];
    ours.push_back(a);
    theirs.push_back(b);
    ratios.push_back(a / b);
    last["torch_version"] = torch["torch_version"];
  }
  last["train_images_per_s"] = median(ours);
  last["pytorch_train_images_per_s"] = median(theirs);
  last["ratio_vs_pytorch"] = median(ratios);
  last["repeats"] = o.repeats;
  return last;
}

json pipeline_row(const BenchOptions& o, std::int64_t batch, int workers) {
  bench::PipelineBenchConfig p;
  p.model = o.config.model;
  p.data = o.data;
  p.batch_size = batch;
  p.workers = workers < 0 ? 1 : workers;
  p.images = o.images;
  p.augment = !o.no_augment;
  p.seed = o.config.seed;
  if (o.compare.empty()) return bench::run_pipeline_bench(p).to_json();
  if (p.model != "catdog" || !p.augment)
    EPOCH_THROW(ConfigError,
                "--compare pytorch --pipeline reproduces catdog's augmented "
                "pipeline only (bench/reference/pipeline_bench.py)");
  const std::string ref = find_reference_dir(o.reference_dir);
  std::vector<double> ratios, ours, theirs;
  json last;
  for (int r = 0; r < o.repeats; ++r) {
    last = bench::run_pipeline_bench(p).to_json();
    std::ostringstream args;
    args << "'" << o.data << "' --images " << p.images;
    const json torch = run_reference(ref, "pipeline_bench.py", args.str());
    const double a = last["per_core_per_s"], b = torch["per_core"];
    ours.push_back(a);
    theirs.push_back(b);
    ratios.push_back(a / b);
  }
  last["per_core_per_s"] = median(ours);
  last["pytorch_per_core_per_s"] = median(theirs);
  last["ratio_vs_pytorch"] = median(ratios);
  last["repeats"] = o.repeats;
  return last;
}

json end_to_end_row(const BenchOptions& o, std::int64_t batch, int threads, int workers) {
  bench::EndToEndBenchConfig e;
  e.model = o.config.model;
  e.data = o.data;
  e.device = o.config.device;
  e.batch_size = batch;
  e.threads = threads;
  e.workers = workers;
  e.prefetch = o.prefetch;
  e.cache_mib = o.cache_mib;
  e.warm_cache = !o.cold_cache;
  e.warmup = o.config.warmup;
  e.steps = o.config.steps;
  e.seed = o.config.seed;
  return bench::run_end_to_end_bench(e).to_json();
}

void print_compute(const json& r) {
  std::printf(
      "%-13s batch %4lld  threads %d  train %9.1f img/s (%6.2f ms, %5.1f GFLOP/s)  "
      "inference %9.1f img/s",
      r["model"].get<std::string>().c_str(), r["batch_size"].get<long long>(),
      r["threads"].get<int>(), r["train_images_per_s"].get<double>(),
      r["train_step_ms_median"].get<double>(), r["train_gflops"].get<double>(),
      r["infer_images_per_s"].get<double>());
  if (r.contains("ratio_vs_pytorch"))
    std::printf("  | PyTorch %s %9.1f img/s  ratio %.2f",
                r["torch_version"].get<std::string>().c_str(),
                r["pytorch_train_images_per_s"].get<double>(), r["ratio_vs_pytorch"].get<double>());
  std::printf("\n");
}

void print_pipeline(const json& r) {
  const bool files = r["mean_file_kib"].get<double>() > 0;
  std::printf("pipeline %s -> %s, augmentation: %s (%lld images",
              r["data"].get<std::string>().c_str(), r["output"].get<std::string>().c_str(),
              r["augmentation"].get<std::string>().c_str(), r["dataset_images"].get<long long>());
  if (files)
    std::printf("; decoded %.0fx%.0f, %.1f KiB files)\n", r["mean_decoded_width"].get<double>(),
                r["mean_decoded_height"].get<double>(), r["mean_file_kib"].get<double>());
  else
    std::printf(", in memory)\n");
  if (files)
    std::printf("  one core: read %.0f/s, read+decode %.0f/s, read+decode+augment %.0f images/s\n",
                r["read_per_s"].get<double>(), r["decode_per_s"].get<double>(),
                r["per_core_per_s"].get<double>());
  else
    std::printf("  one core: augment %.0f images/s\n", r["per_core_per_s"].get<double>());
  std::printf("  loader, %d workers: %.0f images/s\n", r["workers"].get<int>(),
              r["workers_per_s"].get<double>());
  if (r.contains("ratio_vs_pytorch"))
    std::printf(
        "  PyTorch/PIL per core: %.0f images/s  ratio %.2f (median of %d alternating pairs)\n",
        r["pytorch_per_core_per_s"].get<double>(), r["ratio_vs_pytorch"].get<double>(),
        r["repeats"].get<int>());
}

void print_end_to_end(const json& r) {
  std::printf(
      "%-13s batch %4lld  threads %d  workers %d  %8.1f img/s  step %6.2f ms = wait %5.2f + "
      "forward %6.2f + backward %6.2f + optimizer %5.2f  (%3.0f%% of compute-only %.1f)\n",
      r["model"].get<std::string>().c_str(), r["batch_size"].get<long long>(),
      r["threads"].get<int>(), r["workers"].get<int>(), r["images_per_s"].get<double>(),
      r["step_ms"].get<double>(), r["wait_ms"].get<double>(), r["forward_ms"].get<double>(),
      r["backward_ms"].get<double>(), r["optimizer_ms"].get<double>(),
      100.0 * r["fraction_of_compute"].get<double>(), r["compute_only_images_per_s"].get<double>());
  std::printf("  %s\n", r["verdict"].get<std::string>().c_str());
}

int run_bench(const BenchOptions& o) {
  if (!o.compare.empty() && o.compare != "pytorch")
    EPOCH_THROW(ConfigError, "--compare ", o.compare, ": only pytorch is known");
  if (o.pipeline && o.data.empty()) EPOCH_THROW(ConfigError, "--pipeline needs --data");
  if (!o.compare.empty() && !o.data.empty() && !o.pipeline)
    EPOCH_THROW(ConfigError,
                "--compare pytorch times compute only or --pipeline; drop --data "
                "or add --pipeline");
  json rows = json::array();
  for (std::int64_t batch : o.batch_sizes)
    for (int threads : o.threads)
      for (int workers : o.workers) {
        json r;
        if (o.pipeline) {
          r = pipeline_row(o, batch, workers);
          if (!o.json) print_pipeline(r);
        } else if (!o.data.empty()) {
          r = end_to_end_row(o, batch, threads, workers);
          if (!o.json) print_end_to_end(r);
        } else {
          r = compute_row(o, batch, threads);
          if (!o.json) print_compute(r);
        }
        std::fflush(stdout);
        rows.push_back(r);
        if (o.data.empty() && !o.pipeline && &workers != &o.workers.back()) break;  // no workers
      }
  if (o.json) std::printf("%s\n", (rows.size() == 1 ? rows[0] : rows).dump().c_str());
  return 0;
}

template <typename T>
void check_list(const std::vector<T>& v, const char* flag, T min) {
  if (v.empty()) EPOCH_THROW(ConfigError, flag, ": an empty list");
  for (T x : v)
    if (x < min) EPOCH_THROW(ConfigError, flag, ": ", x, " is below ", min);
}

}  // namespace

void add_bench_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<BenchOptions>();
  bench::ComputeBenchConfig& c = o->config;
  CLI::App* cmd = app.add_subcommand(
      "bench", "Time training and inference, the input pipeline, or both together");
  cmd->add_option("--model", c.model, "Model from `epoch models`")->capture_default_str();
  cmd->add_option("--batch-size", o->batch_sizes, "Samples per step; a list sweeps (16,32,64)")
      ->delimiter(',')
      ->capture_default_str()
      ->check(positive());
  cmd->add_option("--threads", o->threads, "CPU threads (0: all cores); a list sweeps")
      ->delimiter(',')
      ->check(thread_count());
  cmd->add_option("--workers", o->workers, "Input pipeline threads (with --data); a list sweeps")
      ->delimiter(',')
      ->check(in_range(-1, 64));
  cmd->add_option("--data", o->data, "Time end to end on this dataset (as train --data)");
  cmd->add_flag("--pipeline", o->pipeline, "Time decoding and augmentation alone (needs --data)");
  cmd->add_flag("--no-augment", o->no_augment, "Pipeline without the recipe's augmentation");
  cmd->add_option("--images", o->images, "Images per pipeline measurement")->capture_default_str();
  cmd->add_option("--cache-mib", o->cache_mib, "Decoded-image cache (end to end)")
      ->capture_default_str();
  cmd->add_flag("--cold-cache", o->cold_cache, "Do not fill the decoded-image cache before timing");
  cmd->add_option("--prefetch", o->prefetch, "Batches prepared ahead")->capture_default_str();
  cmd->add_option("--device", c.device, "cpu, cuda or cuda:N")->capture_default_str();
  cmd->add_option("--warmup", c.warmup, "Untimed steps first")
      ->capture_default_str()
      ->check(non_negative());
  cmd->add_option("--steps", c.steps, "Timed steps (>= 10)")->capture_default_str();
  cmd->add_option("--optimizer", c.optimizer, "Optimizer of the training step")
      ->capture_default_str();
  cmd->add_flag("--reference-kernels", c.reference_kernels, "Time the plain reference kernels");
  cmd->add_option("--compare", o->compare, "pytorch: run the PyTorch reference alternately");
  cmd->add_option("--repeats", o->repeats, "Alternating pairs for --compare")
      ->capture_default_str()
      ->check(positive());
  cmd->add_option("--reference-dir", o->reference_dir, "The repository's bench/reference");
  cmd->add_flag("--json", o->json, "Print JSON (one object, or an array for a sweep)");
  cmd->callback([o, &exit_code] {
    check_list<std::int64_t>(o->batch_sizes, "--batch-size", 1);
    check_list<int>(o->threads, "--threads", 0);
    check_list<int>(o->workers, "--workers", -1);
    exit_code = run_bench(*o);
  });
}

}  // namespace epoch::cli
