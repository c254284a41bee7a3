// The one training loop. A Session runs every model, image or video: per epoch the batches a
// BatchSource gives, one Step each, their losses settled in step order (the NaN guard, the
// sums), then the divergence check, the evaluation, and the callbacks (progress, metrics,
// checkpoints, a caller's own) at each step's and epoch's end; a stop request (stop.h or a
// callback) ends it after the current step. What a run is made of (the model, its data, the
// run folder, the ranks) is built around it by train() (trainer.cpp). Internal to the train
// layer.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "batch_source.h"
#include "epoch/train/callback.h"
#include "epoch/train/data_parallel.h"
#include "epoch/train/step.h"
#include "epoch/train/trainer.h"
#include "run_parts.h"

namespace epoch::train {

/// The last steps' (loss, previous-frame baseline) whose mean a video run reports.
constexpr std::size_t kRecentSteps = 50;
using RecentLosses = std::deque<std::pair<double, double>>;

struct SessionParts {
  const TrainConfig* config = nullptr;
  models::Model* model = nullptr;
  Step* step = nullptr;
  DataParallel* dp = nullptr;
  BatchSource* batches = nullptr;
  Evaluation* evaluation = nullptr;
  Device device;
  std::string eval_name = "test";   // what the evaluation data is: "test" or "validation"
  std::string run_dir;
  std::string last_checkpoint;      // for messages about a diverged run
  std::vector<Callback*> callbacks;  // called in order
  std::chrono::steady_clock::time_point wall_start;
};

class Session {
 public:
  explicit Session(SessionParts parts);

  /// Trains from `start` (a new run's, or a resume point) to the planned epochs, or as far as
  /// --stop-after-epochs or a stop request lets it. `recent`: a resumed video run's last steps.
  TrainResult run(const ResumePoint& start, RecentLosses recent = {});

  /// The last evaluation (count 0: none yet in this call).
  const EvalResult& last_eval() const { return eval_; }
  /// The last steps' losses and baselines (video runs), oldest first.
  const RecentLosses& recent() const { return recent_; }

 private:
  struct EpochTotals;
  EpochTotals train_epoch(std::int64_t epoch, std::int64_t& global_step, const ResumePoint& within);
  bool stop_asked() const;
  std::string last_good() const;

  SessionParts p_;
  const TrainConfig& c_;
  RunControl control_;
  RecentLosses recent_;
  EvalResult eval_;
};

}  // namespace epoch::train
