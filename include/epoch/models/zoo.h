// The model zoo: every model of MODELS.md by name, built from nn layers, with its input shape,
// task (which loss and metric apply) and default preprocessing.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "epoch/nn/module.h"

namespace epoch::models {

/// What a model's output means, which fixes its loss and its metric.
enum class Task {
  classification,  // logits (N, K); softmax cross-entropy; accuracy of the argmax
  binary,          // one logit (N, 1); BCE from logits; accuracy at probability 0.5
  reconstruction,  // (N, D) in [0, 1] after a sigmoid; MSE against the flattened input
};
const char* task_name(Task task);

struct ModelSpec {
  std::string name;
  std::string summary;
  Shape input;           // per-sample (C, H, W)
  std::int64_t outputs;  // classes, 1 for binary, D for reconstruction
  Task task;
};

struct Model {
  ModelSpec spec;
  std::shared_ptr<nn::Sequential> net;
};

/// Every model of the zoo, in the order `epoch models` lists them.
const std::vector<ModelSpec>& model_specs();
/// The spec of a model; ConfigError naming the valid models when unknown.
const ModelSpec& find_model(const std::string& name);
/// Builds a model (parameters zeroed: call nn::initialize).
Model build_model(const std::string& name);

/// The batch loss of a model's output: task-dependent (see Task). x is the input batch (for
/// reconstruction targets), labels (N) i32 class indices (classification, binary).
Tensor model_loss(Task task, const Tensor& output, const Tensor& x, const Tensor& labels);

}  // namespace epoch::models
