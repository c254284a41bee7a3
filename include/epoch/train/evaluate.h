// Evaluation and prediction: the mean loss and accuracy of a model over a dataset (eval mode,
// no graph), and class probabilities for a batch.
#pragma once

#include <cstdint>
#include <vector>

#include "epoch/data/dataset.h"
#include "epoch/data/loader.h"
#include "epoch/data/source.h"
#include "epoch/models/zoo.h"
#include "epoch/nn/module.h"

namespace epoch::train {

struct EvalResult {
  double loss = 0.0;
  /// The same loss sample by sample in double, summed in double and divided by `count`
  /// (models::task_loss_sum_f64): it sees a one-ulp change of the weights that the float batch
  /// means `loss` adds up can hide. Video models: equal to `loss`.
  double loss_f64 = 0.0;
  double accuracy = -1.0;  // -1 for tasks without accuracy (reconstruction)
  std::int64_t count = 0;
  std::int64_t correct = 0;  // samples classified right
  /// The share whose label is among the 5 highest outputs (fewer than 5 score above it); -1
  /// unless the model tells more than 5 classes apart.
  double top5_accuracy = -1.0;
  std::int64_t correct_top5 = 0;
  /// Video models: the previous-frame baseline's MSE on the same frames (what a prediction
  /// must beat); -1 otherwise.
  double baseline_mse = -1.0;
};

/// Whether `label` is among the k highest of row[0..classes): fewer than k entries exceed it
/// (ties count for the label, as a NaN score never does).
bool in_top_k(const float* row, std::int64_t classes, std::int64_t label, std::int64_t k);

/// Mean loss (weighted by batch size) and accuracy over every sample of `dataset`.
EvalResult evaluate(models::Model& model, const data::ImageDataset& dataset,
                    const data::Preprocessing& pre, std::int64_t batch_size);

/// The same over every sample a loader (no augmentation, any order) yields in one epoch;
/// skipped bad images are not counted. Binary models: accuracy at threshold 0.5. Models of more
/// than 5 classes also report top-5 accuracy.
EvalResult evaluate(models::Model& model, data::Loader& loader, std::int64_t num_samples);
/// The same over the samples `order` names (one rank's shard).
EvalResult evaluate(models::Model& model, data::Loader& loader, std::vector<std::int64_t> order);

/// Class probabilities (N, K) of a model's output: softmax for classification, (N, 2) of
/// [1 - p, p] with p = sigmoid(logit) for binary models.
Tensor output_probabilities(models::Task task, const Tensor& output);

}  // namespace epoch::train
