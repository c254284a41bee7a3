// Video windows for a Session: a model without carried state trains on windows shuffled each
// epoch, `batch_size` at a time; one that carries state on one sequence at a time, its windows
// in order, state kept from each window to the next of the same sequence and cut from the
// graph between them (truncated backpropagation through time), every epoch and sequence
// starting afresh. Each batch carries the previous-frame baseline on its frames. Internal to
// the train layer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "batch_source.h"
#include "epoch/data/sequences.h"
#include "epoch/tensor/warnings.h"
#include "epoch/train/clips.h"
#include "epoch/train/train_config.h"

namespace epoch::train {

class WindowBatches final : public BatchSource {
 public:
  /// Checks that the windows fit (--tbptt, the batch's memory, a model with state takes one
  /// sequence at a time) and cuts the training sequences into windows.
  WindowBatches(const TrainConfig& c, models::Model& model, const ClipData& data,
                const data::Preprocessing& pre, Warnings* warnings);

  std::int64_t steps_per_epoch() const override { return steps_per_epoch_; }
  std::int64_t frames_per_sample() const override { return frames_; }
  void start_epoch(std::int64_t epoch, std::int64_t first_step) override;
  std::optional<SourceBatch> next(std::int64_t step) override;
  void end_epoch() override;
  /// The carried state is not checkpointed.
  bool resumes_inside_epoch() const override { return false; }
  double wait_seconds() const override { return wait_s_; }
  std::int64_t bad_samples() const override { return bad_; }
  std::string nothing_trained(std::int64_t epoch) const override;

  std::int64_t batch() const { return batch_; }

 private:
  const TrainConfig& c_;
  models::Model& model_;
  const ClipData& data_;
  Warnings* warnings_;
  std::optional<data::ClipReader> reader_;
  std::int64_t frames_ = 0, batch_ = 1, steps_per_epoch_ = 0;
  bool stream_ = false;  // the model carries state: windows in order, one at a time
  std::vector<data::Clip> windows_;
  std::vector<std::int64_t> order_;
  std::optional<data::Clip> previous_;
  Tensor before_;  // the last frame of the window before (carried state)
  Tensor labels_;  // unused by the frame-prediction loss
  double wait_s_ = 0.0;
  std::int64_t bad_ = 0;
};

class WindowEvaluation final : public Evaluation {
 public:
  WindowEvaluation(const TrainConfig& c, const ClipData& data, const data::Preprocessing& pre,
                   std::int64_t frames, Warnings* warnings);

  EvalResult evaluate(models::Model& model) override;
  std::int64_t bad_samples() const override { return bad_; }
  std::string nothing_evaluated() const override;

 private:
  const TrainConfig& c_;
  const ClipData& data_;
  data::Preprocessing pre_;
  std::int64_t frames_ = 0;
  Warnings* warnings_;
  std::int64_t bad_ = 0;
};

}  // namespace epoch::train
