// The model zoo: every model of MODELS.md by name, built from named nn layers, with its input
// shape, task (which loss and metric apply) and, beside it, the recipe its source trained it
// with.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "epoch/nn/module.h"

namespace epoch::models {

/// What a model's output means, which fixes its loss and its metric.
enum class Task {
  classification,    // logits (N, K); softmax cross-entropy; accuracy of the argmax
  binary,            // one logit (N, 1); BCE from logits; accuracy at probability 0.5
  reconstruction,    // (N, D) in [0, 1] after a sigmoid; MSE against the flattened input
  frame_prediction,  // a video model's per-step loss terms (N, T, K); the model's own loss
};
const char* task_name(Task task);

/// How a model's source trained it (MODELS.md): settings of a run, named by the keys a run's
/// config.json uses (train/config_fields.h: "optimizer.name", "optimizer.lr", "batch_size",
/// "augment.shear", ...), applied in order over the run's defaults before the flags given;
/// "optimizer.name" starts from that optimizer's own defaults. A patch, not a copy of the
/// settings: what a recipe leaves out keeps the default, and a model description in a file
/// states its recipe the same way.
struct Recipe {
  using Value = std::variant<bool, std::int64_t, double, std::string, std::vector<double>,
                             std::vector<std::string>>;
  std::vector<std::pair<std::string, Value>> settings;
  Recipe& set(std::string key, Value value) {
    settings.emplace_back(std::move(key), std::move(value));
    return *this;
  }
};

/// The recipe of a model that names no other (fmnist-cnn, autoencoder), which every other
/// recipe starts from: Adam 2e-3, batch 32, linear warm-up then cosine to 0, which reaches 91%
/// on Fashion-MNIST in 3 epochs.
Recipe default_recipe();

struct ModelSpec {
  std::string name;
  std::string summary;
  Shape input;           // per-sample (C, H, W)
  std::int64_t outputs;  // classes, 1 for binary, D for reconstruction
  Task task;
  Recipe recipe;
};

/// A model: a module that owns its forward pass (Module::forward, or Module::apply for several
/// inputs or carried state) and its loss, and names its parameters by module path
/// ("fc1.weight"), as checkpoints and recipes do.
class Model : public nn::Module {
 public:
  const ModelSpec& spec() const { return spec_; }
  /// The batch loss of the model's output. x is the input batch (the reconstruction target),
  /// labels (N) i32 class indices on the model's device. The default follows spec().task.
  virtual Tensor loss(const Tensor& output, const Tensor& x, const Tensor& labels) const;
  /// Forgets state carried from one call to the next (recurrent models); nothing by default.
  virtual void reset_state() {}
  /// Whether each call continues from the state the last one ended in (until reset_state):
  /// such a model trains on consecutive windows of a sequence, in order.
  virtual bool carries_state() const { return false; }
  /// A frame-prediction model's predicted frames (N, T, C, H, W) for sequences x (N, T, C, H,
  /// W): frame t as predicted from the frames before it. InvalidArgument for other models.
  virtual Tensor predict_frames(const Tensor& x);

 protected:
  explicit Model(ModelSpec spec) : spec_(std::move(spec)) {}

 private:
  ModelSpec spec_;
};

/// A model that applies named layers in order (every zoo model so far).
class LayerStack : public Model {
 public:
  explicit LayerStack(ModelSpec spec) : Model(std::move(spec)) {}
  /// Appends a layer under its name ("conv1"; unique) and returns *this.
  LayerStack& add(const std::string& name, std::shared_ptr<nn::Module> layer);
  Tensor forward(const Tensor& x) override;
  Shape output_shape(const Shape& input) const override;
  std::int64_t flops(const Shape& input) const override;
  std::string describe() const override { return spec().name; }
};

/// Every model of the zoo, in the order `epoch models` lists them.
const std::vector<ModelSpec>& model_specs();
/// The spec of a model; ConfigError naming the valid models when unknown.
const ModelSpec& find_model(const std::string& name);
/// Builds a model (parameters zeroed: call nn::initialize).
std::shared_ptr<Model> build_model(const std::string& name);

struct ModelDescription;
/// The description a model is built from: a zoo file's (with its recipe) or a model file's.
/// ConfigError for a built-in block (PredNet) or an unknown name.
ModelDescription describe_model(const std::string& name);

/// The batch loss of an output for a task (see Task): what Model::loss does by default.
Tensor task_loss(Task task, const Tensor& output, const Tensor& x, const Tensor& labels);
/// The same loss sample by sample, each computed in double from the float output and the sum
/// of them in double (on the host): a figure fine enough to tell apart two models whose float
/// batch means agree. InvalidArgument for frame prediction.
double task_loss_sum_f64(Task task, const Tensor& output, const Tensor& x, const Tensor& labels);

}  // namespace epoch::models
