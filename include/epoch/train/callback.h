// What happens at a step's and an epoch's end of a run, as a list of callbacks: the progress
// bar, metrics.jsonl with its TensorBoard events, the checkpoints and their retention (and, in
// the command line, report.html) are callbacks of `epoch train`, and a program adds its own
// (train(config, options)). A callback
// sees settled numbers (the losses read back, in step order) and may end the run.
#pragma once

#include <cstdint>
#include <string>

#include "epoch/train/evaluate.h"

namespace epoch::train {

/// Lets a callback end the run: after the step it is told of (from on_step_end: on a device,
/// whose losses come back together every --log-every steps, the last step read back) or before
/// the next epoch (from on_epoch_end), as Ctrl-C does, with a checkpoint a resume continues
/// from. Taken in one process only: data-parallel ranks step together, and go on.
class RunControl {
 public:
  void stop() { stop_ = true; }
  bool stop_asked() const { return stop_; }

 private:
  bool stop_ = false;
};

/// The run is set up and about to train: its folder locked, its resume point read, its model
/// and data built.
struct RunStart {
  std::string run_dir;
  std::string model;
  std::int64_t epochs = 0;           // planned
  std::int64_t start_epoch = 0;      // epochs completed before (a resumed run)
  std::int64_t start_step = 0;       // optimizer steps taken before
  std::int64_t steps_per_epoch = 0;
  int world_size = 1;                // data-parallel processes
};

struct EpochStart {
  std::int64_t epoch = 0;            // 1-based
  std::int64_t epochs = 0;           // planned in the run
  std::int64_t steps_per_epoch = 0;
  std::int64_t first_step = 0;       // steps of it already taken (a run resumed inside it)
};

/// One optimizer step, in step order, once its loss has been read back (on a device, losses
/// come back together every --log-every steps and at the epoch's end).
struct StepEnd {
  std::int64_t epoch = 0;            // 1-based
  std::int64_t step = 0;             // 1-based within the epoch
  std::int64_t steps_per_epoch = 0;
  std::int64_t global_step = 0;      // optimizer updates of the run so far
  double loss = 0.0;                 // this step's (over every rank)
  double baseline_mse = -1.0;        // video: the previous-frame baseline on its frames, else -1
  /// The mean loss (and baseline) of the steps since the last logged step of this epoch,
  /// this one included: what the progress bar shows and a logged record holds.
  double window_loss = 0.0, window_baseline_mse = -1.0;
  bool log_step = false;             // global_step is a multiple of --log-every
  std::int64_t samples = 0;          // samples of the epoch so far (windows for video)
  std::int64_t frames_per_sample = 1;
  float lr = 0.0f;
};

/// An epoch trained and evaluated (its checkpoint written by the callbacks before it, in
/// their order).
struct EpochEnd {
  std::int64_t epoch = 0;            // 1-based
  std::int64_t global_step = 0;
  double train_loss = 0.0;
  double train_baseline_mse = -1.0;  // video, else -1
  EvalResult eval;                   // on the validation or test data
  std::string eval_name = "test";    // "test" or "validation"
  std::int64_t samples = 0;          // trained on in the epoch (every rank's; windows for video)
  std::int64_t frames_per_sample = 1;
  double seconds = 0.0, data_wait_s = 0.0;
  double elapsed_s = 0.0;            // since the run's start
  /// Data-parallel runs: the all-reduce's busy and exposed time, its steps and bytes.
  double comm_s = 0.0, comm_exposed_s = 0.0;
  std::int64_t comm_steps = 0;
  double comm_bytes = 0.0;
};

/// The run ended early on a stop request (Ctrl-C, SIGTERM, request_stop, a callback).
struct StopEnd {
  std::int64_t epoch = 0;            // 1-based: the epoch it stopped in (0: between epochs)
  std::int64_t step = 0;             // steps of that epoch taken
  std::int64_t steps_per_epoch = 0;
  double epoch_loss_sum = 0.0;       // of that epoch's steps so far (every step's global loss)
  std::int64_t epoch_samples = 0;
  std::int64_t global_step = 0;
  /// A checkpoint of where it stood resumes bit for bit (false for a model whose carried
  /// state is not saved: the epoch's steps are dropped and a resume starts it again).
  bool resumable = true;
};

class Callback {
 public:
  virtual ~Callback() = default;
  virtual void on_run_start(const RunStart&) {}
  virtual void on_epoch_start(const EpochStart&) {}
  virtual void on_step_end(const StepEnd&, RunControl&) {}
  virtual void on_epoch_end(const EpochEnd&, RunControl&) {}
  virtual void on_stop(const StopEnd&) {}
};

}  // namespace epoch::train
