// The training loop of video models (Task::frame_prediction), which train() hands over to once
// the run directory is locked and the resume point read. Internal to the train layer.
#pragma once

#include <chrono>
#include <cstdio>

#include "epoch/tensor/warnings.h"
#include "epoch/train/trainer.h"
#include "run_parts.h"

namespace epoch::train {

/// Trains a video model on windows of a sequence folder (clips.h): a model without carried
/// state on windows shuffled each epoch, `batch_size` at a time; one that carries state on one
/// sequence at a time, its windows in order, state kept from each window to the next of the
/// same sequence and cut from the graph between them (truncated backpropagation through time),
/// every epoch and sequence starting afresh. Progress in frames/s, per-epoch evaluation and
/// checkpoints, and exact resumption, as train().
TrainResult train_clips(const TrainConfig& c, const ResumePoint& start, std::FILE* progress_out,
                        Warnings& warnings, std::chrono::steady_clock::time_point wall_start);

}  // namespace epoch::train
