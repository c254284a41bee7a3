// The pieces train() (trainer.cpp) builds a run from, and its callbacks write: where a run
// starts and on what device, its planned schedule, its config.json and checkpoints, and the
// checks before it starts. Internal to the train layer.
#pragma once

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "epoch/models/zoo.h"
#include "epoch/nn/module.h"
#include "epoch/ops/backend.h"
#include "epoch/optim/optimizer.h"
#include "epoch/optim/schedule.h"
#include "epoch/tensor/safetensors.h"
#include "epoch/train/evaluate.h"
#include "epoch/train/train_config.h"

namespace epoch::train {

/// Where a run keeps its files: RUN, RUN/checkpoints, and there last.safetensors and
/// best.safetensors.
struct RunPaths {
  explicit RunPaths(const std::filesystem::path& run_dir);
  std::filesystem::path dir, ckpt_dir, last_ckpt, best_ckpt;
};

/// An epoch's checkpoints: `model` and `optimizer` with `metadata` saved as last.safetensors,
/// published as epoch-<epoch>.safetensors and, when `best`, best.safetensors; then the oldest
/// epoch checkpoints beyond `keep` removed.
void write_epoch_checkpoints(const RunPaths& paths, const nn::Module& model,
                             const optim::Optimizer& optimizer,
                             std::map<std::string, std::string> metadata, std::int64_t epoch,
                             bool best, std::int64_t keep);

/// A stopped run's checkpoint (stop.h): last.safetensors alone, the metadata saying where in
/// its epoch the run stopped.
void write_stop_checkpoint(const RunPaths& paths, const nn::Module& model,
                           const optim::Optimizer& optimizer,
                           std::map<std::string, std::string> metadata);

/// The process's peak resident memory so far, in MiB.
double peak_rss_mib();

/// runs/<model>-<date>-<time>.
std::string default_run_dir(const std::string& model);

/// ConfigError for settings no run can take (epochs, batch, learning rate, threads, warm-up).
void check_common_config(const TrainConfig& c);

/// Refuses a --batch-size whose input batch alone would need over half of this machine's
/// memory (a typo would otherwise end in a bare "out of memory").
void check_batch_fits(const TrainConfig& c, const models::ModelSpec& spec);

/// Where a run starts: nothing for a new run, the last checkpoint's position for a resumed one.
struct ResumePoint {
  SafetensorsFile checkpoint;  // empty for a new run
  std::int64_t epoch = 0;      // completed epochs
  std::int64_t step = 0;       // optimizer steps taken
  double best_accuracy = -1.0, best_loss = HUGE_VAL;
  /// A run stopped inside an epoch (stop.h): the batches of epoch `epoch + 1` already taken
  /// (0: the checkpoint ends an epoch), and that epoch's loss sum and images so far.
  std::int64_t epoch_step = 0;
  double epoch_loss_sum = 0.0;
  std::int64_t epoch_images = 0;
};

/// Reads the resumed run's position (its configuration must allow what `c` asks), or checks
/// that a new run's folder holds no run.
ResumePoint resume_point(const TrainConfig& c, const std::filesystem::path& run_dir);

/// Rank of an evaluation for best.safetensors: higher accuracy, else lower loss.
bool better_than(const EvalResult& a, double best_accuracy, double best_loss);

/// The model's initial parameters: nn::initialize from the run's seed, then --perturb's.
void initialize_model(models::Model& model, const TrainConfig& c);

/// The run's device (plain "cuda" under mpirun: each rank of a host its own GPU).
Device training_device(const TrainConfig& c);

/// The run's learning-rate schedule over its planned steps.
std::unique_ptr<optim::LrSchedule> planned_schedule(const TrainConfig& c,
                                                    std::int64_t steps_per_epoch,
                                                    std::int64_t global_batch);

/// config.json: the stored settings and, for readers, what the run found (parameters, threads,
/// ranks).
void write_run_config(const std::filesystem::path& run_dir, const TrainConfig& c,
                      const models::Model& model, int world);

}  // namespace epoch::train
