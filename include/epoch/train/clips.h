// Training and evaluating video models (Task::frame_prediction) on sequence folders: which
// clips a run reads and in what order, the previous-frame baseline on exactly the frames the
// loss counts, evaluation, and the predicted frames `epoch predict` writes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "epoch/data/dataset.h"
#include "epoch/data/sequences.h"
#include "epoch/models/zoo.h"
#include "epoch/tensor/tensor.h"
#include "epoch/tensor/warnings.h"
#include "epoch/train/train_config.h"

namespace epoch::train {

/// The sequences a video run trains and evaluates on.
struct ClipData {
  data::SequenceFolder train, val;
  std::string val_name = "validation";
  /// The dataset's own previous-frame baseline (its baseline.json, written by `epoch data
  /// synth --kind video`), when it has one.
  std::optional<double> train_baseline_mse, val_baseline_mse;
};

/// `--data DIR`: DIR/train and DIR/validation (or val/, test/) sequence folders, or DIR itself
/// with --val-data DIR2 or --val-split F (the last F of its sequences held out, at least one).
/// ConfigError naming the folder and the fix when there is no validation data or a split would
/// leave no training sequence, or when --tbptt asks for windows longer than every training or
/// every validation sequence (check_window_fits); IoError for an unreadable folder or
/// baseline.json (one that is not a regular file included). A sequence linked twice is read
/// once, warned about through `warnings` when given (data::scan_sequence_folder).
ClipData open_clip_data(const TrainConfig& config, Warnings* warnings = nullptr);

/// ConfigError "`what`: longer than every training sequence of DIR (the longest has N frames):
/// pass --tbptt N or less" (or validation) when windows of `frames` frames fit in no training
/// or no validation sequence: there would be nothing to train or evaluate on.
void check_window_fits(const ClipData& data, std::int64_t frames, const std::string& what);

/// The frames per window a video model trains on: --tbptt K, else the model's sequence length.
std::int64_t window_frames(const TrainConfig& config, const models::ModelSpec& spec);

/// The windows of a folder: consecutive non-overlapping clips of `frames` frames, sequence by
/// sequence (data::cut_clips with stride `frames`).
std::vector<data::Clip> windows_of(const data::SequenceFolder& folder, std::int64_t frames);

/// Whether window `next` continues `previous` (the same sequence, the frames right after):
/// a model that carries state keeps it across such windows and starts afresh otherwise.
bool continues(const data::Clip& previous, const data::Clip& next, std::int64_t frames);

/// The previous-frame baseline on the frames a frame-prediction loss counts: per sample, the
/// mean over t of mean((x_t - x_{t-1})^2), for t from 1 (or from 0 with `before`, (N, C, H, W),
/// the frame before the window), averaged over the batch. x: (N, T, C, H, W) on the CPU.
double previous_frame_mse(const Tensor& x, const Tensor* before = nullptr);

/// The last frame of each sample of a window batch (N, T, C, H, W) on the CPU: (N, C, H, W),
/// a copy (the `before` of the window that continues it).
Tensor last_frames(const Tensor& x);

struct ClipEvalResult {
  double loss = 0.0;          // the model's loss, the mean over windows
  double baseline_mse = 0.0;  // previous_frame_mse on the same windows
  std::int64_t windows = 0, frames = 0;
  std::int64_t bad_files = 0;  // frames that could not be read (their windows left out)
};

/// The model's loss and the baseline over the windows of `folder` (eval mode, no graph): every
/// one, or the first `max_windows` in sequence order (--limit-test, `epoch eval --limit`). A
/// model that carries state reads each sequence's windows in order, one at a time, starting
/// each sequence afresh; others read `batch_size` windows at a time.
ClipEvalResult evaluate_clips(models::Model& model, const data::SequenceFolder& folder,
                              const data::Preprocessing& pre, std::int64_t frames,
                              std::int64_t batch_size, data::OnBadImage on_bad, Warnings* warnings,
                              std::int64_t max_windows = 0);

struct PredictedFrames {
  std::string out_dir;
  std::vector<std::string> files;  // one per input frame: the model's prediction of it
  double mse = 0.0;                // of the predictions against the frames, from frame 1
  double baseline_mse = 0.0;       // of the previous frame against the frame, from frame 1
};

/// Runs `model` over the frames of one sequence folder (in name order, in windows of `frames`
/// with state carried between them where the model carries state) and writes its prediction
/// of each frame t, made from the frames before t, as `out_dir`/pred_<name>.png (out_dir
/// empty: `sequence_dir`/predicted). IoError naming the file for an unreadable frame;
/// ConfigError when `sequence_dir` is a file rather than a sequence folder, when out_dir is the
/// sequence folder itself, or when out_dir already holds pred_*.png files and `overwrite` is
/// false (nothing is written then).
PredictedFrames predict_sequence(models::Model& model, const data::Preprocessing& pre,
                                 const std::string& sequence_dir, std::int64_t frames,
                                 std::string out_dir = "", bool overwrite = false);

}  // namespace epoch::train
