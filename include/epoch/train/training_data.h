// Resolving `--data` (and `--val-data`, `--val-split`) into training and validation sample
// sources, and the preprocessing a model's inputs get.
#pragma once

#include <memory>
#include <string>

#include "epoch/data/dataset.h"
#include "epoch/data/source.h"
#include "epoch/models/zoo.h"
#include "epoch/train/train_config.h"

namespace epoch::train {

struct TrainingData {
  /// val is null only when open_training_data was told validation is optional and the data
  /// has none.
  std::unique_ptr<data::SampleSource> train, val;
  /// What val is, for messages: "test" (a dataset's own test set, a test/ folder) or
  /// "validation" (validation/ or val/ folders, --val-data, --val-split).
  std::string val_name = "test";
  /// fashion-mnist, idx, cifar10, image-folder, synthetic or in-memory.
  std::string kind;
  bool from_files() const { return kind == "image-folder"; }
};

/// ConfigError for a model the image pipeline cannot feed (a video model, Task::frame_prediction).
void check_trains_on_images(const models::ModelSpec& spec);

/// `data` is: empty (Debian's Fashion-MNIST), "synthetic" (generated in memory at the model's
/// input size), "cifar10:DIR", or a folder holding MNIST-format IDX files, CIFAR-10 binaries
/// (directly or in cifar-10-batches-bin/), train/ plus validation/ (or val/, test/) image
/// folders, or class subfolders of images (then --val-data or --val-split is needed).
/// limit_train / limit_test keep only the first N samples. Throws IoError / ConfigError with
/// the fix in the message (e.g. the model is binary but the data has 10 classes).
/// With `validation_optional` (the input-pipeline benchmark times training data alone), a
/// class folder without validation images gives a null val instead of an error.
TrainingData open_training_data(const TrainConfig& config, const models::ModelSpec& spec,
                                bool validation_optional = false);

/// Images held in memory (u8 N x C x H x W with labels, as data::ImageDataset) as a run's
/// training and validation data, checked as open_training_data checks files (classes,
/// channels); --limit-train / --limit-test apply.
TrainingData in_memory_training_data(const TrainConfig& config, const models::ModelSpec& spec,
                                     data::ImageDataset train, data::ImageDataset val);

/// What `epoch eval` evaluates on: a folder of class subfolders as a whole (read with the
/// checkpoint's `class_names`, which must all be there), else open_training_data's validation
/// source.
std::unique_ptr<data::SampleSource> open_evaluation_data(
    const TrainConfig& config, const models::ModelSpec& spec,
    const std::vector<std::string>& class_names);

/// A digest of the data a `--data` value names, independent of where it lies: SHA-256 over
/// its files' paths below it, sizes and SHA-256s (Debian's Fashion-MNIST for "", the folder
/// of "cifar10:DIR", a folder of sequences), or of the words "epoch synthetic data" for
/// generated data. What `epoch study combine` compares across machines. IoError naming the
/// path when it holds no file or cannot be read.
std::string data_digest(const std::string& source);

/// The preprocessing of a model's inputs under `config` (size from the model's spec).
data::Preprocessing preprocessing_for(const TrainConfig& config, const models::ModelSpec& spec);

/// The evaluation batch when none is given: about 1M input values (1000 Fashion-MNIST images,
/// 85 of catdog's), at least `train_batch`, so large inputs need no gigabytes of activations.
std::int64_t auto_eval_batch_size(const models::ModelSpec& spec, std::int64_t train_batch);

/// Loader workers for --workers -1 (auto): for image files, the cores compute leaves free
/// (at most 4), else 0, so batches are made between steps on all cores instead of by a thread
/// that competes with compute (equal within noise on 2 cores, docs/BENCHMARKS.md G); 0 for
/// in-memory data.
/// `compute_threads`: the threads compute runs on.
int resolve_workers(const TrainConfig& config, const TrainingData& data, int compute_threads);

}  // namespace epoch::train
