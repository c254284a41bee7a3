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
  double accuracy = -1.0;  // -1 for tasks without accuracy (reconstruction)
  std::int64_t count = 0;
  std::int64_t correct = 0;  // samples classified right
};

/// Mean loss (weighted by batch size) and accuracy over every sample of `dataset`.
EvalResult evaluate(models::Model& model, const data::ImageDataset& dataset,
                    const data::Preprocessing& pre, std::int64_t batch_size);

/// The same over every sample a loader (no augmentation, any order) yields in one epoch;
/// skipped bad images are not counted. Binary models: accuracy at threshold 0.5.
EvalResult evaluate(models::Model& model, data::Loader& loader, std::int64_t num_samples);
/// The same over the samples `order` names (one rank's shard).
EvalResult evaluate(models::Model& model, data::Loader& loader, std::vector<std::int64_t> order);

/// Class probabilities (N, K) of a model's output: softmax for classification, (N, 2) of
/// [1 - p, p] with p = sigmoid(logit) for binary models.
Tensor output_probabilities(models::Task task, const Tensor& output);

}  // namespace epoch::train
