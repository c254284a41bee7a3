// `epoch bench`: how fast, and what holds it back. Compute only (synthetic in-memory inputs),
// layer by layer (--layers), the input pipeline alone (--pipeline), or end to end on a dataset
// (--data) with the step time broken down and a verdict; --peak measures the machine's fp32
// matrix-multiply peak, against which the compute figures of the same run are then read;
// lists of batch sizes, workers and threads sweep every combination (a table, or JSON);
// --compare pytorch runs the PyTorch reference alternately.

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/config_flags.h"
#include "cli/flag_checks.h"
#include "epoch/bench/compute_bench.h"
#include "epoch/bench/layer_bench.h"
#include "epoch/bench/peak_bench.h"
#include "epoch/bench/pipeline_bench.h"
#include "epoch/bench/pytorch_compare.h"
#include "epoch/bench/scale.h"
#include "epoch/dist/process_group.h"
#include "epoch/ops/backend.h"
#include "epoch/tensor/error.h"
#include "epoch/train/config_fields.h"
#include "epoch/train/recipe.h"

namespace epoch::cli {
namespace {
using json = nlohmann::json;

struct BenchOptions {
  bench::ComputeBenchConfig config;
  ConfigFlags flags;  // the execution flags but --threads (a list here)
  std::vector<std::int64_t> batch_sizes{64};
  std::vector<int> threads{0};
  std::vector<int> workers{-1};
  std::string input_shape;  // a Caffe net's C,H,W (model files)
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
  bool layers = false;
  bool peak = false;
  std::int64_t peak_size = 4096;
  std::vector<std::int64_t> allreduce_bytes;    // hidden: plain MPI_Allreduce timings (epoch scale)
  std::vector<std::int64_t> allreduce_buckets;  // hidden: the averager over these float counts
  // Which flags were given (the defaults of --layers differ; --peak alone needs no model).
  bool model_given = false, steps_given = false, warmup_given = false, peak_size_given = false;
};

json compute_row(const BenchOptions& o, std::int64_t batch, int threads, const json* peak) {
  bench::ComputeBenchConfig c = o.config;
  c.batch_size = batch;
  c.execution.threads = threads;
  json row;
  if (o.compare.empty()) {
    row = bench::run_compute_bench(c).to_json();
  } else {
    bench::ComputeBenchResult last;
    const bench::PairedResult pair = bench::compare_compute_with_pytorch(
        c, o.repeats, o.reference_dir, &last);
    row = last.to_json();
    row["torch_version"] = pair.torch_version;
    row["train_images_per_s"] = pair.epoch;
    row["pytorch_train_images_per_s"] = pair.pytorch;
    row["ratio_vs_pytorch"] = pair.ratio;
    row["repeats"] = pair.repeats;
  }
  if (peak != nullptr)
    bench::add_percent_of_peak(row, (*peak)["best_gflops"].get<double>(),
                               {"train_gflops", "infer_gflops"});
  return row;
}

json layers_row(const BenchOptions& o, std::int64_t batch, int threads, const json* peak) {
  bench::LayerBenchConfig c;
  c.model = o.config.model;
  c.batch_size = batch;
  c.execution = o.config.execution;
  c.execution.threads = threads;
  // --layers chooses its own counts unless given (see LayerBenchConfig): every layer is timed
  // apart and then the whole step, so a heavy model (deep-cnn) still finishes in time.
  c.warmup = o.warmup_given ? o.config.warmup : -1;
  c.steps = o.steps_given ? o.config.steps : 0;
  c.optimizer = o.config.optimizer;
  c.seed = o.config.seed;
  json row = bench::run_layer_bench(c).to_json();
  if (peak != nullptr) bench::add_layer_percent_of_peak(row, (*peak)["best_gflops"].get<double>());
  return row;
}

json peak_row(const BenchOptions& o, int threads) {
  bench::PeakBenchConfig p;
  p.execution = o.config.execution;
  p.execution.threads = threads;
  p.size = o.peak_size;
  return bench::run_peak_bench(p).to_json();
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
  bench::PipelineBenchResult last;
  const bench::PairedResult pair = bench::compare_pipeline_with_pytorch(
      p, o.repeats, o.reference_dir, &last);
  json row = last.to_json();
  row["per_core_per_s"] = pair.epoch;
  row["pytorch_per_core_per_s"] = pair.pytorch;
  row["ratio_vs_pytorch"] = pair.ratio;
  row["repeats"] = pair.repeats;
  return row;
}

json end_to_end_row(const BenchOptions& o, std::int64_t batch, int threads, int workers) {
  bench::EndToEndBenchConfig e;
  e.model = o.config.model;
  e.data = o.data;
  e.execution = o.config.execution;
  e.execution.threads = threads;
  e.batch_size = batch;
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
  std::printf("%-13s batch %4lld  threads %d  train %9.1f img/s (%6.2f ms, %5.1f GFLOP/s",
              r["model"].get<std::string>().c_str(), r["batch_size"].get<long long>(),
              r["threads"].get<int>(), r["train_images_per_s"].get<double>(),
              r["train_step_ms_median"].get<double>(), r["train_gflops"].get<double>());
  if (r.contains("peak_gflops"))
    std::printf(", %.1f%% of peak", r["train_percent_of_peak"].get<double>());
  std::printf(")  inference %9.1f img/s", r["infer_images_per_s"].get<double>());
  if (r.contains("peak_gflops"))
    std::printf(" (%.1f GFLOP/s, %.1f%% of peak)", r["infer_gflops"].get<double>(),
                r["infer_percent_of_peak"].get<double>());
  if (r.value("world_size", 1) > 1)
    std::printf(
        "  | %d ranks: %.1f img/s in all, all-reduce %.2f ms a step, %.2f ms of it "
        "exposed (%.0f%% hidden behind backward)",
        r["world_size"].get<int>(), r["global_train_images_per_s"].get<double>(),
        r["comm_ms_median"].get<double>(), r["comm_exposed_ms_median"].get<double>(),
        100.0 * r["comm_hidden_fraction"].get<double>());
  if (r.value("frames_per_sample", 1) > 1)
    std::printf("  | clips of %d frames: train %.2f frames/s, inference %.2f frames/s",
                r["frames_per_sample"].get<int>(), r["train_frames_per_s"].get<double>(),
                r["infer_frames_per_s"].get<double>());
  if (r.contains("ratio_vs_pytorch"))
    std::printf("  | PyTorch %s %9.1f img/s  ratio %.2f",
                r["torch_version"].get<std::string>().c_str(),
                r["pytorch_train_images_per_s"].get<double>(), r["ratio_vs_pytorch"].get<double>());
  std::printf("\n");
}

void print_peak(const json& r) {
  const long long n = r["size"].get<long long>();
  std::printf(
      "peak fp32 matmul %lldx%lldx%lld  threads %d  ISA %s (%s)  best %.1f GFLOP/s  median %.1f "
      "GFLOP/s  (%d timed products, median %.2f ms)\n",
      n, n, n, r["threads"].get<int>(), r["isa"].get<std::string>().c_str(),
      r["impl"].get<std::string>().c_str(), r["best_gflops"].get<double>(),
      r["median_gflops"].get<double>(), r["repeats"].get<int>(), r["median_ms"].get<double>());
}

// "a, b | c" from a layer row's forward and backward implementations; a reference one gets a
// '*' (and `marked` is set).
std::string impl_column(const json& row, bool& marked) {
  const auto list = [&](const json& impls) {
    std::string s;
    for (const json& i : impls) {
      const std::string name = i.get<std::string>();
      const bool ref = ops::is_reference_impl(name);
      marked = marked || ref;
      s += (s.empty() ? "" : ", ") + name + (ref ? "*" : "");
    }
    return s;
  };
  const auto or_dash = [](const std::string& s) { return s.empty() ? std::string("-") : s; };
  std::string out = or_dash(list(row["impls"]));
  if (row["has_backward"].get<bool>()) out += " | " + or_dash(list(row["backward_impls"]));
  return out;
}

void print_layers(const json& r) {
  const bool peak = r.contains("peak_gflops");
  std::printf(
      "%s  batch %lld  threads %d  ISA %s  %s kernels  medians of %d steps (%d warm-up; "
      "first step %.0f ms)",
      r["model"].get<std::string>().c_str(), r["batch_size"].get<long long>(),
      r["threads"].get<int>(), r["isa"].get<std::string>().c_str(),
      r["kernels"].get<std::string>().c_str(), r["steps"].get<int>(),
      std::max(1, r["warmup"].get<int>()), r["first_step_ms"].get<double>());
  if (peak) std::printf("  peak %.1f GFLOP/s", r["peak_gflops"].get<double>());
  std::printf("\n");
  int name_w = 5, type_w = 4;
  for (const json& l : r["layers"]) {
    name_w = std::max(name_w, static_cast<int>(l["name"].get<std::string>().size()));
    type_w = std::max(type_w, static_cast<int>(l["layer"].get<std::string>().size()));
  }
  const auto dash = [](double v, const char* fmt) {
    char buf[32];
    if (v <= 0) return std::string("-");
    std::snprintf(buf, sizeof buf, fmt, v);
    return std::string(buf);
  };
  std::printf("%-*s  %-*s %9s %9s %6s %9s %9s %9s%s  %s\n", name_w, "layer", type_w, "type",
              "fwd ms", "bwd ms", "share", "fwd GFLOP", "fwd GF/s", "bwd GF/s",
              peak ? "  % peak" : "", "implementation (forward | backward)");
  bool marked = false;
  for (const json& l : r["layers"]) {
    std::printf(
        "%-*s  %-*s %9.3f %9s %5.1f%% %9s %9s %9s", name_w, l["name"].get<std::string>().c_str(),
        type_w, l["layer"].get<std::string>().c_str(), l["forward_ms"].get<double>(),
        l["has_backward"].get<bool>() ? dash(l["backward_ms"].get<double>(), "%.3f").c_str() : "-",
        100.0 * l["share"].get<double>(),
        dash(l["forward_flops"].get<double>() / 1e9, "%.3f").c_str(),
        dash(l["forward_gflops"].get<double>(), "%.1f").c_str(),
        dash(l["backward_gflops"].get<double>(), "%.1f").c_str());
    if (peak) std::printf(" %7s", dash(l["percent_of_peak"].get<double>(), "%.1f%%").c_str());
    std::printf("  %s\n", impl_column(l, marked).c_str());
  }
  std::printf("%-*s  %-*s %9.3f %9.3f %5.1f%% %9.3f %9s %9s", name_w, "total", type_w,
              "(the layers above)", r["layers_forward_ms"].get<double>(),
              r["layers_backward_ms"].get<double>(), 100.0, r["layers_flops"].get<double>() / 1e9,
              "", "");
  if (peak) std::printf(" %6.1f%%", r["layers_percent_of_peak"].get<double>());
  std::printf("  %.1f GFLOP/s forward + backward\n", r["layers_gflops"].get<double>());
  std::printf("%-*s  %-*s %9.3f %9.3f\n", name_w, "loss", type_w,
              ("(" + r["loss_kind"].get<std::string>() + ")").c_str(),
              r["loss_forward_ms"].get<double>(), r["loss_backward_ms"].get<double>());
  std::printf(
      "full step (train::Step::run, median): %.3f ms = forward and loss %.3f + backward %.3f + "
      "optimizer %.3f; %.1f GFLOP/s",
      r["step_ms"].get<double>(), r["step_forward_ms"].get<double>(),
      r["step_backward_ms"].get<double>(), r["step_update_ms"].get<double>(),
      r["step_gflops"].get<double>());
  if (peak) std::printf(" (%.1f%% of peak)", r["step_percent_of_peak"].get<double>());
  std::printf("; the layers alone sum to %.2f of it\n", r["layers_over_step"].get<double>());
  std::printf(
      "FLOPs: forward = multiply-adds x 2 of conv and dense layers; backward = forward x 2 (x 1 "
      "where the input needs no gradient); share = of the layers' total%s\n"
      "Each layer runs alone, on row-major activations; the full step runs them as one chain "
      "(activations kept in oneDNN's blocked layout, ReLU fused into the layer before it)\n",
      marked ? "; * = a reference implementation" : "");
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

// Flag combinations --layers and --peak cannot take: one line naming the flags.
void check_combinations(const BenchOptions& o) {
  const bool cpu = o.config.execution.device == "cpu";
  if (o.layers && o.pipeline)
    EPOCH_THROW(ConfigError,
                "--layers times the model's layers, --pipeline the input pipeline: "
                "choose one");
  if (o.layers && !o.data.empty())
    EPOCH_THROW(ConfigError, "--layers times compute only, on synthetic inputs: drop --data");
  if (o.layers && !o.compare.empty())
    EPOCH_THROW(ConfigError, "--layers has no PyTorch comparison: drop --compare");
  if (o.layers && !cpu) EPOCH_THROW(ConfigError, "--layers times CPU layers only: drop --device");
  if (o.peak && (o.pipeline || !o.data.empty()))
    EPOCH_THROW(ConfigError, "--peak goes with compute-only runs: drop --data and --pipeline");
  if (o.peak && !cpu)
    EPOCH_THROW(ConfigError, "--peak measures the CPU's matrix-multiply peak: drop --device");
  if (o.peak_size_given && !o.peak) EPOCH_THROW(ConfigError, "--peak-size needs --peak");
}

int run_bench(const BenchOptions& o) {
  train::TrainConfig files;
  files.run.input_shape = o.input_shape;
  train::use_model_file_options(files);  // before the model file is first read
  if (!o.compare.empty() && o.compare != "pytorch")
    EPOCH_THROW(ConfigError, "--compare ", o.compare, ": only pytorch is known");
  if (o.pipeline && o.data.empty()) EPOCH_THROW(ConfigError, "--pipeline needs --data");
  if (!o.compare.empty() && !o.data.empty() && !o.pipeline)
    EPOCH_THROW(ConfigError,
                "--compare pytorch times compute only or --pipeline; drop --data "
                "or add --pipeline");
  if (!o.allreduce_bytes.empty() || !o.allreduce_buckets.empty()) {  // for `epoch scale`
    dist::ProcessGroup& group = dist::ProcessGroup::world();
    json out = json::array();
    for (std::int64_t bytes : o.allreduce_bytes)
      out.push_back({{"ranks", group.size()},
                     {"bytes", bytes},
                     {"seconds", bench::time_allreduce(group, bytes, 3, 15)}});
    if (!o.allreduce_buckets.empty()) {
      std::int64_t total = 0;
      for (std::int64_t c : o.allreduce_buckets) total += c;
      const bench::BucketedTiming t =
          bench::time_bucketed_allreduce(group, o.allreduce_buckets, 5, 41);
      out.push_back({{"ranks", group.size()},
                     {"bytes", total * 4},
                     {"buckets", o.allreduce_buckets.size()},
                     {"seconds", t.bucketed_s},
                     {"plain_seconds", t.plain_s}});
    }
    if (group.rank() == 0) std::printf("%s\n", out.dump().c_str());
    return 0;
  }
  check_combinations(o);
  // Under mpirun every rank measures (a training step averages gradients across them); rank 0
  // alone prints.
  const bool lead = dist::ProcessGroup::world().rank() == 0;
  json rows = json::array();
  std::map<int, json> peaks;  // by the --threads value asked for
  if (o.peak) {
    for (int threads : o.threads) {
      if (peaks.count(threads) != 0) continue;
      json p = peak_row(o, threads);
      if (!o.json && lead) print_peak(p);
      std::fflush(stdout);
      rows.push_back(p);
      peaks[threads] = p;
    }
    if (!o.model_given && !o.layers) {  // the peak alone
      if (o.json && lead) std::printf("%s\n", (rows.size() == 1 ? rows[0] : rows).dump().c_str());
      return 0;
    }
  }
  for (std::int64_t batch : o.batch_sizes)
    for (int threads : o.threads)
      for (int workers : o.workers) {
        json r;
        const json* peak = o.peak ? &peaks.at(threads) : nullptr;
        if (o.layers) {
          r = layers_row(o, batch, threads, peak);
          if (!o.json && lead) print_layers(r);
        } else if (o.pipeline) {
          r = pipeline_row(o, batch, workers);
          if (!o.json && lead) print_pipeline(r);
        } else if (!o.data.empty()) {
          r = end_to_end_row(o, batch, threads, workers);
          if (!o.json && lead) print_end_to_end(r);
        } else {
          r = compute_row(o, batch, threads, peak);
          if (!o.json && lead) print_compute(r);
        }
        std::fflush(stdout);
        rows.push_back(r);
        if (o.data.empty() && !o.pipeline && &workers != &o.workers.back()) break;  // no workers
      }
  if (o.json && lead) std::printf("%s\n", (rows.size() == 1 ? rows[0] : rows).dump().c_str());
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
  cmd->add_option("--model", c.model, "Model from `epoch models`, or a model file")
      ->capture_default_str();
  cmd->add_option("--input-shape", o->input_shape, train::config_field("input_shape").help);
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
  cmd->add_option("--warmup", c.warmup, "Untimed steps first (0 to 1000000)")
      ->capture_default_str()
      ->check(in_range(0, 1e6));
  cmd->add_option("--steps", c.steps, "Timed steps (at most 1000000; >= 10 for a model's step)")
      ->capture_default_str()
      ->check(in_range(1, 1e6));
  cmd->add_option("--optimizer", c.optimizer, "Optimizer of the training step")
      ->capture_default_str();
  // --device, --determinism, --conv-algo, --cudnn, --perturb as `epoch train` takes them.
  add_execution_flags(*cmd, o->flags, {"--threads"});
  add_replaced_flag(*cmd, "--strict", "--determinism strict", false);
  add_replaced_flag(*cmd, "--reference-kernels", "--determinism reference", false);
  cmd->add_option("--compare", o->compare, "pytorch: run the PyTorch reference alternately");
  cmd->add_option("--repeats", o->repeats, "Alternating pairs for --compare")
      ->capture_default_str()
      ->check(positive());
  cmd->add_option("--reference-dir", o->reference_dir, "The repository's bench/reference");
  cmd->add_flag("--layers", o->layers,
                "Time each named layer's forward and backward, with the kernels that ran, "
                "against one full step (10 steps after 2 warm-up, fewer for a slow model, "
                "unless --steps (>= 3) / --warmup)");
  cmd->add_flag("--peak", o->peak,
                "Measure the fp32 matrix-multiply peak at --threads (with --model: figures also "
                "as % of it)");
  // Hidden (small sizes keep tests quick); run_peak_bench checks it, since CLI11 leaves a hidden
  // option's name out of its own messages.
  cmd->add_option("--peak-size", o->peak_size, "M = N = K of the peak's product")->group("");
  cmd->add_option("--allreduce-bytes", o->allreduce_bytes,
                  "Time plain MPI_Allreduce of these sizes")
      ->delimiter(',')
      ->check(in_range(4, std::int64_t{1} << 32))
      ->group("");
  cmd->add_option("--allreduce-buckets", o->allreduce_buckets,
                  "Time the gradient averager over buckets of these float counts")
      ->delimiter(',')
      ->check(in_range(1, std::int64_t{1} << 30))
      ->group("");
  cmd->add_flag("--json", o->json, "Print JSON (one object, or an array when several)");
  cmd->callback([o, cmd, &exit_code] {
    o->config.execution = execution_from_flags(o->flags, o->config.execution);
    o->model_given = cmd->count("--model") > 0;
    o->steps_given = cmd->count("--steps") > 0;
    o->warmup_given = cmd->count("--warmup") > 0;
    o->peak_size_given = cmd->count("--peak-size") > 0;
    check_list<std::int64_t>(o->batch_sizes, "--batch-size", 1);
    check_list<int>(o->threads, "--threads", 0);
    check_list<int>(o->workers, "--workers", -1);
    // Under mpirun every rank runs the same measurements (each a collective): the whole
    // command line must match, its sweeps included, before the first of them.
    dist::ProcessGroup& group = dist::ProcessGroup::world();
    if (group.distributed()) {
      std::string flags;  // one line: "model=...; steps=...; ..."
      for (const char c : cmd->config_to_str(true, false)) {
        if (c != '\n') {
          flags += c;
        } else if (!flags.empty()) {
          flags += "; ";
        }
      }
      dist::expect_same_settings(group,
                                 {{"the command", "epoch bench"},
                                  {"the epoch version", EPOCH_VERSION},
                                  {"the bench flags", flags}},
                                 "a benchmark");
    }
    exit_code = run_bench(*o);
  });
}

}  // namespace epoch::cli
