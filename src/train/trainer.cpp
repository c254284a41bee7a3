// The training loop (see trainer.h): train() composes the run directory's lock and resume
// point, the model, data and Step, then per epoch train_epoch (train::Step on each batch),
// the divergence check, evaluation, the checkpoint and the epoch's record.
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

#include "clip_trainer.h"
#include "epoch/autograd/autograd.h"
#include "epoch/data/dataset.h"
#include "epoch/data/loader.h"
#include "epoch/dist/process_group.h"
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
#include "run_parts.h"

namespace epoch::train {
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::map<std::string, std::string> checkpoint_metadata(const TrainConfig& c,
                                                       const data::Preprocessing& pre,
                                                       const data::SampleSource& train_data,
                                                       std::int64_t epoch, std::int64_t step,
                                                       const EvalResult& eval) {
  return {{"model", c.run.model},
          {"preprocessing", pre.to_json()},
          {"class_names", json(train_data.class_names()).dump()},
          {"epoch", std::to_string(epoch)},
          {"step", std::to_string(step)},
          {"seed", std::to_string(c.run.seed)},
          {"determinism", determinism_name(c.execution.determinism)},
          {"config", c.to_json().dump()},
          {"test_loss", std::to_string(eval.loss)},
          {"test_accuracy", std::to_string(eval.accuracy)},
          {"epoch_version", EPOCH_VERSION}};
}

/// Everything one call of train() holds, built in this order.
struct Run : RunPaths {
  Run(const TrainConfig& config, Warnings& warnings_sink, int rank, int world);

