// What a Session (session.h) trains and evaluates on, whatever the model: a BatchSource gives
// each step's batch of an epoch (image batches from the loader, image_source.h; video windows
// with their carried state, window_source.h), an Evaluation the epoch's end result. Internal to
// the train layer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "epoch/models/zoo.h"
#include "epoch/tensor/tensor.h"
#include "epoch/train/evaluate.h"

namespace epoch::train {

/// One step's input.
struct SourceBatch {
  /// Inputs and labels (on the host or the run's device). Undefined when this rank's share of
  /// the step is empty (every image of it was bad): the rank still takes part in the step.
  Tensor x, labels;
  std::int64_t samples = 0;          // this rank's
  /// Every rank's samples when known without counting (the planned slice of the order), else
  /// -1: the ranks agree on it step by step (bad images were skipped).
  std::int64_t planned_global = -1;
  double baseline_mse = -1.0;        // video: the previous-frame baseline on these frames
  bool skip = false;                 // nothing of the step could be read: no step is taken
};

class BatchSource {
 public:
  virtual ~BatchSource() = default;
  virtual std::int64_t steps_per_epoch() const = 0;
  /// Frames per sample (a video window's), 1 for images.
  virtual std::int64_t frames_per_sample() const { return 1; }
  /// Starts `epoch` (0-based) at its step `first_step` (a run resumed inside it): the batches
  /// are those of the uninterrupted epoch from there on.
  virtual void start_epoch(std::int64_t epoch, std::int64_t first_step) = 0;
  /// Step `step`'s batch, or nullopt when the epoch has no more (bad images were skipped).
  virtual std::optional<SourceBatch> next(std::int64_t step) = 0;
  virtual void end_epoch() {}
  /// Whether a stop taken now leaves the epoch's position exactly (the batches still match the
  /// order's slices one to one).
  virtual bool can_stop_here() const { return true; }
  /// Whether a checkpoint inside an epoch resumes bit for bit (not when the model's carried
  /// state is not saved: the epoch is then trained again from its start).
  virtual bool resumes_inside_epoch() const { return true; }
  /// Seconds spent waiting for input, and bad samples skipped, since the source was made.
  virtual double wait_seconds() const = 0;
  virtual std::int64_t bad_samples() const = 0;
  /// The message of an epoch in which nothing could be trained (every sample bad).
  virtual std::string nothing_trained(std::int64_t epoch) const = 0;
};

class Evaluation {
 public:
  virtual ~Evaluation() = default;
  /// This rank's share of the evaluation data, in eval mode.
  virtual EvalResult evaluate(models::Model& model) = 0;
  virtual std::int64_t bad_samples() const = 0;
  /// The message when every evaluation sample was bad.
  virtual std::string nothing_evaluated() const = 0;
};

}  // namespace epoch::train
