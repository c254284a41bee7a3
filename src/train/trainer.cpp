// The training loop (see trainer.h): one step = assemble batch, forward, loss, backward,
// optimizer update; per epoch: evaluate, log, checkpoint atomically.
#include "epoch/train/trainer.h"

#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "epoch/autograd/autograd.h"
#include "epoch/data/dataset.h"
#include "epoch/data/loader.h"
#include "epoch/models/zoo.h"
#include "epoch/nn/flat_parameters.h"
#include "epoch/nn/layers.h"
#include "epoch/ops/backend.h"
#include "epoch/ops/elementwise.h"
#include "epoch/tensor/file_io.h"
#include "epoch/train/checkpoint.h"
#include "epoch/train/config_fields.h"
#include "epoch/train/evaluate.h"
#include "epoch/train/metrics_log.h"
#include "epoch/train/progress.h"
#include "epoch/train/run_dir.h"
#include "epoch/train/step.h"
#include "epoch/train/training_data.h"

namespace epoch::train {
namespace fs = std::filesystem;
using json = nlohmann::json;

Determinism parse_determinism(const std::string& s) {
  if (s == "fast") return Determinism::fast;
  if (s == "reproducible") return Determinism::reproducible;
  if (s == "strict") return Determinism::strict;
  EPOCH_THROW(ConfigError, "unknown determinism '", s, "' (valid: fast, reproducible, strict)");
}

const char* determinism_name(Determinism d) {
  switch (d) {
    case Determinism::fast:
      return "fast";
    case Determinism::reproducible:
      return "reproducible";
    case Determinism::strict:
      return "strict";
  }
  return "?";
}

TrainConfig::TrainConfig() {
  optimizer = optim::optimizer_defaults("adam");
  optimizer.lr = 2e-3f;
  schedule.name = "cosine";
}

json TrainConfig::to_json() const { return config_to_json(*this); }

TrainConfig TrainConfig::from_json(const json& j) {
  try {
    return config_from_json(j);
  } catch (const json::exception& e) {
    EPOCH_THROW(ConfigError, "stored run configuration is invalid: ", e.what());
  }
}

json TrainResult::to_json() const {
  json j{{"run_dir", run_dir},        {"checkpoint", checkpoint},
         {"epochs", epochs},          {"steps", steps},
         {"train_loss", train_loss},  {"test_loss", test_loss},
         {"evaluated_on", eval_name}, {"images_per_s", images_per_s},
         {"wall_s", wall_s}};
  j["test_accuracy"] = test_accuracy >= 0 ? json(test_accuracy) : json(nullptr);
  return j;
}

namespace {

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

std::string default_run_dir(const std::string& model) {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  return "runs/" + model + "-" + stamp;
}

void check_config(const TrainConfig& c) {
  if (c.epochs < 1) EPOCH_THROW(ConfigError, "--epochs must be at least 1, got ", c.epochs);
  if (c.batch_size < 1)
    EPOCH_THROW(ConfigError, "--batch-size must be at least 1, got ", c.batch_size);
  if (c.eval_batch_size < 0) EPOCH_THROW(ConfigError, "eval batch size must be >= 0 (0: auto)");
  if (!(c.optimizer.lr > 0.0f) || !std::isfinite(c.optimizer.lr))
    EPOCH_THROW(ConfigError, "--lr must be a positive number, got ", c.optimizer.lr);
  if (c.threads < 0) EPOCH_THROW(ConfigError, "--threads must be >= 0, got ", c.threads);
  if (c.warmup_steps < -1) EPOCH_THROW(ConfigError, "--warmup-steps must be >= 0");
}

std::map<std::string, std::string> checkpoint_metadata(const TrainConfig& c,
                                                       const data::Preprocessing& pre,
                                                       const data::SampleSource& train_data,
                                                       std::int64_t epoch, std::int64_t step,
                                                       const EvalResult& eval) {
  return {{"model", c.model},
          {"preprocessing", pre.to_json()},
          {"class_names", json(train_data.class_names()).dump()},
          {"epoch", std::to_string(epoch)},
          {"step", std::to_string(step)},
          {"seed", std::to_string(c.seed)},
          {"determinism", determinism_name(c.determinism)},
          {"config", c.to_json().dump()},
          {"test_loss", std::to_string(eval.loss)},
          {"test_accuracy", std::to_string(eval.accuracy)},
          {"epoch_version", EPOCH_VERSION}};
}

}  // namespace

namespace {

/// Dotted keys of a JSON object's leaves ("optimizer.lr" -> 0.002).
void flatten_json(const json& j, const std::string& prefix, std::map<std::string, json>& out) {
  if (j.is_object()) {
    for (const auto& [key, value] : j.items())
      flatten_json(value, prefix.empty() ? key : prefix + "." + key, out);
  } else {
    out[prefix] = j;
  }
}

/// Rank of an evaluation for best.safetensors: higher accuracy, else lower loss.
bool better_than(const EvalResult& a, double best_accuracy, double best_loss) {
  if (a.accuracy >= 0) return a.accuracy > best_accuracy;
  return a.loss < best_loss;
}

/// Bytes of one batch of float inputs, refused when it alone would not fit in this machine's
/// memory (a --batch-size typo would otherwise end in a bare "out of memory").
void check_batch_fits(const TrainConfig& c, const models::ModelSpec& spec) {
  const double bytes = static_cast<double>(c.batch_size) * static_cast<double>(spec.input[0]) *
                       static_cast<double>(spec.input[1]) * static_cast<double>(spec.input[2]) *
                       sizeof(float);
  const double memory =
      static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE));
  if (memory > 0 && bytes > 0.5 * memory)
    EPOCH_THROW(ConfigError, "--batch-size ", c.batch_size, ": one batch of ", spec.name,
                " inputs needs ", std::llround(bytes / (1 << 30)),
                " GiB, more than half of this machine's ", std::llround(memory / (1 << 30)),
                " GiB");
}

}  // namespace