  const TrainConfig& c;
  Warnings& warnings;
  Device device;
  std::shared_ptr<models::Model> model;
  TrainingData data;
  data::Preprocessing pre;
  data::LoaderConfig loader_config;
  std::int64_t n_train = 0, steps_per_epoch = 0;
  int rank = 0, world = 1;  // this process among the data-parallel ranks
  std::int64_t global_batch = 0;
};

Run::Run(const TrainConfig& config, Warnings& warnings_sink, int rank_, int world_)
    : RunPaths(config.run.out_dir),
      c(config),
      warnings(warnings_sink),
      device(training_device(c)),
      model(models::build_model(c.run.model)) {
  check_batch_fits(c, model->spec());
  data = open_training_data(c, model->spec());
  pre = preprocessing_for(c, model->spec());
  c.input.augment.validate();
  loader_config.batch_size = c.run.batch_size;
  loader_config.workers = resolve_workers(c, data, device.is_cuda() ? 1 : ops::num_threads());
  loader_config.prefetch = c.data.prefetch;
  loader_config.seed = c.run.seed;
  loader_config.on_bad_image = c.data.on_bad_image;
  n_train = data.train->size();
  rank = rank_;
  world = world_;
  global_batch = c.run.batch_size * world;
  // One process: ceil(n / batch). Ranks: global batches of batch x world (data::shard_order).
  steps_per_epoch = data::global_batches(n_train, c.run.batch_size, world);
  if (steps_per_epoch == 0)
    EPOCH_THROW(ConfigError, "the training set's ", n_train, " samples are fewer than the ", world,
                " ranks");
}

/// This rank's consecutive share of the evaluation samples (all of them for one process).
std::vector<std::int64_t> eval_shard(std::int64_t n, const Run& run) {
  const data::ShardSlice s = data::shard_slice(n, run.rank, run.world);
  std::vector<std::int64_t> order(static_cast<std::size_t>(s.count));
  std::iota(order.begin(), order.end(), s.offset);
  return order;
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

/// "(none yet)" or the last good checkpoint, for a message about a diverged run.
std::string last_good(const Run& run) {
  return fs::exists(run.last_ckpt) ? run.last_ckpt.string() : std::string("(none yet)");
}

struct EpochTotals {
  double loss_sum = 0.0;
  std::int64_t steps = 0, images = 0;  // images: over every rank
  double seconds = 0.0, wait_seconds = 0.0;
  CommTotals comm;  // data-parallel runs
  bool stopped = false;  // a stop was asked for (stop.h) and taken before the epoch's end
};

/// One epoch of steps: progress, a metrics record every --log-every steps. `global_step`
/// counts optimizer updates across the run. With several ranks each takes its shard of every
/// global batch (data::shard_order), and the loss reported is the global batch's. `within`:
/// where a run stopped inside this epoch resumes (its first batches were taken). In one
/// process a stop request (stop.h) ends the epoch after the current step.
EpochTotals train_epoch(Run& run, Step& step, DataParallel& dp, data::Loader& loader,
                        MetricsLog* metrics, Progress& progress, std::int64_t epoch,
                        std::int64_t& global_step, const ResumePoint& within) {
  const TrainConfig& c = run.c;
  std::vector<std::int64_t> order = data::epoch_order(run.n_train, c.run.seed, epoch, true);
  if (run.world > 1) order = data::shard_order(order, c.run.batch_size, run.rank, run.world);
  // The same batches as the uninterrupted epoch: each is a slice of the order, whose
  // augmentation draws from (seed, epoch, sample index) alone.
  const std::int64_t first = within.epoch_step;
  order.erase(order.begin(),
              order.begin() + std::min<std::int64_t>(first * run.global_batch,
                                                     static_cast<std::int64_t>(order.size())));
  loader.start_epoch(epoch, std::move(order));
  const double wait_before = loader.stats().wait_s;
  run.model->train(true);
  const bool show = !c.run.quiet && dp.lead();
  if (show) progress.start_epoch(epoch + 1, c.run.epochs, run.steps_per_epoch);
  const auto start = std::chrono::steady_clock::now();
  EpochTotals t;
  t.loss_sum = within.epoch_loss_sum;
  t.images = within.epoch_images;
  t.steps = first;
  double window_sum = 0.0;
  std::int64_t window_n = 0;
  // Batches whose images were all skipped are not steps; the schedule follows the planned
  // position in the epoch, so it ends where it was planned to.
  // Several ranks reading image files agree each step on how many samples survived (a rank
  // whose share was all bad images still takes part, with no gradient of its own).
  const bool count_each_step = run.world > 1 && run.data.from_files();
  // Each step's loss on its way to the host, accounted in step order by settle(): the NaN
  // guard, the sums, the progress bar and the metrics records. On the CPU a loss is read at
  // once. On a device it stays there and the losses are read back together every --log-every
  // steps, before a stop and at the epoch's end (so before any checkpoint): the host queues
  // steps ahead instead of waiting for each one. Several ranks agree on each step's global
  // loss as it comes.
  struct Pending {
    Tensor loss;        // on the device, detached (undefined: `value` holds it)
    double value = 0.0;
    std::int64_t s = 0, global_step = 0, images = 0;
    float lr = 0.0f;    // the step's learning rate
  };
  std::vector<Pending> pending;
  const bool read_each_step =
      (!run.device.is_cuda() && !c.run.batched_loss_readback) || run.world > 1;
  const auto settle = [&] {
    for (const Pending& p : pending) {
      const double lv = dp.mean_loss(p.loss.defined() ? p.loss.to(Device::cpu()).item() : p.value);
      if (!std::isfinite(lv))
        EPOCH_THROW(NumericalError, "loss became ", lv, " at epoch ", epoch + 1, " step ", p.s + 1,
                    " (lr ", p.lr, "); the last good checkpoint is ", last_good(run));
      t.loss_sum += lv;
      window_sum += lv;
      ++window_n;
      t.images += p.images;
      t.steps = p.s + 1;
      if (show) progress.update(p.s + 1, t.images, window_sum / static_cast<double>(window_n));
      if (metrics != nullptr && c.run.log_every > 0 && p.global_step % c.run.log_every == 0) {
        metrics->write({{"kind", "step"},
                        {"epoch", epoch + 1},
                        {"step", p.global_step},
                        {"loss", window_sum / static_cast<double>(window_n)},
                        {"lr", p.lr}});
        window_sum = 0.0;
        window_n = 0;
      }
    }
    pending.clear();
  };
  const std::size_t bad_before = loader.stats().bad_files.size();
  for (std::int64_t s = first; s < run.steps_per_epoch; ++s) {
    // (after a bad image the batches no longer match the order's slices one to one, so the
    // epoch runs to its end, where the stop is taken)
    if (s > first && run.world == 1 && stop_requested() &&
        loader.stats().bad_files.size() == bad_before) {
      t.stopped = true;
      break;
    }
    const data::Batch* batch = loader.next();
    if (batch == nullptr) break;  // bad images were skipped: fewer batches this epoch
    const std::int64_t local = batch->images.size(0);
    const std::int64_t global_count =
        count_each_step ? dp.global_count(local)
                        : std::min(run.global_batch, run.n_train - s * run.global_batch);
    if (global_count == 0) continue;  // every rank's share was bad: no step anywhere
    dp.set_share(run.world > 1 && !count_each_step
                     ? data::shard_slice(global_count, run.rank, run.world).count
                     : local,
                 global_count);
    const std::int64_t position = epoch * run.steps_per_epoch + s;
    Pending p;
    if (local > 0) {
      const Tensor x = batch->images.to(run.device), labels = batch->labels.to(run.device);
      const Tensor loss = step.run(x, labels, position, static_cast<std::uint64_t>(global_step));
      if (read_each_step) {
        p.value = loss.item();
      } else {
        p.loss = loss.detach();
      }
    } else {
      step.run_without_batch(position);
    }
    ++global_step;
    p.s = s;
    p.global_step = global_step;
    p.images = run.world > 1 ? global_count : batch->images.size(0);
    p.lr = step.optimizer().lr();
    pending.push_back(std::move(p));
    if (read_each_step || (c.run.log_every > 0 && global_step % c.run.log_every == 0)) settle();
    if (c.run.check_ranks_every > 0 && global_step % c.run.check_ranks_every == 0)
      dp.check_in_sync("after step " + std::to_string(global_step));
  }
  settle();
  if (t.steps == 0)
    EPOCH_THROW(IoError, run.data.train->description(), ": every training image of epoch ",
                epoch + 1, " was skipped as bad (see the warnings)");
  t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  t.wait_seconds = loader.stats().wait_s - wait_before;
  t.comm = dp.take_totals();
  return t;
}

/// The epoch's checkpoint (last, epoch-K, best when it is the best so far), written before
/// the epoch's record: a kill between them leaves a record that resuming removes
/// (truncate_metrics_after), never a record without its checkpoint. The best result so far
/// travels in every checkpoint, so a resumed run knows it.
void save_epoch_checkpoint(const Run& run, const optim::Optimizer& optimizer, std::int64_t epoch,
                           std::int64_t global_step, const EvalResult& eval, ResumePoint& best) {
  const bool best_now = better_than(eval, best.best_accuracy, best.best_loss);
  if (best_now) {
    best.best_accuracy = eval.accuracy;
    best.best_loss = eval.loss;
  }
  auto meta = checkpoint_metadata(run.c, run.pre, *run.data.train, epoch + 1, global_step, eval);
  meta["best_test_accuracy"] = json(best.best_accuracy).dump();
  meta["best_test_loss"] = json(best.best_loss).dump();
  meta["world_size"] = std::to_string(run.world);
  write_epoch_checkpoints(run, *run.model, optimizer, std::move(meta), epoch + 1, best_now,
                          run.c.run.keep_checkpoints);
}

json epoch_record(std::int64_t epoch, std::int64_t global_step, const EpochTotals& t,
                  const EvalResult& eval, double elapsed_s) {
  json record{{"kind", "epoch"},
              {"epoch", epoch + 1},
              {"step", global_step},
              {"train_loss", t.loss_sum / static_cast<double>(t.steps)},
              {"test_loss", eval.loss},
              {"images_per_s", static_cast<double>(t.images) / t.seconds},
              {"epoch_s", t.seconds},
              {"peak_rss_mib", peak_rss_mib()},
              {"data_wait_s", t.wait_seconds},
              {"elapsed_s", elapsed_s}};
  if (t.comm.steps > 0) {  // several ranks: where the communication went
    record["comm_s"] = t.comm.busy_s;
    record["comm_exposed_s"] = t.comm.exposed_s;
    record["comm_hidden_fraction"] =
        t.comm.busy_s > 0 ? 1.0 - std::min(1.0, t.comm.exposed_s / t.comm.busy_s) : 1.0;
    record["comm_bytes_per_step"] = t.comm.bytes / t.comm.steps;
  }
  record["test_accuracy"] = eval.accuracy >= 0 ? json(eval.accuracy) : json(nullptr);
  if (eval.top5_accuracy >= 0) record["test_top5_accuracy"] = eval.top5_accuracy;
  return record;
}

std::string epoch_line(std::int64_t epoch, const EpochTotals& t, const EvalResult& eval,
                       const std::string& eval_name) {
  const double train_loss = t.loss_sum / static_cast<double>(t.steps);
  const double ips = static_cast<double>(t.images) / t.seconds;
  char line[320];
  char top5[48] = "";
  if (eval.top5_accuracy >= 0)
    std::snprintf(top5, sizeof top5, " (top-5 %.2f%%)", 100.0 * eval.top5_accuracy);
  if (eval.accuracy >= 0)
    std::snprintf(line, sizeof line,
                  "epoch %lld: train loss %.4f | %s loss %.4f | %s accuracy %.2f%%%s | %.0f img/s",
                  static_cast<long long>(epoch + 1), train_loss, eval_name.c_str(), eval.loss,
                  eval_name.c_str(), 100.0 * eval.accuracy, top5, ips);
  else
    std::snprintf(line, sizeof line, "epoch %lld: train loss %.5f | %s loss %.5f | %.0f img/s",
                  static_cast<long long>(epoch + 1), train_loss, eval_name.c_str(), eval.loss, ips);
  return line;
}

}  // namespace

TrainResult train(const TrainConfig& requested, std::FILE* progress_out, Warnings* warnings_in) {
  const auto wall_start = std::chrono::steady_clock::now();
  const auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  };
  TrainConfig c = requested;
  if (c.run.out_dir.empty()) c.run.out_dir = default_run_dir(c.run.model);
  Warnings own_warnings(stderr);  // --quiet silences progress, never warnings
  Warnings& warnings = warnings_in != nullptr ? *warnings_in : own_warnings;
  check_common_config(c);
  const bool video = models::find_model(c.run.model).task == models::Task::frame_prediction;
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
  // The first collective: every rank was started with the same run (mpirun's MPMD form, a
  // script's typo or another config file could give a rank other settings), before any size
  // is trusted. The data's size, the steps and the parameters are compared below, once known.
  const std::vector<dist::Setting> settings = run_settings_ranks_share(c);
  dist::expect_same_settings(group, settings, "a training run");
  const fs::path run_dir = c.run.out_dir;
  std::error_code ec;
  if (lead && c.run.resume && !fs::is_directory(run_dir, ec))
    EPOCH_THROW(IoError, run_dir.string(), ": no run to resume (no such folder)");
  std::optional<RunDirLock> lock;
  ResumePoint start;
  if (lead) {
    check_run_dir_allowed(run_dir.string());
    lock.emplace(run_dir.string());
    if (remove_orphaned_temporaries(run_dir.string()) > 0)
      warnings.warn("temporary files", "removed temporary checkpoint files a stopped run left in " +
                                           (run_dir / "checkpoints").string());
    start = resume_point(c, run_dir);
    if (c.run.resume) {
      const std::int64_t stored_world =
          start.checkpoint.metadata.count("world_size") > 0
              ? metadata_int(start.checkpoint, "world_size", 1, std::int64_t{1} << 30)
              : 1;
      if (stored_world != group.size())
        EPOCH_THROW(ConfigError, "resuming ", run_dir.string(), ": the run trained on ",
                    stored_world, " process(es), this launch has ", group.size(),
                    " (the shards and steps of an epoch depend on it)");
    }
  }
  std::int64_t position[2] = {start.epoch, start.step};
  group.broadcast(position, sizeof position, 0, "the resume position");
  start.epoch = position[0];
  start.step = position[1];

