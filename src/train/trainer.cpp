// A training run (see trainer.h): train() takes the run directory's lock and resume point,
// builds the model, its batch source and evaluation (images or video windows), the Step and
// the ranks' DataParallel, and the callbacks that write the run; a Session (session.h) runs it.
#include "epoch/train/trainer.h"

#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <set>

#include "epoch/autograd/autograd.h"
#include "epoch/data/dataset.h"
#include "epoch/data/loader.h"
#include "epoch/dist/process_group.h"
#include "epoch/models/model_file.h"
#include "epoch/models/zoo.h"
#include "epoch/nn/flat_parameters.h"
#include "epoch/nn/layers.h"
#include "epoch/ops/backend.h"
#include "epoch/ops/elementwise.h"
#include "epoch/tensor/file_io.h"
#include "epoch/train/checkpoint.h"
#include "epoch/train/clips.h"
#include "epoch/train/config_fields.h"
#include "epoch/train/data_parallel.h"
#include "epoch/train/evaluate.h"
#include "epoch/train/metrics_log.h"
#include "epoch/train/progress.h"
#include "epoch/train/run_dir.h"
#include "epoch/train/step.h"
#include "epoch/train/stop.h"
#include "epoch/train/training_data.h"
#include "image_source.h"
#include "run_callbacks.h"
#include "run_parts.h"
#include "session.h"
#include "window_source.h"

namespace epoch::train {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::map<std::string, std::string> checkpoint_metadata(const TrainConfig& c,
                                                       const data::Preprocessing& pre,
                                                       const data::SampleSource& train_data,
                                                       std::int64_t epoch, std::int64_t step,
                                                       const EvalResult& eval) {
  std::map<std::string, std::string> m = models::description_metadata(c.run.model);
  m.merge(std::map<std::string, std::string>{
          {"model", c.run.model},
          {"preprocessing", pre.to_json()},
          {"class_names", json(train_data.class_names()).dump()},
          {"epoch", std::to_string(epoch)},
          {"step", std::to_string(step)},
          {"seed", std::to_string(c.run.seed)},
          {"determinism", determinism_name(c.execution.determinism)},
          {"config", c.to_json().dump()},
          {"test_loss", std::to_string(eval.loss)},
          {"test_accuracy", std::to_string(eval.accuracy)},
          {"epoch_version", EPOCH_VERSION}});
  return m;
}

/// The optimizer's state (step count, learning rate, moments) from rank 0 (a resumed run,
/// which rank 0 alone read).
void broadcast_optimizer_state(dist::ProcessGroup& group, optim::Optimizer& optimizer) {
  if (!group.distributed()) return;
  optim::NamedTensors state = optimizer.state();
  for (auto& [name, t] : state) {
    Tensor host = t.to(Device::cpu()).contiguous();
    group.broadcast(host.raw(), host.numel() * static_cast<std::int64_t>(dtype_size(host.dtype())));
    t = host.to(t.device());
  }
  optimizer.load_state(state);
}

/// A stopped run's result takes the request (which signal asked), so that the next run in
/// this process starts unasked.
TrainResult took_stop(TrainResult r) {
  if (r.stopped) {
    r.stop_signal = stop_signal();
    clear_stop_request();
  }
  return r;
}

/// A video run's checkpoints also say its windows, the baseline on the evaluation frames and
/// the last steps' losses (what the run reports).
std::map<std::string, std::string> window_checkpoint_metadata(
    const TrainConfig& c, const data::Preprocessing& pre, std::int64_t frames, std::int64_t epoch,
    std::int64_t step, const EvalResult& eval, const RecentLosses& recent) {
  json recent_json = json::array();
  for (const auto& [loss, base] : recent) recent_json.push_back({loss, base});
  return {{"model", c.run.model},
          {"preprocessing", pre.to_json()},
          {"class_names", "[]"},
          {"epoch", std::to_string(epoch)},
          {"step", std::to_string(step)},
          {"seed", std::to_string(c.run.seed)},
          {"determinism", determinism_name(c.execution.determinism)},
          {"config", c.to_json().dump()},
          {"test_loss", json(eval.loss).dump()},
          {"test_accuracy", "-1"},
          {"test_baseline_mse", json(eval.baseline_mse).dump()},
          {"window_frames", std::to_string(frames)},
          {"recent_losses", recent_json.dump()},
          {"world_size", "1"},
          {"epoch_version", EPOCH_VERSION}};
}

/// The last steps' (loss, baseline) a resumed video run continues from.
RecentLosses stored_recent(const SafetensorsFile& checkpoint) {
  RecentLosses recent;
  const auto it = checkpoint.metadata.find("recent_losses");
  if (it == checkpoint.metadata.end()) return recent;
  try {
    for (const json& pair : json::parse(it->second))
      recent.emplace_back(pair.at(0).get<double>(), pair.at(1).get<double>());
  } catch (const json::exception& e) {
    EPOCH_THROW(IoError, checkpoint.source, ": invalid recent_losses: ", e.what());
  }
  return recent;
}

}  // namespace

