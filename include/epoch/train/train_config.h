// A training run's configuration: what to train (model, length, batch, seed), how it computes
// (execution.h), on what data and input, with which optimizer and schedule; its JSON (generated
// from the settings table, config_fields.h), what a resumed run may change, and the
// configuration stored in a run's checkpoints.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "epoch/data/augment.h"
#include "epoch/data/loader.h"
#include "epoch/optim/optimizer.h"
#include "epoch/optim/schedule.h"
#include "epoch/tensor/safetensors.h"
#include "epoch/train/execution.h"

namespace epoch::train {

/// What to train on and how the input pipeline reads it.
struct DataConfig {
  /// What to train on (see training_data.h): empty for Debian's Fashion-MNIST, "synthetic",
  /// "cifar10:DIR", a folder of MNIST-format IDX files, of CIFAR-10 binaries, or of images
  /// (one subfolder per class, or train/ and validation/ folders of those).
  std::string source;
  /// Validation images for an image-folder source (default: its validation/, val/ or test/).
  std::string val_data;
  /// Keras validation_split: hold out this fraction of each class of an image folder.
  double val_split = 0.0;
  int workers = -1;  // loader threads; -1: auto (resolve_workers, training_data.h)
  int prefetch = 2;  // batches made ahead
  data::OnBadImage on_bad_image = data::OnBadImage::skip;
  std::int64_t cache_mib = 1024;        // decoded-image cache of an image folder (0: off)
  std::int64_t limit_train = 0;         // use only the first N training samples (0: all)
  std::int64_t limit_test = 0;          // use only the first N test samples (0: all)
  std::int64_t synthetic_count = 4096;  // training samples of the synthetic source
};

/// How an image becomes a model's input: preprocessing (stored in checkpoints, applied again
/// by eval and predict) and the random augmentation of training samples.
struct InputConfig {
  float rescale = 1.0f / 255.0f;
  bool standardize = false;      // per-image standardization
  std::vector<float> mean, std;  // per-channel normalization after rescale (empty: none)
  data::Resize resize = data::Resize::stretch;  // evaluation of images of another size
  data::AugmentConfig augment;                  // the model's recipe by default (recipe.h)
};

/// The most epochs a run may ask for, and the most optimizer steps it may plan (epochs x steps
/// per epoch): positions and the schedule's arithmetic stay exact below 2^53.
inline constexpr std::int64_t kMaxEpochs = 1'000'000'000;
inline constexpr std::int64_t kMaxPlannedSteps = std::int64_t{1} << 53;

/// How the run goes: the model, its length and batch, its seed, what it logs and keeps, and
/// where (how it computes is the ExecutionConfig).
struct RunConfig {
  std::string model = "fmnist-cnn";
  /// A Caffe net's (C, H, W) as "C,H,W" where its data layer gives none, and its solver.prototxt
  /// (models/model_file.h's options); "" when not given.
  std::string input_shape;
  std::string solver;
  std::int64_t epochs = 3;
  /// The run's length in steps, all epochs together (Caffe's max_iter; 0: `epochs` decides):
  /// the epochs become as many as it takes, the last one cut short at that step and then
  /// evaluated, and the schedule spans these steps.
  std::int64_t max_steps = 0;
  std::int64_t batch_size = 32;
  /// Video models: frames per window of truncated backpropagation through time (0: the
  /// model's sequence length). A model that carries state continues across windows.
  std::int64_t tbptt = 0;
  std::uint64_t seed = 0;
  /// Samples per evaluation batch; 0: auto_eval_batch_size (training_data.h).
  std::int64_t eval_batch_size = 0;
  std::int64_t log_every = 50;  // steps between metrics.jsonl step records
  /// epoch-<K>.safetensors files kept, the newest (-1: all); last.safetensors and
  /// best.safetensors (the best validation result so far) are always kept.
  std::int64_t keep_checkpoints = 3;
  std::string out_dir;  // empty: runs/<model>-<date>-<time>
  bool resume = false;
  /// Stop after this many epochs of this invocation even if `epochs` are not done (0: no
  /// limit). The schedule still spans `epochs`, so a later --resume continues it exactly.
  std::int64_t stop_after_epochs = 0;
  /// Data-parallel runs (mpirun): the gradient buckets' size in MiB (PyTorch DDP's 25), and
  /// steps between checks that every rank holds the same parameters (0: once per epoch).
  double bucket_mib = 25.0;
  std::int64_t check_ranks_every = 0;
  bool progress_interactive = false;  // redraw a bar (a terminal) instead of periodic lines
  bool quiet = false;                 // no progress output at all
  /// Read the step losses back every log_every steps (and at an epoch's end) rather than at
  /// each step: what a CUDA device always does, so that the host runs ahead; on the CPU, for
  /// the tests of that path.
  bool batched_loss_readback = false;
};

/// A training run's configuration: six typed parts, described once (config_fields.h).
struct TrainConfig {
  RunConfig run;
  ExecutionConfig execution;
  DataConfig data;
  InputConfig input;
  optim::OptimizerConfig optimizer;  // default: models::default_recipe (adam, lr 2e-3)
  /// default: cosine to 0 over the run after a warm-up; warmup_steps -1 is min(300, 10% of
  /// the run's steps), and base_lr and total_steps come from the run.
  optim::ScheduleConfig schedule;

  TrainConfig();
  /// The stored settings as JSON and back, generated from config_fields.h's table.
  nlohmann::json to_json() const;
  static TrainConfig from_json(const nlohmann::json& j);
};

/// A run directory's last checkpoint, read (IoError when it has none, naming what it holds
/// instead).
SafetensorsFile read_last_checkpoint(const std::string& run_dir);
/// The configuration a checkpoint was trained with (ConfigError when it is not valid).
TrainConfig stored_config(const SafetensorsFile& checkpoint);
/// stored_config(read_last_checkpoint(run_dir)).
TrainConfig stored_run_config(const std::string& run_dir);

/// The settings a resumed run may change (how fast it runs, how often it logs and what it
/// keeps, and `epochs`, which extends or shortens the plan); every other one is the run's.
bool resume_may_change(const std::string& key);

/// The settings (dotted keys of TrainConfig::to_json, e.g. "optimizer.lr") whose values differ
/// between `stored` and `requested` and that a resumed run may not change, each as
/// "key value (the run has value)", joined by ", "; empty when there are none.
std::string resume_conflicts(const TrainConfig& stored, const TrainConfig& requested);

}  // namespace epoch::train