  // This call's kernels and threads, for this thread only and restored on return.
  const ops::ContextGuard context(kernel_context(c.execution));
  if (video) return took_stop(train_clips(c, start, progress_out, warnings, wall_start));

  // Model, data, step (optimizer and schedule), restored when resuming.
  Run run(c, warnings, group.rank(), group.size());
  initialize_model(*run.model, c);
  run.model->to(run.device);
  Step step(*run.model, c.optimizer, planned_schedule(c, run.steps_per_epoch, run.global_batch),
            c.run.seed);
  if (c.run.resume && lead) {
    load_model_state(start.checkpoint, *run.model);
    load_optimizer_state(start.checkpoint, step.optimizer());
  }
  std::vector<dist::Setting> job = settings;
  job.push_back({"the training samples", std::to_string(run.n_train)});
  job.push_back({"the validation samples", std::to_string(run.data.val->size())});
  job.push_back({"the steps per epoch", std::to_string(run.steps_per_epoch)});
  job.push_back({"the starting epoch and step",
                 std::to_string(start.epoch) + ", " + std::to_string(start.step)});
  DataParallel dp(group, step, *run.model,
                  static_cast<std::int64_t>(c.run.bucket_mib * 1024.0 * 1024.0), std::move(job),
                  "a training run");
  dp.broadcast_state();
  if (c.run.resume) broadcast_optimizer_state(group, step.optimizer());
  dp.check_in_sync("at the start");
  if (start.epoch >= c.run.epochs)
    EPOCH_THROW(ConfigError, run_dir.string(), " already completed ", start.epoch,
                " epochs; pass a larger --epochs to continue");