TrainResult train(const TrainConfig& requested, std::FILE* progress_out, Warnings* warnings) {
  TrainOptions options;
  options.progress = progress_out;
  options.warnings = warnings;
  return train(requested, options);
}

TrainResult train(const TrainConfig& requested, const TrainOptions& options) {
  const auto wall_start = std::chrono::steady_clock::now();
  TrainConfig c = requested;
  if (c.run.out_dir.empty()) c.run.out_dir = default_run_dir(c.run.model);
  const bool in_memory = options.train_images != nullptr;
  if (in_memory != (options.validation_images != nullptr))
    EPOCH_THROW(ConfigError, "in-memory training data needs both training and validation images");
  if (in_memory) c.data.source = "in-memory";
  Warnings own_warnings(stderr);  // --quiet silences progress, never warnings
  Warnings& warnings = options.warnings != nullptr ? *options.warnings : own_warnings;
  check_common_config(c);
  const bool video = models::find_model(c.run.model).task == models::Task::frame_prediction;
  if (video && in_memory)
    EPOCH_THROW(ConfigError, "model ", c.run.model,
                " trains on sequence folders, not on images held in memory");
  if (video) (void)open_clip_data(c);  // bad --data: one line, before a run folder is made

  // The run directory: one process at a time from here on (a killed holder's lock is
  // released by the kernel), then where the run starts.
  // With several ranks (mpirun) rank 0 alone owns the folder: it reads the resume point,
  // prints, logs and writes checkpoints; the others receive its state below.
  dist::ProcessGroup& group = dist::ProcessGroup::world();
  if (video && group.distributed())
    EPOCH_THROW(ConfigError, "model ", c.run.model,
                " trains in one process: data-parallel training (mpirun) is for image models");
  const bool lead = group.rank() == 0;
  const int world = group.size();
  // The first collective: every rank was started with the same run (mpirun's MPMD form, a
  // script's typo or another config file could give a rank other settings), before any size
  // is trusted. The data's size, the steps and the parameters are compared below, once known.
  const std::vector<dist::Setting> settings = run_settings_ranks_share(c);
  dist::expect_same_settings(group, settings, "a training run");
  const RunPaths paths(c.run.out_dir);
  std::error_code ec;
  if (lead && c.run.resume && !fs::is_directory(paths.dir, ec))
    EPOCH_THROW(IoError, paths.dir.string(), ": no run to resume (no such folder)");
  std::optional<RunDirLock> lock;
  ResumePoint start;
  if (lead) {
    check_run_dir_allowed(paths.dir.string());
    lock.emplace(paths.dir.string());
    if (remove_orphaned_temporaries(paths.dir.string()) > 0)
      warnings.warn("temporary files", "removed temporary checkpoint files a stopped run left in " +
                                           paths.ckpt_dir.string());
    start = resume_point(c, paths.dir);
    if (c.run.resume) {
      const std::int64_t stored_world =
          start.checkpoint.metadata.count("world_size") > 0
              ? metadata_int(start.checkpoint, "world_size", 1, std::int64_t{1} << 30)
              : 1;
      if (stored_world != world)
        EPOCH_THROW(ConfigError, "resuming ", paths.dir.string(), ": the run trained on ",
                    stored_world, " process(es), this launch has ", world,
                    " (the shards and steps of an epoch depend on it)");
    }
  }
  std::int64_t position[2] = {start.epoch, start.step};
  group.broadcast(position, sizeof position, 0, "the resume position");
  start.epoch = position[0];
  start.step = position[1];

  // This call's kernels and threads, for this thread only and restored on return.
  const ops::ContextGuard context(kernel_context(c.execution));

  // The model and what it trains on: image batches (this rank's shard of each global batch)
  // or video windows.
  const Device device = training_device(c);
  const std::shared_ptr<models::Model> model = models::build_model(c.run.model);
  const models::ModelSpec& spec = model->spec();
  const data::Preprocessing pre = preprocessing_for(c, spec);
  TrainingData images;
  ClipData clips;
  std::unique_ptr<BatchSource> batches;
  std::unique_ptr<Evaluation> evaluation;
  std::string eval_name;
  std::int64_t global_batch = c.run.batch_size * world, frames = 1;
  std::vector<dist::Setting> job = settings;
  if (video) {
    clips = open_clip_data(c, &warnings);
    auto windows = std::make_unique<WindowBatches>(c, *model, clips, pre, &warnings);
    frames = windows->frames_per_sample();
    evaluation = std::make_unique<WindowEvaluation>(c, clips, pre, frames, &warnings);
    batches = std::move(windows);
    eval_name = clips.val_name;
  } else {
    check_batch_fits(c, spec);
    images = in_memory ? in_memory_training_data(c, spec, *options.train_images,
                                                 *options.validation_images)
                       : open_training_data(c, spec);
    c.input.augment.validate();
    const int workers = resolve_workers(c, images, device.is_cuda() ? 1 : ops::num_threads());
    batches = std::make_unique<ImageBatches>(c, *images.train, pre, workers, group.rank(), world,
                                             images.from_files(), &warnings);
    evaluation = std::make_unique<ImageEvaluation>(c, spec, *images.val, images.val_name, pre,
                                                   workers, group.rank(), world, &warnings);
    eval_name = images.val_name;
    job.push_back({"the training samples", std::to_string(images.train->size())});
    job.push_back({"the validation samples", std::to_string(images.val->size())});
  }
  const std::int64_t steps_per_epoch = batches->steps_per_epoch();
  if (c.run.max_steps > 0)  // a length in steps: as many epochs as they take, the last cut short
    c.run.epochs = (c.run.max_steps + steps_per_epoch - 1) / std::max<std::int64_t>(1, steps_per_epoch);

  // The step (optimizer and schedule), restored when resuming; the ranks in step.
  initialize_model(*model, c);
  model->to(device);
  Step step(*model, c.optimizer, planned_schedule(c, steps_per_epoch, global_batch), c.run.seed);
  RecentLosses recent;
  if (c.run.resume && lead) {
    load_model_state(start.checkpoint, *model);
    load_optimizer_state(start.checkpoint, step.optimizer());
    if (video) recent = stored_recent(start.checkpoint);
  }
  job.push_back({"the steps per epoch", std::to_string(steps_per_epoch)});
  job.push_back({"the starting epoch and step",
                 std::to_string(start.epoch) + ", " + std::to_string(start.step)});
  DataParallel dp(group, step, *model,
                  static_cast<std::int64_t>(c.run.bucket_mib * 1024.0 * 1024.0), std::move(job),
                  "a training run");
  dp.broadcast_state();
  if (c.run.resume) broadcast_optimizer_state(group, step.optimizer());
  dp.check_in_sync("at the start");
  if (start.epoch >= c.run.epochs)
    EPOCH_THROW(ConfigError, paths.dir.string(), " already completed ", start.epoch,
                " epochs; pass a larger --epochs to continue");

  // What the run writes, as callbacks (rank 0 alone): config.json, checkpoints, metrics.jsonl
  // (records past the checkpoint, of a run killed after logging them, are logged again),
  // progress; then the caller's.
  std::optional<Session> session;
  std::optional<MetricsLog> metrics;
  std::optional<CheckpointCallback> checkpoints;
  std::optional<MetricsCallback> metrics_callback;
  std::optional<ProgressCallback> progress;
  std::vector<Callback*> callbacks;
  if (lead) {
    fs::create_directories(paths.ckpt_dir, ec);
    if (ec) EPOCH_THROW(IoError, paths.ckpt_dir.string(), ": cannot create: ", ec.message());
    write_run_config(paths.dir, c, *model, world);
    if (c.run.resume) truncate_metrics_after(paths.dir.string(), start.step);
    metrics.emplace((paths.dir / "metrics.jsonl").string());
    std::function<CheckpointMetadata(std::int64_t, std::int64_t, const EvalResult&)> describe;
    if (video) {
      describe = [&](std::int64_t epoch, std::int64_t at, const EvalResult& eval) {
        return window_checkpoint_metadata(c, pre, frames, epoch, at, eval, session->recent());
      };
    } else {
      describe = [&](std::int64_t epoch, std::int64_t at, const EvalResult& eval) {
        CheckpointMetadata meta = checkpoint_metadata(c, pre, *images.train, epoch, at, eval);
        meta["world_size"] = std::to_string(world);
        return meta;
      };
    }
    checkpoints.emplace(paths, *model, step.optimizer(), c.run.keep_checkpoints, start,
                        std::move(describe));
    metrics_callback.emplace(*metrics);
    callbacks.push_back(&*checkpoints);
    callbacks.push_back(&*metrics_callback);
    if (!c.run.quiet && options.progress != nullptr) {
      progress.emplace(options.progress, c.run.progress_interactive, video);
      callbacks.push_back(&*progress);
    }
  }
  callbacks.insert(callbacks.end(), options.callbacks.begin(), options.callbacks.end());

  SessionParts parts;
  parts.config = &c;
  parts.model = model.get();
  parts.step = &step;
  parts.dp = &dp;
  parts.batches = batches.get();
  parts.evaluation = evaluation.get();
  parts.device = device;
  parts.eval_name = eval_name;
  parts.run_dir = paths.dir.string();
  parts.last_checkpoint = paths.last_ckpt.string();
  parts.callbacks = std::move(callbacks);
  parts.wall_start = wall_start;
  session.emplace(std::move(parts));
  TrainResult result = session->run(start, std::move(recent));
  warnings.summarize();
  result.run_dir = paths.dir.string();
  if (checkpoints && !checkpoints->written().empty()) {
    result.checkpoint = checkpoints->written();
  } else if (fs::exists(paths.last_ckpt, ec)) {
    result.checkpoint = paths.last_ckpt.string();
  }
  result.global_batch_size = global_batch;
  if (options.weights_digest) result.weights_sha256 = nn::state_sha256(*model);
  if (video && clips.train_baseline_mse) result.dataset_baseline_mse = *clips.train_baseline_mse;
  return took_stop(std::move(result));
}

}  // namespace epoch::train
