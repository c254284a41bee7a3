// The callbacks of `epoch train` (see run_callbacks.h).
#include "run_callbacks.h"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace epoch::train {
using json = nlohmann::json;

namespace {

std::string image_epoch_line(const EpochEnd& e) {
  const double ips = static_cast<double>(e.samples) / e.seconds;
  const char* name = e.eval_name.c_str();
  char line[320];
  char top5[48] = "";
  if (e.eval.top5_accuracy >= 0)
    std::snprintf(top5, sizeof top5, " (top-5 %.2f%%)", 100.0 * e.eval.top5_accuracy);
  if (e.eval.accuracy >= 0)
    std::snprintf(line, sizeof line,
                  "epoch %lld: train loss %.4f | %s loss %.4f | %s accuracy %.2f%%%s | %.0f img/s",
                  static_cast<long long>(e.epoch), e.train_loss, name, e.eval.loss, name,
                  100.0 * e.eval.accuracy, top5, ips);
  else
    std::snprintf(line, sizeof line, "epoch %lld: train loss %.5f | %s loss %.5f | %.0f img/s",
                  static_cast<long long>(e.epoch), e.train_loss, name, e.eval.loss, ips);
  return line;
}

std::string video_epoch_line(const EpochEnd& e) {
  char line[320];
  std::snprintf(line, sizeof line,
                "epoch %lld: train loss %.5f (previous frame %.5f) | %s loss %.5f (previous "
                "frame %.5f) | %.1f frames/s",
                static_cast<long long>(e.epoch), e.train_loss, e.train_baseline_mse,
                e.eval_name.c_str(), e.eval.loss, e.eval.baseline_mse,
                static_cast<double>(e.samples * e.frames_per_sample) / e.seconds);
  return line;
}

}  // namespace

ProgressCallback::ProgressCallback(std::FILE* out, bool interactive, bool video)
    : progress_(out, interactive) {
  if (video) progress_.set_unit("frames");
}

void ProgressCallback::on_epoch_start(const EpochStart& e) {
  progress_.start_epoch(e.epoch, e.epochs, e.steps_per_epoch);
}

void ProgressCallback::on_step_end(const StepEnd& e, RunControl&) {
  progress_.update(e.step, e.samples * e.frames_per_sample, e.window_loss);
}

void ProgressCallback::on_epoch_end(const EpochEnd& e, RunControl&) {
  progress_.end_epoch(e.eval.baseline_mse >= 0 ? video_epoch_line(e) : image_epoch_line(e));
}

void ProgressCallback::on_stop(const StopEnd& e) {
  if (e.epoch == 0) return;  // between epochs: the last line stands
  progress_.end_epoch("epoch " + std::to_string(e.epoch) + ": stopped after step " +
                      std::to_string(e.step) + " of " + std::to_string(e.steps_per_epoch) +
                      (e.resumable ? "" : "; this epoch is not saved"));
}

void MetricsCallback::on_step_end(const StepEnd& e, RunControl&) {
  if (!e.log_step) return;
  json record{{"kind", "step"},
              {"epoch", e.epoch},
              {"step", e.global_step},
              {"loss", e.window_loss},
              {"lr", e.lr}};
  if (e.window_baseline_mse >= 0) record["baseline_mse"] = e.window_baseline_mse;
  log_.write(record);
}

void MetricsCallback::on_epoch_end(const EpochEnd& e, RunControl&) {
  json record{{"kind", "epoch"},
              {"epoch", e.epoch},
              {"step", e.global_step},
              {"train_loss", e.train_loss},
              {"test_loss", e.eval.loss},
              {"images_per_s", static_cast<double>(e.samples) / e.seconds},
              {"epoch_s", e.seconds},
              {"peak_rss_mib", peak_rss_mib()},
              {"data_wait_s", e.data_wait_s},
              {"elapsed_s", e.elapsed_s}};
  if (e.comm_steps > 0) {  // several ranks: where the communication went
    record["comm_s"] = e.comm_s;
    record["comm_exposed_s"] = e.comm_exposed_s;
    record["comm_hidden_fraction"] =
        e.comm_s > 0 ? 1.0 - std::min(1.0, e.comm_exposed_s / e.comm_s) : 1.0;
    record["comm_bytes_per_step"] = e.comm_bytes / static_cast<double>(e.comm_steps);
  }
  record["test_accuracy"] = e.eval.accuracy >= 0 ? json(e.eval.accuracy) : json(nullptr);
  if (e.eval.top5_accuracy >= 0) record["test_top5_accuracy"] = e.eval.top5_accuracy;
  if (e.eval.baseline_mse >= 0) {  // video
    record["train_baseline_mse"] = e.train_baseline_mse;
    record["test_baseline_mse"] = e.eval.baseline_mse;
    record["frames_per_s"] =
        static_cast<double>(e.samples * e.frames_per_sample) / e.seconds;
  }
  log_.write(record);
}

CheckpointCallback::CheckpointCallback(
    const RunPaths& paths, const nn::Module& model, const optim::Optimizer& optimizer,
    std::int64_t keep, const ResumePoint& start,
    std::function<CheckpointMetadata(std::int64_t, std::int64_t, const EvalResult&)> metadata)
    : paths_(paths),
      model_(model),
      optimizer_(optimizer),
      keep_(keep),
      start_(start),
      metadata_(std::move(metadata)),
      best_accuracy_(start.best_accuracy),
      best_loss_(start.best_loss) {}

CheckpointMetadata CheckpointCallback::with_best(CheckpointMetadata meta) const {
  meta["best_test_accuracy"] = json(best_accuracy_).dump();
  meta["best_test_loss"] = json(best_loss_).dump();
  return meta;
}

void CheckpointCallback::on_epoch_end(const EpochEnd& e, RunControl&) {
  last_eval_ = e.eval;
  const bool best_now = better_than(e.eval, best_accuracy_, best_loss_);
  if (best_now) {
    best_accuracy_ = e.eval.accuracy;
    best_loss_ = e.eval.loss;
  }
  write_epoch_checkpoints(paths_, model_, optimizer_,
                          with_best(metadata_(e.epoch, e.global_step, e.eval)), e.epoch, best_now,
                          keep_);
  written_ = paths_.last_ckpt.string();
}

void CheckpointCallback::on_stop(const StopEnd& e) {
  if (e.epoch == 0 || !e.resumable) return;  // the last epoch's checkpoint stands
  CheckpointMetadata meta = metadata_(e.epoch - 1, e.global_step, last_eval_);
  for (const char* key : {"test_loss", "test_accuracy"}) {  // the last evaluation's, if any
    if (last_eval_.count > 0) continue;
    if (start_.checkpoint.metadata.count(key) > 0) {
      meta[key] = start_.checkpoint.metadata.at(key);
    } else {
      meta.erase(key);
    }
  }
  meta.erase("best_test_accuracy");
  meta.erase("best_test_loss");
  if (std::isfinite(best_loss_)) meta = with_best(std::move(meta));  // an epoch was evaluated
  meta["epoch_step"] = std::to_string(e.step);
  meta["epoch_loss_sum"] = json(e.epoch_loss_sum).dump();
  meta["epoch_images"] = std::to_string(e.epoch_samples);
  write_stop_checkpoint(paths_, model_, optimizer_, std::move(meta));
  written_ = paths_.last_ckpt.string();
}

}  // namespace epoch::train