  // What the run writes: config.json, metrics.jsonl (records past the checkpoint, of a run
  // killed after logging them, are logged again), checkpoints.
  std::optional<MetricsLog> metrics;
  if (lead) {
    fs::create_directories(run.ckpt_dir, ec);
    if (ec) EPOCH_THROW(IoError, run.ckpt_dir.string(), ": cannot create: ", ec.message());
    write_run_config(run_dir, c, *run.model, run.world);
    if (c.run.resume) truncate_metrics_after(run_dir.string(), start.step);
    metrics.emplace((run_dir / "metrics.jsonl").string());
  }
  Progress progress(progress_out, c.run.progress_interactive);
  data::LoaderConfig train_config = run.loader_config;
  train_config.keep_empty_batches = run.world > 1;  // ranks step together (train_epoch)
  data::Loader loader(*run.data.train, run.pre, c.input.augment, train_config, &warnings);
  data::LoaderConfig eval_config = run.loader_config;
  eval_config.batch_size = c.run.eval_batch_size > 0
                               ? c.run.eval_batch_size
                               : auto_eval_batch_size(run.model->spec(), c.run.batch_size);
  data::Loader eval_loader(*run.data.val, run.pre, std::nullopt, eval_config, &warnings);

  // Each epoch: train, check for divergence, evaluate, checkpoint, log.
  TrainResult result;
  result.run_dir = run_dir.string();
  result.eval_name = run.data.val_name;
  double train_seconds = 0.0, wait_seconds = 0.0;
  std::int64_t images_this_run = 0, global_step = start.step;
  EvalResult eval;
  const std::int64_t end_epoch = c.run.stop_after_epochs > 0
                                     ? std::min(c.run.epochs, start.epoch + c.run.stop_after_epochs)
                                     : c.run.epochs;
  double comm_s = 0.0, comm_exposed_s = 0.0;
  std::int64_t completed = start.epoch;
  for (std::int64_t epoch = start.epoch; epoch < end_epoch; ++epoch) {
    if (run.world == 1 && stop_requested() && epoch > start.epoch) {  // between epochs
      result.stopped = result.stop_saved = true;
      break;
    }
    const EpochTotals t =
        train_epoch(run, step, dp, loader, metrics ? &*metrics : nullptr, progress, epoch,
                    global_step, epoch == start.epoch ? start : ResumePoint{});
    if (t.stopped) {
      // Where it stands, inside the epoch: a checkpoint that resumes bit for bit (no
      // evaluation, no epoch record; the last good parameters checked first).
      if (const std::string bad = first_non_finite_tensor(*run.model, &step.optimizer());
          !bad.empty())
        EPOCH_THROW(NumericalError, "stopping in epoch ", epoch + 1, ": tensor '", bad,
                    "' holds NaN or infinite values, so nothing was saved; the last good "
                    "checkpoint is ",
                    last_good(run));
      auto meta = checkpoint_metadata(c, run.pre, *run.data.train, epoch, global_step, eval);
      for (const char* key : {"test_loss", "test_accuracy"}) {  // the last evaluation's, if any
        if (eval.count > 0) continue;
        if (start.checkpoint.metadata.count(key) > 0) {
          meta[key] = start.checkpoint.metadata.at(key);
        } else {
          meta.erase(key);
        }
      }
      if (std::isfinite(start.best_loss)) {  // an epoch was evaluated before
        meta["best_test_accuracy"] = json(start.best_accuracy).dump();
        meta["best_test_loss"] = json(start.best_loss).dump();
      }
      meta["world_size"] = "1";
      meta["epoch_step"] = std::to_string(t.steps);
      meta["epoch_loss_sum"] = json(t.loss_sum).dump();
      meta["epoch_images"] = std::to_string(t.images);
      write_stop_checkpoint(run, *run.model, step.optimizer(), std::move(meta));
      result.checkpoint = run.last_ckpt.string();
      result.train_loss = t.loss_sum / static_cast<double>(t.steps);
      train_seconds += t.seconds;
      wait_seconds += t.wait_seconds;
      images_this_run += t.images - (epoch == start.epoch ? start.epoch_images : 0);
      result.stopped = result.stop_saved = true;
      result.stopped_in_epoch = epoch + 1;
      result.stopped_epoch_step = t.steps;
      if (!c.run.quiet && lead)
        progress.end_epoch("epoch " + std::to_string(epoch + 1) + ": stopped after step " +
                           std::to_string(t.steps) + " of " +
                           std::to_string(run.steps_per_epoch));
      break;
    }
    train_seconds += t.seconds;
    wait_seconds += t.wait_seconds;
    images_this_run += t.images - (epoch == start.epoch ? start.epoch_images : 0);
    comm_s += t.comm.busy_s;
    comm_exposed_s += t.comm.exposed_s;
    result.train_loss = t.loss_sum / static_cast<double>(t.steps);
    dp.check_in_sync("after epoch " + std::to_string(epoch + 1) + " (step " +
                     std::to_string(global_step) + ")");

    if (const std::string bad = first_non_finite_tensor(*run.model, &step.optimizer());
        !bad.empty())
      EPOCH_THROW(NumericalError, "training diverged in epoch ", epoch + 1, ": tensor '", bad,
                  "' holds NaN or infinite values (lr ", step.optimizer().lr(),
                  "); nothing of this epoch was saved, the last good checkpoint is ",
                  last_good(run));
    // Batch norm's statistics from rank 0, then each rank evaluates its shard.
    dp.broadcast_buffers();
    eval = dp.reduce(evaluate(*run.model, eval_loader, eval_shard(run.data.val->size(), run)));
    if (eval.count == 0)
      EPOCH_THROW(IoError, run.data.val->description(), ": every ", run.data.val_name,
                  " image was skipped as bad (see the warnings), so there is nothing to report");
    if (lead) {
      save_epoch_checkpoint(run, step.optimizer(), epoch, global_step, eval, start);
      result.checkpoint = run.last_ckpt.string();
      metrics->write(epoch_record(epoch, global_step, t, eval, elapsed()));
      if (!c.run.quiet) progress.end_epoch(epoch_line(epoch, t, eval, run.data.val_name));
    }
    completed = epoch + 1;
  }
  warnings.summarize();
  result.epochs = completed;
  result.steps = global_step;
  result.evaluated = eval.count > 0;
  result.test_loss = eval.loss;
  result.test_accuracy = eval.accuracy;
  result.test_top5_accuracy = eval.top5_accuracy;
  result.images_per_s =
      train_seconds > 0 ? static_cast<double>(images_this_run) / train_seconds : 0;
  result.data_wait_fraction = train_seconds > 0 ? wait_seconds / train_seconds : 0.0;
  result.skipped_images = static_cast<std::int64_t>(loader.stats().bad_files.size() +
                                                    eval_loader.stats().bad_files.size());
  result.wall_s = elapsed();
  result.world_size = run.world;
  result.global_batch_size = run.global_batch;
  result.comm_s = comm_s;
  result.comm_exposed_s = comm_exposed_s;
  return took_stop(std::move(result));
}

}  // namespace epoch::train