namespace {
/// A setting's value for a message: floats with 6 significant digits (they are stored from
/// float, so 0.002 would otherwise read 0.0020000000949949026).
std::string shown(const json& v) {
  if (!v.is_number_float()) return v.dump();
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.6g", v.get<double>());
  return buffer;
}
}  // namespace

bool resume_may_change(const std::string& key) {
  for (const ConfigField& f : config_fields())
    if (f.key == key) return f.resume_may_change;
  return false;
}

std::string resume_conflicts(const TrainConfig& stored, const TrainConfig& requested) {
  std::map<std::string, json> was, now;
  flatten_json(stored.to_json(), "", was);
  flatten_json(requested.to_json(), "", now);
  std::string out;
  for (const auto& [key, value] : now) {
    if (resume_may_change(key)) continue;
    const auto it = was.find(key);
    const json before = it == was.end() ? json(nullptr) : it->second;
    if (before != value)
      out += (out.empty() ? "" : ", ") + key + " " + shown(value) + " (the run has " +
             shown(before) + ")";
  }
  return out;
}

SafetensorsFile read_last_checkpoint(const std::string& run_dir) {
  switch (run_state(run_dir)) {
    case RunState::empty:
      EPOCH_THROW(IoError, run_dir, ": no run to resume (no checkpoints/last.safetensors)");
    case RunState::started:
      EPOCH_THROW(IoError, run_dir,
                  ": the run stopped before its first checkpoint, so there is nothing to resume; "
                  "remove the folder or choose another --out");
    case RunState::checkpointed:
      break;
  }
  return read_checkpoint((fs::path(run_dir) / "checkpoints" / "last.safetensors").string());
}

TrainConfig stored_config(const SafetensorsFile& checkpoint) {
  return TrainConfig::from_json(json::parse(metadata_at(checkpoint, "config"), nullptr, false));
}

TrainConfig stored_run_config(const std::string& run_dir) {
  return stored_config(read_last_checkpoint(run_dir));
}

