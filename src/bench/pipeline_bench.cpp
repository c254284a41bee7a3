// Input-pipeline and end-to-end benchmarks (see pipeline_bench.h).
#include "epoch/bench/pipeline_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <numeric>

#include "epoch/autograd/autograd.h"
#include "epoch/bench/compute_bench.h"
#include "epoch/data/loader.h"
#include "epoch/nn/flat_parameters.h"
#include "epoch/nn/layers.h"
#include "epoch/ops/backend.h"
#include "epoch/ops/elementwise.h"
#include "epoch/train/recipe.h"
#include "epoch/train/step.h"
#include "epoch/train/training_data.h"

namespace epoch::bench {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

train::TrainConfig data_config(const std::string& model, const std::string& data_arg,
                               std::int64_t cache_mib) {
  train::TrainConfig c = train::recipe_for(model);
  c.data.source = data_arg;
  c.data.cache_mib = cache_mib;
  c.run.quiet = true;
  return c;
}

}  // namespace

nlohmann::json PipelineBenchResult::to_json() const {
  return {{"kind", "pipeline"},
          {"model", config.model},
          {"data", config.data},
          {"output", output},
          {"augmentation", augmentation},
          {"dataset_images", dataset_images},
          {"images_per_measurement", config.images},
          {"mean_file_kib", mean_file_kib},
          {"mean_decoded_width", mean_source_width},
          {"mean_decoded_height", mean_source_height},
          {"read_per_s", read_per_s},
          {"decode_per_s", decode_per_s},
          {"per_core_per_s", per_core_per_s},
          {"workers", config.workers},
          {"workers_per_s", workers_per_s}};
}

PipelineBenchResult run_pipeline_bench(const PipelineBenchConfig& cfg) {
  if (cfg.images < 1) EPOCH_THROW(ConfigError, "--images must be at least 1");
  if (cfg.workers < 0) EPOCH_THROW(ConfigError, "--workers must be >= 0");
  const std::shared_ptr<models::Model> model = models::build_model(cfg.model);
  const train::TrainConfig tc = data_config(cfg.model, cfg.data, 0);  // no cache: decode every time
  const train::TrainingData data = train::open_training_data(tc, model->spec(), true);
  const data::SampleSource& source = *data.train;
  const data::Preprocessing pre = train::preprocessing_for(tc, model->spec());
  const data::AugmentConfig augment = cfg.augment ? tc.input.augment : data::AugmentConfig{};
  const data::AugmentConfig* aug = augment.enabled() ? &augment : nullptr;
  const data::DecodeOptions hint = data::decode_hint(pre, aug);

  PipelineBenchResult r;
  r.config = cfg;
  r.dataset_images = source.size();
  r.output = std::to_string(pre.channels) + "x" + std::to_string(pre.height) + "x" +
             std::to_string(pre.width);
  r.augmentation = aug ? augment.describe() : "none";
  const std::int64_t n = cfg.images;
  const auto index = [&](std::int64_t k) { return k % source.size(); };
  const auto* folder = dynamic_cast<const data::FolderSource*>(&source);

  // Warm the page cache (untimed), then time reads alone.
  if (folder) {
    const std::int64_t distinct = std::min(n, source.size());
    double bytes = 0;
    for (std::int64_t k = 0; k < distinct; ++k)
      bytes += static_cast<double>(data::read_file_bytes(folder->sample_name(k)).size());
    r.mean_file_kib = bytes / static_cast<double>(distinct) / 1024.0;
    auto t0 = Clock::now();
    for (std::int64_t k = 0; k < n; ++k) (void)data::read_file_bytes(folder->sample_name(index(k)));
    r.read_per_s = static_cast<double>(n) / seconds_since(t0);
    double w = 0, h = 0;
    t0 = Clock::now();
    for (std::int64_t k = 0; k < n; ++k) {
      const data::Image image = data::read_image(folder->sample_name(index(k)), hint);
      w += static_cast<double>(image.width);
      h += static_cast<double>(image.height);
    }
    r.decode_per_s = static_cast<double>(n) / seconds_since(t0);
    r.mean_source_width = w / static_cast<double>(n);
    r.mean_source_height = h / static_cast<double>(n);
  }
  // One thread, the whole per-sample path into a model input.
  {
    std::vector<float> out(static_cast<std::size_t>(pre.channels * pre.height * pre.width));
    data::Image scratch;
    data::ImageView view;
    const auto t0 = Clock::now();
    for (std::int64_t k = 0; k < n; ++k) {
      view = source.fetch(index(k), hint, scratch);  // a bad image stops the benchmark
      RandomStream rng = data::sample_stream(cfg.seed, 0, index(k));
      data::transform_sample(view, pre, aug, rng, out.data());
    }
    r.per_core_per_s = static_cast<double>(n) / seconds_since(t0);
  }
  // The loader with its workers, batch by batch.
  {
    data::LoaderConfig lc;
    lc.batch_size = cfg.batch_size;
    lc.workers = cfg.workers;
    lc.seed = cfg.seed;
    lc.on_bad_image = data::OnBadImage::fail;
    data::Loader loader(source, pre, aug ? std::optional(augment) : std::nullopt, lc, nullptr);
    std::vector<std::int64_t> order(static_cast<std::size_t>(n));
    for (std::int64_t k = 0; k < n; ++k) order[static_cast<std::size_t>(k)] = index(k);
    const auto t0 = Clock::now();
    loader.start_epoch(0, order);
    std::int64_t got = 0;
    while (const data::Batch* b = loader.next()) got += b->images.size(0);
    r.workers_per_s = static_cast<double>(got) / seconds_since(t0);
  }
  return r;
}

