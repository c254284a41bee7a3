// Video windows and their evaluation for a Session (see window_source.h).
#include "window_source.h"

#include <algorithm>
#include <chrono>

#include "epoch/data/dataset.h"
#include "epoch/tensor/error.h"
#include "run_parts.h"

namespace epoch::train {

WindowBatches::WindowBatches(const TrainConfig& c, models::Model& model, const ClipData& data,
                             const data::Preprocessing& pre, Warnings* warnings)
    : c_(c), model_(model), data_(data), warnings_(warnings) {
  const models::ModelSpec& spec = model.spec();
  frames_ = window_frames(c, spec);
  if (frames_ < 2)
    EPOCH_THROW(ConfigError, "--tbptt ", frames_,
                ": a window needs at least 2 frames (the first has nothing to predict it from)");
  stream_ = model.carries_state();
  if (stream_ && c.run.batch_size != 1)
    EPOCH_THROW(ConfigError, "--batch-size ", c.run.batch_size, ": model ", spec.name,
                " carries its state from one window of a sequence to the next, so it trains on "
                "one sequence at a time (--batch-size 1)");
  check_window_fits(data, frames_,
                    c.run.tbptt > 0 ? "--tbptt " + std::to_string(frames_)
                                    : "model " + spec.name + "'s windows of " +
                                          std::to_string(frames_) + " frames");
  // One batch of windows is batch x frames frames.
  TrainConfig window_config = c;
  window_config.run.batch_size = c.run.batch_size * frames_;
  models::ModelSpec frame_spec = spec;
  frame_spec.input.erase(frame_spec.input.begin());
  try {
    check_batch_fits(window_config, frame_spec);
  } catch (const ConfigError&) {
    if (c.run.tbptt <= 0) throw;
    // Its message names --batch-size with the frame count; the window length is the cause.
    EPOCH_THROW(ConfigError, "--tbptt ", frames_, " with --batch-size ", c.run.batch_size,
                ": a batch of ", c.run.batch_size, " window(s) of ", frames_, " frames of ",
                spec.name, " inputs needs more than half of this machine's memory: pass a "
                "smaller --tbptt");
  }
  reader_.emplace(data.train, pre, frames_);
  windows_ = windows_of(data.train, frames_);
  if (c.data.limit_train > 0 && static_cast<std::int64_t>(windows_.size()) > c.data.limit_train)
    windows_.resize(static_cast<std::size_t>(c.data.limit_train));
  batch_ = c.run.batch_size;
  const auto n = static_cast<std::int64_t>(windows_.size());
  steps_per_epoch_ = (n + batch_ - 1) / batch_;
  labels_ = Tensor::from_ints({batch_}, std::vector<std::int32_t>(static_cast<std::size_t>(batch_), 0));
}

void WindowBatches::start_epoch(std::int64_t epoch, std::int64_t /*first_step*/) {
  // (a stopped epoch is trained again from its start: resumes_inside_epoch() is false)
  order_ = data::epoch_order(static_cast<std::int64_t>(windows_.size()), c_.run.seed, epoch,
                             !stream_);
  model_.reset_state();
  previous_.reset();
  before_ = Tensor();
}

std::optional<SourceBatch> WindowBatches::next(std::int64_t step) {
  const auto n = static_cast<std::int64_t>(windows_.size());
  if (step >= steps_per_epoch_) return std::nullopt;
  std::vector<data::Clip> asked;
  for (std::int64_t i = step * batch_; i < std::min(n, (step + 1) * batch_); ++i)
    asked.push_back(windows_[static_cast<std::size_t>(order_[static_cast<std::size_t>(i)])]);
  const auto read_start = std::chrono::steady_clock::now();
  const data::ClipBatch b = reader_->read(asked, c_.data.on_bad_image, warnings_);
  wait_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - read_start).count();
  bad_ += static_cast<std::int64_t>(b.bad_files.size());
  SourceBatch out;
  if (b.clips.empty()) {
    previous_.reset();  // a window left out breaks the sequence: the next starts afresh
    out.skip = true;
    return out;
  }
  const bool carried = stream_ && previous_ && continues(*previous_, b.clips.front(), frames_);
  if (stream_ && !carried) model_.reset_state();
  out.baseline_mse = previous_frame_mse(b.x, carried ? &before_ : nullptr);
  if (stream_) {
    previous_ = b.clips.back();
    before_ = last_frames(b.x);
  }
  out.samples = static_cast<std::int64_t>(b.clips.size());
  out.planned_global = out.samples;
  out.x = b.x;
  out.labels = out.samples == batch_ ? labels_ : labels_.narrow0(0, out.samples);
  return out;
}

void WindowBatches::end_epoch() { model_.reset_state(); }

std::string WindowBatches::nothing_trained(std::int64_t epoch) const {
  return data_.train.root + ": every training window of epoch " + std::to_string(epoch + 1) +
         " had a bad frame (see the warnings)";
}

WindowEvaluation::WindowEvaluation(const TrainConfig& c, const ClipData& data,
                                   const data::Preprocessing& pre, std::int64_t frames,
                                   Warnings* warnings)
    : c_(c), data_(data), pre_(pre), frames_(frames), warnings_(warnings) {}

EvalResult WindowEvaluation::evaluate(models::Model& model) {
  const std::int64_t batch = c_.run.eval_batch_size > 0 ? c_.run.eval_batch_size : c_.run.batch_size;
  const ClipEvalResult e = evaluate_clips(model, data_.val, pre_, frames_, batch,
                                          c_.data.on_bad_image, warnings_, c_.data.limit_test);
  bad_ += e.bad_files;
  EvalResult r;
  r.loss = e.loss;
  r.loss_f64 = e.loss;
  r.count = e.windows;
  r.baseline_mse = e.baseline_mse;
  return r;
}

std::string WindowEvaluation::nothing_evaluated() const {
  return data_.val.root + ": every " + data_.val_name +
         " window had a bad frame (see the warnings), so there is nothing to report";
}

}  // namespace epoch::train