TrainResult train(const TrainConfig& requested, std::FILE* progress_out, Warnings* warnings_in) {
  const auto wall_start = std::chrono::steady_clock::now();
  TrainConfig c = requested;
  TrainResult result;
  result.run_dir = c.out_dir.empty() ? default_run_dir(c.model) : c.out_dir;
  const fs::path run_dir = result.run_dir;
  const fs::path ckpt_dir = run_dir / "checkpoints";
  const fs::path last_ckpt = ckpt_dir / "last.safetensors";
  const fs::path best_ckpt = ckpt_dir / "best.safetensors";
  Warnings own_warnings(stderr);  // --quiet silences progress, never warnings
  Warnings& warnings = warnings_in != nullptr ? *warnings_in : own_warnings;

  check_config(c);
  std::error_code ec;
  if (c.resume && !fs::is_directory(run_dir, ec))
    EPOCH_THROW(IoError, run_dir.string(), ": no run to resume (no such folder)");
  // One process at a time from here on; a killed holder's lock is released by the kernel.
  const RunDirLock lock(run_dir.string());
  if (remove_orphaned_temporaries(run_dir.string()) > 0)
    warnings.warn("temporary files",
                  "removed temporary checkpoint files a stopped run left in " + ckpt_dir.string());

  // Resuming: the stored configuration, with only what resume_may_change allows changed.
  SafetensorsFile resume_file;
  std::int64_t start_epoch = 0, global_step = 0;
  double best_accuracy = -1.0, best_loss = HUGE_VAL;
  if (c.resume) {
    resume_file = read_last_checkpoint(run_dir.string());
    if (const std::string conflicts = resume_conflicts(stored_config(resume_file), c);
        !conflicts.empty())
      EPOCH_THROW(
          ConfigError, "resuming ", run_dir.string(),
          " continues the run as it was started; these settings would change it: ", conflicts);
    start_epoch = metadata_int(resume_file, "epoch", 0, std::int64_t{1} << 40);
    global_step = metadata_int(resume_file, "step", 0, std::int64_t{1} << 62);
    if (resume_file.metadata.count("best_test_loss") > 0) {  // older checkpoints lack them
      best_accuracy = metadata_number(resume_file, "best_test_accuracy");
      best_loss = metadata_number(resume_file, "best_test_loss");
    }
  } else {
    switch (run_state(run_dir.string())) {
      case RunState::empty:
        break;
      case RunState::started:
        EPOCH_THROW(ConfigError, run_dir.string(),
                    " holds a run that stopped before its first checkpoint: remove the folder "
                    "or choose another --out");
      case RunState::checkpointed:
        EPOCH_THROW(ConfigError, run_dir.string(),
                    " already holds a run: pass --resume to continue it or choose another --out");
    }
  }

  // This call's kernels and threads, for this thread only and restored on return.
  const ops::ContextGuard context(ops::Context{
      c.determinism == Determinism::strict ? ops::CpuKernels::reference : ops::CpuKernels::fast,
      c.threads});

  const Device device = parse_device(c.device);
  if (device.is_cuda() && device.index >= memory::cuda_device_count())
    EPOCH_THROW(ConfigError, "--device ", c.device, ": no such CUDA device (",
                memory::cuda_device_count(), " visible",
                EPOCH_WITH_CUDA ? "" : "; built without CUDA", ")");
  std::shared_ptr<models::Model> model = models::build_model(c.model);
  const models::ModelSpec& spec = model->spec();
  check_batch_fits(c, spec);
  TrainingData data = open_training_data(c, spec);
  result.eval_name = data.val_name;
  const data::Preprocessing pre = preprocessing_for(c, spec);
  c.augment.validate();
  data::LoaderConfig loader_config;
  loader_config.batch_size = c.batch_size;
  loader_config.workers = resolve_workers(c, data, device.is_cuda() ? 1 : ops::num_threads());
  loader_config.prefetch = c.prefetch;
  loader_config.seed = c.seed;
  loader_config.on_bad_image = c.on_bad_image;

  nn::initialize(*model, c.seed);
  model->to(device);
  const std::int64_t n_train = data.train->size();
  const std::int64_t steps_per_epoch = (n_train + c.batch_size - 1) / c.batch_size;
  optim::ScheduleConfig sched = c.schedule;
  sched.base_lr = c.optimizer.lr;
  sched.total_steps = steps_per_epoch * c.epochs;
  sched.warmup_steps =
      c.warmup_steps >= 0 ? c.warmup_steps : std::min<std::int64_t>(300, sched.total_steps / 10);
  Step step(*model, c.optimizer, optim::make_schedule(sched), c.seed);
  optim::Optimizer* optimizer = &step.optimizer();

  if (c.resume) {
    load_model_state(resume_file, *model);
    load_optimizer_state(resume_file, *optimizer);
  }
  if (start_epoch >= c.epochs)
    EPOCH_THROW(ConfigError, run_dir.string(), " already completed ", start_epoch,
                " epochs; pass a larger --epochs to continue");

  fs::create_directories(ckpt_dir, ec);
  if (ec) EPOCH_THROW(IoError, ckpt_dir.string(), ": cannot create: ", ec.message());
  {
    json cfg = c.to_json();
    cfg["model_parameters"] = model->parameter_count();
    cfg["threads_used"] = ops::num_threads();
    cfg["epoch_version"] = EPOCH_VERSION;
    const std::string text = cfg.dump(2) + "\n";
    write_file_atomic((run_dir / "config.json").string(),
                      std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()),
                      true);
  }
  // Records past the checkpoint (a run killed after logging them) are logged again now.
  if (c.resume) truncate_metrics_after(run_dir.string(), global_step);
  MetricsLog metrics((run_dir / "metrics.jsonl").string());
  Progress progress(progress_out, c.progress_interactive);
  data::Loader loader(*data.train, pre, c.augment, loader_config, &warnings);
  data::LoaderConfig eval_config = loader_config;
  eval_config.batch_size =
      c.eval_batch_size > 0 ? c.eval_batch_size : auto_eval_batch_size(spec, c.batch_size);
  data::Loader eval_loader(*data.val, pre, std::nullopt, eval_config, &warnings);

  double train_seconds = 0.0, wait_seconds = 0.0;
  std::int64_t images_this_run = 0;
  EvalResult eval;
  const std::int64_t end_epoch =
      c.stop_after_epochs > 0 ? std::min(c.epochs, start_epoch + c.stop_after_epochs) : c.epochs;
  for (std::int64_t epoch = start_epoch; epoch < end_epoch; ++epoch) {
    loader.start_epoch(epoch, data::epoch_order(n_train, c.seed, epoch, true));
    const double wait_before = loader.stats().wait_s;
    model->train(true);
    if (!c.quiet) progress.start_epoch(epoch + 1, c.epochs, steps_per_epoch);
    const auto epoch_start = std::chrono::steady_clock::now();
    double loss_sum = 0.0, window_sum = 0.0;
    std::int64_t window_n = 0, images = 0;
    std::int64_t s = 0;
    // Batches whose images were all skipped are not steps; the schedule follows the planned
    // position in the epoch, so it ends where it was planned to.
    for (; s < steps_per_epoch; ++s) {
      const data::Batch* batch = loader.next();
      if (batch == nullptr) break;  // bad images were skipped: fewer batches this epoch
      const std::int64_t count = batch->images.size(0);
      const Tensor x = batch->images.to(device), labels = batch->labels.to(device);
      const Tensor loss =
          step.run(x, labels, epoch * steps_per_epoch + s, static_cast<std::uint64_t>(global_step));
      ++global_step;
      const double lv = loss.item();
      if (!std::isfinite(lv))
        EPOCH_THROW(NumericalError, "loss became ", lv, " at epoch ", epoch + 1, " step ", s + 1,
                    " (lr ", optimizer->lr(), "); the last good checkpoint is ",
                    fs::exists(last_ckpt) ? last_ckpt.string() : std::string("(none yet)"));
      loss_sum += lv;
      window_sum += lv;
      ++window_n;
      images += count;
      if (!c.quiet) progress.update(s + 1, images, window_sum / static_cast<double>(window_n));
      if (c.log_every > 0 && global_step % c.log_every == 0) {
        metrics.write({{"kind", "step"},
                       {"epoch", epoch + 1},
                       {"step", global_step},
                       {"loss", window_sum / static_cast<double>(window_n)},
                       {"lr", optimizer->lr()}});
        window_sum = 0.0;
        window_n = 0;
      }
    }
    if (s == 0)
      EPOCH_THROW(IoError, data.train->description(), ": every training image of epoch ", epoch + 1,
                  " was skipped as bad (see the warnings)");
    const double epoch_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch_start).count();
    const double epoch_wait = loader.stats().wait_s - wait_before;
    train_seconds += epoch_s;
    wait_seconds += epoch_wait;
    images_this_run += images;
    result.train_loss = loss_sum / static_cast<double>(s);

    if (const std::string bad = first_non_finite_tensor(*model, optimizer); !bad.empty())
      EPOCH_THROW(NumericalError, "training diverged in epoch ", epoch + 1, ": tensor '", bad,
                  "' holds NaN or infinite values (lr ", optimizer->lr(),
                  "); nothing of this epoch was saved, the last good checkpoint is ",
                  fs::exists(last_ckpt) ? last_ckpt.string() : std::string("(none yet)"));
    eval = evaluate(*model, eval_loader, data.val->size());
    if (eval.count == 0)
      EPOCH_THROW(IoError, data.val->description(), ": every ", data.val_name,
                  " image was skipped as bad (see the warnings), so there is nothing to report");

    // The checkpoint first, then the epoch's record: a kill between them leaves a record that
    // resuming removes (truncate_metrics_after), never a record without its checkpoint.
    // The best result so far travels in every checkpoint, so a resumed run knows it.
    const bool best_now = better_than(eval, best_accuracy, best_loss);
    if (best_now) {
      best_accuracy = eval.accuracy;
      best_loss = eval.loss;
    }
    auto meta = checkpoint_metadata(c, pre, *data.train, epoch + 1, global_step, eval);
    meta["best_test_accuracy"] = json(best_accuracy).dump();
    meta["best_test_loss"] = json(best_loss).dump();
    save_checkpoint(last_ckpt.string(), *model, optimizer, meta);
    publish_copy(last_ckpt.string(), (ckpt_dir / epoch_checkpoint_name(epoch + 1)).string());
    if (best_now) publish_copy(last_ckpt.string(), best_ckpt.string());
    prune_epoch_checkpoints(run_dir.string(), c.keep_checkpoints);
    result.checkpoint = last_ckpt.string();

    const double ips = static_cast<double>(images) / epoch_s;
    json record{
        {"kind", "epoch"},
        {"epoch", epoch + 1},
        {"step", global_step},
        {"train_loss", result.train_loss},
        {"test_loss", eval.loss},
        {"images_per_s", ips},
        {"epoch_s", epoch_s},
        {"peak_rss_mib", peak_rss_mib()},
        {"data_wait_s", epoch_wait},
        {"elapsed_s",
         std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count()}};
    record["test_accuracy"] = eval.accuracy >= 0 ? json(eval.accuracy) : json(nullptr);
    metrics.write(record);

    if (!c.quiet) {
      char line[256];
      if (eval.accuracy >= 0)
        std::snprintf(
            line, sizeof line,
            "epoch %lld: train loss %.4f | %s loss %.4f | %s accuracy %.2f%% | %.0f img/s",
            static_cast<long long>(epoch + 1), result.train_loss, data.val_name.c_str(), eval.loss,
            data.val_name.c_str(), 100.0 * eval.accuracy, ips);
      else
        std::snprintf(line, sizeof line, "epoch %lld: train loss %.5f | %s loss %.5f | %.0f img/s",
                      static_cast<long long>(epoch + 1), result.train_loss, data.val_name.c_str(),
                      eval.loss, ips);
      progress.end_epoch(line);
    }
  }
  warnings.summarize();
  result.epochs = end_epoch;
  result.steps = global_step;
  result.test_loss = eval.loss;
  result.test_accuracy = eval.accuracy;
  result.images_per_s =
      train_seconds > 0 ? static_cast<double>(images_this_run) / train_seconds : 0;
  result.data_wait_fraction = train_seconds > 0 ? wait_seconds / train_seconds : 0.0;
  result.skipped_images = static_cast<std::int64_t>(loader.stats().bad_files.size() +
                                                    eval_loader.stats().bad_files.size());
  result.wall_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return result;
}

}  // namespace epoch::train
