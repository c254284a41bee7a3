// The training loop (see session.h).
#include "session.h"

#include <chrono>
#include <cmath>
#include <filesystem>

#include "epoch/data/dataset.h"
#include "epoch/train/checkpoint.h"
#include "epoch/train/stop.h"

namespace epoch::train {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

struct Session::EpochTotals {
  double loss_sum = 0.0, baseline_sum = 0.0;
  std::int64_t taken = 0;     // steps whose loss is in the sums
  std::int64_t position = 0;  // batches of the epoch behind it (skipped ones included)
  std::int64_t samples = 0;   // over every rank
  double seconds = 0.0, wait_seconds = 0.0;
  CommTotals comm;       // data-parallel runs
  bool stopped = false;  // a stop was asked for and taken before the epoch's end
  double mean_loss() const { return loss_sum / static_cast<double>(taken); }
  double mean_baseline() const { return baseline_sum / static_cast<double>(taken); }
};

Session::Session(SessionParts parts) : p_(std::move(parts)), c_(*p_.config) {}

bool Session::stop_asked() const {
  // (ranks step together: a stop inside a data-parallel run is not taken)
  return p_.dp->world() == 1 && (stop_requested() || control_.stop_asked());
}

std::string Session::last_good() const {
  return std::filesystem::exists(p_.last_checkpoint) ? p_.last_checkpoint
                                                     : std::string("(none yet)");
}

/// One epoch of steps. `global_step` counts optimizer updates across the run. With several
/// ranks each takes its shard of every global batch, and the loss reported is the global
/// batch's. `within`: where a run stopped inside this epoch resumes (its first batches were
/// taken). In one process a stop request ends the epoch after the current step.
Session::EpochTotals Session::train_epoch(std::int64_t epoch, std::int64_t& global_step,
                                          const ResumePoint& within) {
  BatchSource& batches = *p_.batches;
  DataParallel& dp = *p_.dp;
  Step& step = *p_.step;
  const std::int64_t steps = batches.steps_per_epoch();
  const std::int64_t frames = batches.frames_per_sample();
  const std::int64_t first = within.epoch_step;
  p_.model->train(true);
  batches.start_epoch(epoch, first);
  const double wait_before = batches.wait_seconds();
  for (Callback* cb : p_.callbacks) cb->on_epoch_start({epoch + 1, c_.run.epochs, steps, first});
  const auto start = Clock::now();
  EpochTotals t;
  t.loss_sum = within.epoch_loss_sum;
  t.samples = within.epoch_images;
  t.taken = t.position = first;
  double window_sum = 0.0, window_base = 0.0;
  std::int64_t window_n = 0;
  // Each step's loss on its way to the host, accounted in step order by settle(): the NaN
  // guard, the sums and the callbacks. On the CPU a loss is read at once. On a device it
  // stays there and the losses are read back together every --log-every steps, before a stop
  // and at the epoch's end (so before any checkpoint): the host queues steps ahead instead of
  // waiting for each one. Several ranks agree on each step's global loss as it comes.
  struct Pending {
    Tensor loss;  // on the device, detached (undefined: `value` holds it)
    double value = 0.0, baseline = -1.0;
    std::int64_t s = 0, global_step = 0, samples = 0;
    float lr = 0.0f;  // the step's learning rate
  };
  std::vector<Pending> pending;
  const bool read_each_step =
      (!p_.device.is_cuda() && !c_.run.batched_loss_readback) || dp.world() > 1;
  const auto settle = [&] {
    for (const Pending& q : pending) {
      const double lv = dp.mean_loss(q.loss.defined() ? q.loss.to(Device::cpu()).item() : q.value);
      if (!std::isfinite(lv))
        EPOCH_THROW(NumericalError, "loss became ", lv, " at epoch ", epoch + 1, " step ", q.s + 1,
                    " (lr ", q.lr, "); the last good checkpoint is ", last_good());
      const bool video = q.baseline >= 0;
      t.loss_sum += lv;
      t.baseline_sum += video ? q.baseline : 0.0;
      t.samples += q.samples;
      ++t.taken;
      t.position = q.s + 1;
      window_sum += lv;
      window_base += video ? q.baseline : 0.0;
      ++window_n;
      if (video) {
        recent_.emplace_back(lv, q.baseline);
        if (recent_.size() > kRecentSteps) recent_.pop_front();
      }
      StepEnd e;
      e.epoch = epoch + 1;
      e.step = q.s + 1;
      e.steps_per_epoch = steps;
      e.global_step = q.global_step;
      e.loss = lv;
      e.baseline_mse = q.baseline;
      e.window_loss = window_sum / static_cast<double>(window_n);
      if (video) e.window_baseline_mse = window_base / static_cast<double>(window_n);
      e.log_step = c_.run.log_every > 0 && q.global_step % c_.run.log_every == 0;
      e.samples = t.samples;
      e.frames_per_sample = frames;
      e.lr = q.lr;
      for (Callback* cb : p_.callbacks) cb->on_step_end(e, control_);
      if (e.log_step) {
        window_sum = window_base = 0.0;
        window_n = 0;
      }
    }
    pending.clear();
  };
  for (std::int64_t s = first; s < steps; ++s) {
    if (c_.run.max_steps > 0 && global_step >= c_.run.max_steps) break;  // the run's length
    // (a callback asks while its step is settled: at once on the CPU, with the next
    // read-back on a device)
    if (s > first && stop_asked() && batches.can_stop_here()) {
      t.stopped = true;
      break;
    }
    std::optional<SourceBatch> batch = batches.next(s);
    if (!batch) break;  // bad images were skipped: fewer batches this epoch
    if (batch->skip) continue;
    const std::int64_t global_count =
        batch->planned_global >= 0 ? batch->planned_global : dp.global_count(batch->samples);
    if (global_count == 0) continue;  // every rank's share was bad: no step anywhere
    dp.set_share(dp.world() > 1 && batch->planned_global >= 0
                     ? data::shard_slice(global_count, dp.rank(), dp.world()).count
                     : batch->samples,
                 global_count);
    const std::int64_t position = epoch * steps + s;
    Pending q;
    if (batch->samples > 0) {
      const Tensor x = batch->x.to(p_.device), labels = batch->labels.to(p_.device);
      const Tensor loss = step.run(x, labels, position, static_cast<std::uint64_t>(global_step));
      if (read_each_step) {
        q.value = loss.item();
      } else {
        q.loss = loss.detach();
      }
    } else {
      step.run_without_batch(position);
    }
    ++global_step;
    q.s = s;
    q.global_step = global_step;
    q.samples = global_count;
    q.baseline = batch->baseline_mse;
    q.lr = step.optimizer().lr();
    pending.push_back(std::move(q));
    if (read_each_step || (c_.run.log_every > 0 && global_step % c_.run.log_every == 0)) settle();
  }
  settle();
  if (t.taken == 0) EPOCH_THROW(IoError, batches.nothing_trained(epoch));
  batches.end_epoch();
  t.seconds = since(start);
  t.wait_seconds = batches.wait_seconds() - wait_before;
  t.comm = dp.take_totals();
  return t;
}

TrainResult Session::run(const ResumePoint& start, RecentLosses recent) {
  recent_ = std::move(recent);
  while (recent_.size() > kRecentSteps) recent_.pop_front();
  DataParallel& dp = *p_.dp;
  BatchSource& batches = *p_.batches;
  const std::int64_t frames = batches.frames_per_sample();
  TrainResult result;
  result.eval_name = p_.eval_name;
  result.frames_per_sample = frames;
  result.world_size = dp.world();
  double train_seconds = 0.0, wait_seconds = 0.0, comm_s = 0.0, comm_exposed_s = 0.0;
  std::int64_t samples_this_run = 0, global_step = start.step;
  const std::int64_t end_epoch = c_.run.stop_after_epochs > 0
                                     ? std::min(c_.run.epochs, start.epoch + c_.run.stop_after_epochs)
                                     : c_.run.epochs;
  std::int64_t completed = start.epoch;
  RunStart run_start;
  run_start.run_dir = p_.run_dir;
  run_start.model = c_.run.model;
  run_start.epochs = c_.run.epochs;
  run_start.start_epoch = start.epoch;
  run_start.start_step = start.step;
  run_start.steps_per_epoch = batches.steps_per_epoch();
  run_start.world_size = dp.world();
  for (Callback* cb : p_.callbacks) cb->on_run_start(run_start);
  for (std::int64_t epoch = start.epoch; epoch < end_epoch; ++epoch) {
    if (epoch > start.epoch && stop_asked()) {  // between epochs: nothing is lost
      result.stopped = result.stop_saved = true;
      StopEnd e;
      e.global_step = global_step;
      for (Callback* cb : p_.callbacks) cb->on_stop(e);
      break;
    }
    const ResumePoint within = epoch == start.epoch ? start : ResumePoint{};
    const EpochTotals t = train_epoch(epoch, global_step, within);
    train_seconds += t.seconds;
    wait_seconds += t.wait_seconds;
    samples_this_run += t.samples - within.epoch_images;
    comm_s += t.comm.busy_s;
    comm_exposed_s += t.comm.exposed_s;
    result.train_loss = t.mean_loss();
    if (t.stopped) {
      // Where it stands, inside the epoch: the callbacks write a checkpoint that resumes bit
      // for bit (no evaluation, no epoch record; the parameters checked first).
      StopEnd e;
      e.epoch = epoch + 1;
      e.step = t.position;
      e.steps_per_epoch = batches.steps_per_epoch();
      e.epoch_loss_sum = t.loss_sum;
      e.epoch_samples = t.samples;
      e.global_step = global_step;
      e.resumable = batches.resumes_inside_epoch();
      if (e.resumable)
        if (const std::string bad = first_non_finite_tensor(*p_.model, &p_.step->optimizer());
            !bad.empty())
          EPOCH_THROW(NumericalError, "stopping in epoch ", epoch + 1, ": tensor '", bad,
                      "' holds NaN or infinite values, so nothing was saved; the last good "
                      "checkpoint is ",
                      last_good());
      for (Callback* cb : p_.callbacks) cb->on_stop(e);
      result.stopped = true;
      result.stop_saved = e.resumable;
      result.stopped_in_epoch = epoch + 1;
      result.stopped_epoch_step = t.position;
      break;
    }
    dp.check_in_sync("after epoch " + std::to_string(epoch + 1) + " (step " +
                     std::to_string(global_step) + ")");
    if (const std::string bad = first_non_finite_tensor(*p_.model, &p_.step->optimizer());
        !bad.empty())
      EPOCH_THROW(NumericalError, "training diverged in epoch ", epoch + 1, ": tensor '", bad,
                  "' holds NaN or infinite values (lr ", p_.step->optimizer().lr(),
                  "); nothing of this epoch was saved, the last good checkpoint is ",
                  last_good());
    // Batch norm's statistics from rank 0, then each rank evaluates its shard.
    dp.broadcast_buffers();
    eval_ = dp.reduce(p_.evaluation->evaluate(*p_.model));
    if (eval_.count == 0) EPOCH_THROW(IoError, p_.evaluation->nothing_evaluated());
    EpochEnd e;
    e.epoch = epoch + 1;
    e.global_step = global_step;
    e.train_loss = t.mean_loss();
    if (eval_.baseline_mse >= 0) e.train_baseline_mse = t.mean_baseline();
    e.eval = eval_;
    e.eval_name = p_.eval_name;
    e.samples = t.samples;
    e.frames_per_sample = frames;
    e.seconds = t.seconds;
    e.data_wait_s = t.wait_seconds;
    e.elapsed_s = since(p_.wall_start);
    e.comm_s = t.comm.busy_s;
    e.comm_exposed_s = t.comm.exposed_s;
    e.comm_steps = t.comm.steps;
    e.comm_bytes = static_cast<double>(t.comm.bytes);
    for (Callback* cb : p_.callbacks) cb->on_epoch_end(e, control_);
    completed = epoch + 1;
  }
  result.epochs = completed;
  result.steps = global_step;
  result.evaluated = eval_.count > 0;
  result.test_loss = eval_.loss;
  result.test_loss_f64 = eval_.loss_f64;
  result.test_accuracy = eval_.accuracy;
  result.test_top5_accuracy = eval_.top5_accuracy;
  result.images_per_s =
      train_seconds > 0 ? static_cast<double>(samples_this_run) / train_seconds : 0.0;
  if (frames > 1) {
    result.frames_per_s = result.images_per_s * static_cast<double>(frames);
    result.test_baseline_mse = eval_.count > 0 ? eval_.baseline_mse : -1.0;
    result.recent_steps = static_cast<std::int64_t>(recent_.size());
    for (const auto& [loss, base] : recent_) {
      result.recent_loss += loss;
      result.recent_baseline_mse += base;
    }
    if (!recent_.empty()) {
      result.recent_loss /= static_cast<double>(recent_.size());
      result.recent_baseline_mse /= static_cast<double>(recent_.size());
    }
  }
  result.data_wait_fraction = train_seconds > 0 ? wait_seconds / train_seconds : 0.0;
  result.skipped_images = batches.bad_samples() + p_.evaluation->bad_samples();
  result.comm_s = comm_s;
  result.comm_exposed_s = comm_exposed_s;
  result.wall_s = since(p_.wall_start);
  return result;
}

}  // namespace epoch::train
