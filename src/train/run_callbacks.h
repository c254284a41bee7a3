// The callbacks of `epoch train` (callback.h): the progress bar and epoch lines, the
// metrics.jsonl records with their TensorBoard events, and the checkpoints with their
// retention. A Session calls them in this order, so an epoch's checkpoint is written before its
// record: a kill between them leaves a record that resuming removes, never a record without
// its checkpoint. Internal to the train layer.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "epoch/nn/module.h"
#include "epoch/optim/optimizer.h"
#include "epoch/train/callback.h"
#include "epoch/train/metrics_log.h"
#include "epoch/train/progress.h"
#include "run_parts.h"

namespace epoch::train {

/// The progress bar of each epoch and its summary line.
class ProgressCallback final : public Callback {
 public:
  ProgressCallback(std::FILE* out, bool interactive, bool video);
  void on_epoch_start(const EpochStart& e) override;
  void on_step_end(const StepEnd& e, RunControl&) override;
  void on_epoch_end(const EpochEnd& e, RunControl&) override;
  void on_stop(const StopEnd& e) override;

 private:
  Progress progress_;
};

/// A record every --log-every steps and one per epoch in metrics.jsonl (and the event file).
class MetricsCallback final : public Callback {
 public:
  explicit MetricsCallback(MetricsLog& log) : log_(log) {}
  void on_step_end(const StepEnd& e, RunControl&) override;
  void on_epoch_end(const EpochEnd& e, RunControl&) override;

 private:
  MetricsLog& log_;
};

using CheckpointMetadata = std::map<std::string, std::string>;

/// Each epoch's checkpoints (last, epoch-K, best when it is the best so far; the oldest beyond
/// --keep-checkpoints removed), and where a stopped run stood. The best result so far travels
/// in every checkpoint, so a resumed run knows it.
class CheckpointCallback final : public Callback {
 public:
  /// `metadata(completed_epochs, global_step, eval)`: what the run's checkpoints say of it.
  /// `start`: the run's resume point (its best result, its last evaluation's metadata).
  CheckpointCallback(const RunPaths& paths, const nn::Module& model,
                     const optim::Optimizer& optimizer, std::int64_t keep,
                     const ResumePoint& start,
                     std::function<CheckpointMetadata(std::int64_t, std::int64_t,
                                                      const EvalResult&)> metadata);
  void on_epoch_end(const EpochEnd& e, RunControl&) override;
  void on_stop(const StopEnd& e) override;
  /// The last checkpoint this call wrote ("" when none).
  const std::string& written() const { return written_; }

 private:
  CheckpointMetadata with_best(CheckpointMetadata meta) const;

  const RunPaths& paths_;
  const nn::Module& model_;
  const optim::Optimizer& optimizer_;
  std::int64_t keep_;
  const ResumePoint& start_;
  std::function<CheckpointMetadata(std::int64_t, std::int64_t, const EvalResult&)> metadata_;
  double best_accuracy_, best_loss_;
  EvalResult last_eval_;  // this call's (count 0: none yet)
  std::string written_;
};

}  // namespace epoch::train