nlohmann::json EndToEndBenchResult::to_json() const {
  return {{"kind", "end_to_end"},
          {"model", config.model},
          {"data", config.data},
          {"device", config.execution.device},
          {"batch_size", config.batch_size},
          {"threads", threads_used},
          {"workers", workers_used},
          {"cache_mib", config.cache_mib},
          {"warm_cache", config.warm_cache},
          {"steps", config.steps},
          {"images_per_s", images_per_s},
          {"step_ms", step_ms},
          {"wait_ms", wait_ms},
          {"forward_ms", forward_ms},
          {"backward_ms", backward_ms},
          {"optimizer_ms", optimizer_ms},
          {"compute_only_images_per_s", compute_only_images_per_s},
          {"fraction_of_compute", fraction_of_compute},
          {"cached_images", cached_images},
          {"dataset_images", dataset_images},
          {"verdict", verdict}};
}

EndToEndBenchResult run_end_to_end_bench(const EndToEndBenchConfig& cfg) {
  if (cfg.steps < 10) EPOCH_THROW(ConfigError, "--steps must be at least 10");
  if (cfg.warmup < 0) EPOCH_THROW(ConfigError, "--warmup must be >= 0");
  EndToEndBenchResult r;
  r.config = cfg;
  // Compute alone first: the same model, batch and threads on in-memory synthetic inputs.
  ComputeBenchConfig cc;
  cc.model = cfg.model;
  cc.batch_size = cfg.batch_size;
  cc.execution = cfg.execution;
  cc.steps = std::max(cfg.steps / 2, 10);
  cc.seed = cfg.seed;
  r.compute_only_images_per_s = run_compute_bench(cc).train_images_per_s;

  const ops::ContextGuard context(train::kernel_context(cfg.execution));
  r.threads_used = ops::num_threads();
  train::TrainConfig tc = data_config(cfg.model, cfg.data, cfg.cache_mib);
  tc.data.workers = cfg.workers;
  tc.run.batch_size = cfg.batch_size;
  std::shared_ptr<models::Model> model = models::build_model(cfg.model);
  const train::TrainingData data = train::open_training_data(tc, model->spec(), true);
  const data::SampleSource& source = *data.train;
  const data::Preprocessing pre = train::preprocessing_for(tc, model->spec());
  r.dataset_images = source.size();
  r.workers_used =
      train::resolve_workers(tc, data, parse_device(cfg.execution.device).is_cuda() ? 1 : r.threads_used);
  const auto* folder = dynamic_cast<const data::FolderSource*>(&source);
  if (folder && cfg.warm_cache && cfg.cache_mib > 0) {
    const data::DecodeOptions hint = data::decode_hint(pre, &tc.input.augment);
#pragma omp parallel for schedule(dynamic, 16)
    for (std::int64_t i = 0; i < source.size(); ++i) {
      data::Image scratch;
      try {
        (void)source.fetch(i, hint, scratch);
      } catch (const IoError&) {
        // Not cached; the loader reports it when it meets it.
      }
    }
  }
  if (folder) r.cached_images = folder->cached_images();

  const Device device = parse_device(cfg.execution.device);
  nn::initialize(*model, cfg.seed);
  model->to(device);
  train::Step train_step(*model, tc.optimizer, nullptr, cfg.seed);
  data::LoaderConfig lc;
  lc.batch_size = cfg.batch_size;
  lc.workers = r.workers_used;
  lc.prefetch = cfg.prefetch;
  lc.seed = cfg.seed;
  Warnings warnings(stderr);
  data::Loader loader(source, pre, tc.input.augment, lc, &warnings);
  std::int64_t epoch = 0;
  loader.start_epoch(epoch, data::epoch_order(source.size(), cfg.seed, epoch, true));
  model->train(true);
  double wait = 0, fwd = 0, bwd = 0, opt = 0, total = 0;
  std::int64_t images = 0;
  for (int step = 0; step < cfg.warmup + cfg.steps; ++step) {
    const bool timed = step >= cfg.warmup;
    const auto t0 = Clock::now();
    const data::Batch* batch = loader.next();
    if (batch == nullptr) {
      ++epoch;
      loader.start_epoch(epoch, data::epoch_order(source.size(), cfg.seed, epoch, true));
      batch = loader.next();
      if (batch == nullptr) EPOCH_THROW(IoError, source.description(), ": no readable images");
    }
    const Tensor x = batch->images.to(device), labels = batch->labels.to(device);
    const auto t1 = Clock::now();
    train::StepTimes times;
    const Tensor loss = train_step.run(x, labels, step, static_cast<std::uint64_t>(step), &times);
    (void)loss.item();
    const auto t2 = Clock::now();
    if (!timed) continue;
    using S = std::chrono::duration<double>;
    wait += S(t1 - t0).count();
    fwd += times.forward_s;
    bwd += times.backward_s;
    opt += S(t2 - t1).count() - times.forward_s - times.backward_s;
    total += S(t2 - t0).count();
    images += batch->images.size(0);
  }
  const double steps = cfg.steps;
  r.images_per_s = static_cast<double>(images) / total;
  r.step_ms = 1e3 * total / steps;
  r.wait_ms = 1e3 * wait / steps;
  r.forward_ms = 1e3 * fwd / steps;
  r.backward_ms = 1e3 * bwd / steps;
  r.optimizer_ms = 1e3 * opt / steps;
  r.fraction_of_compute = r.images_per_s / r.compute_only_images_per_s;

  char line[400];
  const double wait_share = wait / total;
  if (wait_share > 0.10) {
    std::string fix;
    if (r.workers_used < 2 * r.threads_used)
      fix = "try --workers " + std::to_string(r.workers_used + 1);
    if (folder && (!cfg.warm_cache || cfg.cache_mib == 0 || r.cached_images < r.dataset_images))
      fix += std::string(fix.empty() ? "try" : " or") +
             " a larger --cache-mib (decoded images "
             "are reused across epochs)";
    if (fix.empty()) fix = "the input pipeline needs more cores than compute leaves it";
    std::snprintf(line, sizeof line, "input-bound: %.0f%% of step time waiting for data; %s",
                  100.0 * wait_share, fix.c_str());
  } else if (r.fraction_of_compute < 0.85) {
    // Little waiting, yet slower than compute alone: the input threads take cores from it.
    std::string fix =
        folder && (!cfg.warm_cache || cfg.cache_mib == 0 || r.cached_images < r.dataset_images)
            ? "a larger --cache-mib (decoding then happens once)"
            : "";
    if (r.workers_used > 1)
      fix += std::string(fix.empty() ? "" : " or ") + "--workers " +
             std::to_string(r.workers_used - 1);
    if (fix.empty()) fix = "--workers 0 (batches made between steps on all cores)";
    std::snprintf(line, sizeof line,
                  "CPU-contended: %.0f%% of compute-only throughput while waiting only %.0f%% "
                  "for data: input threads share the cores with compute; try %s",
                  100.0 * r.fraction_of_compute, 100.0 * wait_share, fix.c_str());
  } else {
    std::snprintf(
        line, sizeof line,
        "compute-bound: %.0f%% forward, %.0f%% backward, %.0f%% optimizer, %.0f%% waiting "
        "for data (%.0f%% of compute-only throughput)",
        100.0 * fwd / total, 100.0 * bwd / total, 100.0 * opt / total, 100.0 * wait_share,
        100.0 * r.fraction_of_compute);
  }
  r.verdict = line;
  return r;
}

}  // namespace epoch::bench
