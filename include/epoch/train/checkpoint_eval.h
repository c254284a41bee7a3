// `epoch eval`'s work as a library call: a trained checkpoint evaluated on its run's
// validation data or on other data, under the kernels the caller's context holds (the CLI
// installs the checkpoint's own, execution.h).
#pragma once

#include <cstdint>
#include <string>

#include "epoch/tensor/warnings.h"
#include "epoch/train/clips.h"
#include "epoch/train/evaluate.h"
#include "epoch/train/inference.h"

namespace epoch::train {

struct CheckpointEvalOptions {
  std::string data;             // empty: the run's validation data; else as `epoch train --data`
  std::int64_t batch_size = 0;  // 0: about 1M input values (images), the run's batch (windows)
  std::int64_t limit = 0;       // > 0: the first `limit` samples (images) or windows only
};

struct CheckpointEval {
  bool frames = false;      // a video model: `clips` holds the result, else `images`
  std::string data_name;    // what was evaluated: "test", "validation", ...
  EvalResult images;
  ClipEvalResult clips;
};

/// Evaluates `trained` (IoError naming the data when every sample was a bad file).
CheckpointEval evaluate_checkpoint(TrainedModel& trained, const CheckpointEvalOptions& options,
                                   Warnings& warnings);

}  // namespace epoch::train
