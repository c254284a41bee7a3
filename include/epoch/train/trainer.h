// The training loop behind `epoch train`: data, model, optimizer and schedule from one
// configuration; progress, per-epoch evaluation, metrics.jsonl, config.json and atomic
// checkpoints in a run directory; exact resumption from the last checkpoint.
#pragma once

#include <cstdint>
#include <cstdio>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include <vector>

#include "epoch/data/dataset.h"
#include "epoch/tensor/warnings.h"
#include "epoch/train/callback.h"
#include "epoch/train/train_config.h"

namespace epoch::train {

struct TrainResult {
  std::string run_dir;
  std::string checkpoint;   // the last checkpoint written
  std::int64_t epochs = 0;  // completed epochs
  std::int64_t steps = 0;   // optimizer steps in total
  double train_loss = 0.0;  // mean loss of the last epoch
  bool evaluated = false;   // test_* hold an evaluation of this call (a stopped run may have none)
  double test_loss = 0.0;
  double test_loss_f64 = 0.0;          // per sample in double (EvalResult::loss_f64)
  double test_accuracy = -1.0;         // -1 when the task has no accuracy (reconstruction)
  double test_top5_accuracy = -1.0;    // -1 unless the model tells more than 5 classes apart
  std::string eval_name = "test";      // what test_* were measured on: "test" or "validation"
  double images_per_s = 0.0;           // training images per second of this invocation (no eval)
  double data_wait_fraction = 0.0;     // share of training time spent waiting for input
  std::int64_t skipped_images = 0;     // bad image files skipped (training and validation)
  double wall_s = 0.0;                 // wall time of this invocation
  int world_size = 1;                  // processes training together (mpirun ranks)
  std::int64_t global_batch_size = 0;  // samples per step over every rank
  double comm_s = 0.0;                 // all-reduce time on the communication thread
  double comm_exposed_s = 0.0;         // of it, what the step waited for (not hidden by backward)
  /// Video models (frames_per_sample > 1): images_per_s counts windows, frames_per_s frames.
  std::int64_t frames_per_sample = 1;
  double frames_per_s = 0.0;
  /// The mean training loss of the last `recent_steps` steps (at most 50) and the
  /// previous-frame baseline's MSE on the same frames: what a prediction must beat.
  std::int64_t recent_steps = 0;
  double recent_loss = 0.0, recent_baseline_mse = 0.0;
  double test_baseline_mse = -1.0;     // on the evaluation frames (-1: not a video model)
  double dataset_baseline_mse = -1.0;  // the training split's, from the data's baseline.json
  /// A stop was asked for (stop.h) and the run ended early, its checkpoint where it stood:
  /// inside epoch `stopped_in_epoch` after `stopped_epoch_step` of its steps, or (0) after
  /// its last completed epoch.
  bool stopped = false;
  std::int64_t stopped_in_epoch = 0, stopped_epoch_step = 0;
  /// The checkpoint holds where the run stopped (else, a video run stopped inside an epoch:
  /// that epoch's steps were dropped and a resume starts it again).
  bool stop_saved = false;
  int stop_signal = 0;  // the signal that asked (0: a caller's request_stop)
  /// SHA-256 of the trained parameters and buffers (TrainOptions::weights_digest), else "".
  std::string weights_sha256;
  nlohmann::json to_json() const;
};

/// What a program adds to a run beyond its configuration.
struct TrainOptions {
  /// Where the progress bar and epoch lines go (null: nowhere; --quiet also silences them).
  std::FILE* progress = stdout;
  /// Where warnings go (null: stderr).
  Warnings* warnings = nullptr;
  /// Called at each epoch's start, each step's and epoch's end and a stop, after the run's own
  /// (checkpoints, metrics.jsonl, progress), in this order; any may end the run. Not owned.
  std::vector<Callback*> callbacks;
  /// Images held in memory to train and evaluate on instead of config.data (both or neither;
  /// not owned, read during the call). The run records its data as "in-memory".
  const data::ImageDataset* train_images = nullptr;
  const data::ImageDataset* validation_images = nullptr;
  /// Fill TrainResult::weights_sha256 at the end (nn::state_sha256): whether two runs ended
  /// with the same bits.
  bool weights_digest = false;
};

/// Trains as configured (see the overload below), with a program's callbacks and data.
TrainResult train(const TrainConfig& config, const TrainOptions& options);

/// Trains as configured, writing progress to `progress_out` and warnings to `warnings` (null:
/// stderr). Throws epoch::Error on bad input; a run interrupted at any point keeps its last
/// complete checkpoint and metrics. The run directory is locked for the call: a second
/// process gets a ConfigError. Resuming (config.resume) continues the stored run; `config`
/// must then equal the stored configuration except for what resume_may_change allows.
TrainResult train(const TrainConfig& config, std::FILE* progress_out, Warnings* warnings = nullptr);

}  // namespace epoch::train
