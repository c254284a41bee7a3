// The zoo of MODELS.md: the layer-stack models are files (zoo/*.json, epoch's description,
// built in) read through the same path as a user's; their recipes and PredNet are here. Binary
// models end in one logit (the sigmoid lives in the loss and in prediction); classifiers end in
// logits.
#include "epoch/models/zoo.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "epoch/autograd/functions.h"
#include "epoch/models/graph_model.h"
#include "epoch/models/model_file.h"
#include "epoch/models/prednet.h"
#include "epoch/ops/convert.h"
#include "models/zoo_files.h"

namespace epoch::models {

Recipe default_recipe() {
  return Recipe()
      .set("optimizer.name", "adam")
      .set("optimizer.lr", 2e-3f)
      .set("schedule.name", "cosine")
      .set("schedule.warmup_steps", std::int64_t{-1})  // min(300, 10% of the run's steps)
      .set("batch_size", std::int64_t{32});
}

namespace {

// Recipes (MODELS.md), beside the models they train: what each changes of the default.

Recipe catdog_recipe() {
  // The cats-vs-dogs source: rescale 1/255, shear 0.2, zoom 0.2, horizontal flip; Adam at
  // Keras's default rate, constant; batch 32.
  return Recipe()
      .set("optimizer.name", "adam")
      .set("optimizer.lr", 1e-3f)
      .set("schedule.name", "constant")
      .set("schedule.warmup_steps", std::int64_t{0})
      .set("augment.shear", 0.2f)
      .set("augment.zoom", 0.2f)
      .set("augment.horizontal_flip", true);
}

Recipe cifar10_keras_recipe() {
  // Keras's cifar10_cnn example: RMSprop 1e-4 (rho 0.9), batch 32, shifts 0.1, flips.
  return Recipe()
      .set("optimizer.name", "rmsprop")
      .set("optimizer.lr", 1e-4f)
      .set("optimizer.alpha", 0.9f)
      .set("optimizer.eps", 1e-7f)
      .set("schedule.name", "constant")
      .set("schedule.warmup_steps", std::int64_t{0})
      .set("augment.width_shift", 0.1f)
      .set("augment.height_shift", 0.1f)
      .set("augment.horizontal_flip", true);
}

Recipe cifar10_tf_recipe() {
  // TensorFlow's CIFAR-10 tutorial: random 24x24 crop, flip, brightness +-63, contrast
  // 0.2-1.8, per-image standardization (so no rescale); evaluation takes the central 24x24.
  // SGD 0.1, x0.1 every 350 epochs of 50,000 images at batch 128 (136,719 steps); weight
  // decay on the weights of the two hidden dense layers only.
  return Recipe()
      .set("optimizer.name", "sgd")
      .set("optimizer.lr", 0.1f)
      .set("optimizer.weight_decay", 0.004f)
      .set("optimizer.decay_only", std::vector<std::string>{"fc1.weight", "fc2.weight"})
      .set("schedule.name", "step")
      .set("schedule.step_size", std::int64_t{136719})
      .set("schedule.gamma", 0.1f)
      .set("schedule.warmup_steps", std::int64_t{0})
      .set("batch_size", std::int64_t{128})
      .set("augment.crop_padding", std::int64_t{0})
      .set("augment.horizontal_flip", true)
      .set("augment.brightness", 63.0f)
      .set("augment.contrast_min", 0.2f)
      .set("augment.contrast_max", 1.8f)
      .set("rescale", 1.0f)
      .set("standardize", true)
      .set("resize", "center_crop");
}

Recipe imagenet_recipe(float lr) {
  // torchvision's ImageNet reference: SGD, momentum 0.9, weight decay 1e-4, batch 32 per
  // process here, random-resized crops of 224 and flips; cosine after a warm-up; inputs
  // normalized by ImageNet's channel means and deviations; evaluated on the central 224 of the
  // image resized to 256.
  return Recipe()
      .set("optimizer.name", "sgd")
      .set("optimizer.lr", lr)
      .set("optimizer.momentum", 0.9f)
      .set("optimizer.weight_decay", 1e-4f)
      .set("schedule.name", "cosine")
      .set("augment.random_resized_crop", true)
      .set("augment.horizontal_flip", true)
      .set("mean", std::vector<double>{0.485f, 0.456f, 0.406f})
      .set("std", std::vector<double>{0.229f, 0.224f, 0.225f})
      .set("resize", "resize_center_crop");
}

Recipe resnet_recipe() { return imagenet_recipe(0.1f); }
Recipe alexnet_recipe() { return imagenet_recipe(0.01f); }  // torchvision trains AlexNet at 0.01

// Video models (prednet.h): Lotter et al.'s configuration, and the hardware study's variant
// (120x160 frames, per-pixel peepholes, next-frame MSE, state carried between windows of 20
// frames of one long sequence).
PredNetConfig prednet_config(const std::string& name) {
  PredNetConfig c;  // the paper's defaults: 128x160, error units of layer 0
  if (name == "prednet-study") {
    c.height = 120;
    c.peepholes = true;
    c.loss = PredNetLoss::next_frame_mse;
    c.carry_state = true;
  }
  return c;
}

std::shared_ptr<Model> make_prednet(const ModelSpec& spec) {
  return build_prednet(spec, prednet_config(spec.name));
}

Recipe prednet_recipe() {
  // Lotter et al.: Adam 1e-3, batch 4 (the study's variant: batch 1); no augmentation.
  return Recipe()
      .set("optimizer.name", "adam")
      .set("optimizer.lr", 1e-3f)
      .set("schedule.name", "constant")
      .set("schedule.warmup_steps", std::int64_t{0})
      .set("batch_size", std::int64_t{4});
}

Recipe prednet_study_recipe() { return prednet_recipe().set("batch_size", std::int64_t{1}); }

// The zoo in `epoch models`'s order: a layer-stack model is its file (zoo/*.json, built in) and
// the recipe here; PredNet is a built-in block with its spec here.
struct Entry {
  std::string name;
  Recipe (*recipe)();
  std::shared_ptr<Model> (*make)(const ModelSpec&) = nullptr;  // a model that is no file
  ModelSpec spec;                                             // ... and its spec
};

/// A zoo file's description, with the recipe of its entry.
ModelDescription zoo_description(const std::string& name, Recipe recipe) {
  for (const ZooFile& f : zoo_files())
    if (name == f.name) {
      ModelDescription d = description_from_json(nlohmann::json::parse(f.text), name);
      d.name = name;
      d.file = "zoo/" + name + ".json";
      d.recipe = std::move(recipe);
      return d;
    }
  EPOCH_THROW(InvalidArgument, "the zoo has no file for ", name);
}

/// The spec of a zoo file's model without building it (the output is its last dense layer's
/// units, which build_model checks), so listing the zoo allocates nothing.
ModelSpec zoo_spec(const ModelDescription& d) {
  ModelSpec s;
  s.name = d.name;
  s.summary = d.summary;
  s.input = d.input;
  s.task = d.task;
  s.recipe = d.recipe;
  for (const LayerNode& n : d.layers)
    if (n.op == "dense") s.outputs = n.attrs.at("units").get<std::int64_t>();
  return s;
}

const std::vector<Entry>& entries() {
  static const std::vector<Entry> all = [] {
    std::vector<Entry> v = {
        {"fmnist-cnn", default_recipe},
        {"autoencoder", default_recipe},
        {"catdog", catdog_recipe},
        {"catdog-wide", catdog_recipe},
        {"deep-cnn", catdog_recipe},
        {"cifar10-keras", cifar10_keras_recipe},
        {"cifar10-tf", cifar10_tf_recipe},
        {"alexnet", alexnet_recipe},
        {"alexnet-bn", alexnet_recipe},
        {"resnet18", resnet_recipe},
        {"resnet50", resnet_recipe},
        {"prednet",
         prednet_recipe,
         make_prednet,
         {"prednet",
          "PredNet (Lotter et al.): 4 ConvLSTM layers, 10-frame clips of 128x160",
          {10, 3, 128, 160},
          4,
          Task::frame_prediction,
          {}}},
        {"prednet-study",
         prednet_study_recipe,
         make_prednet,
         {"prednet-study",
          "PredNet with peepholes, next-frame MSE, 20-frame windows of 120x160",
          {20, 3, 120, 160},
          1,
          Task::frame_prediction,
          {}}},
    };
    for (Entry& e : v) {
      if (e.make == nullptr)
        e.spec = zoo_spec(zoo_description(e.name, e.recipe()));
      else
        e.spec.recipe = e.recipe();
    }
    return v;
  }();
  return all;
}

}  // namespace

const char* task_name(Task task) {
  switch (task) {
    case Task::classification:
      return "classification";
    case Task::binary:
      return "binary";
    case Task::reconstruction:
      return "reconstruction";
    case Task::frame_prediction:
      return "frame prediction";
  }
  return "?";
}

const std::vector<ModelSpec>& model_specs() {
  static const std::vector<ModelSpec> specs = [] {
    std::vector<ModelSpec> v;
    for (const Entry& e : entries()) v.push_back(e.spec);
    return v;
  }();
  return specs;
}

const ModelSpec& find_model(const std::string& name) {
  std::string valid;
  for (const Entry& e : entries()) {
    if (e.spec.name == name) return e.spec;
    valid += (valid.empty() ? "" : ", ") + e.spec.name;
  }
  if (const RegisteredModel* m = registered_model(name)) return m->spec;
  EPOCH_THROW(ConfigError, "unknown model '", name, "' (valid: ", valid,
              ", or a model file: .json, .keras)");
}

LayerStack& LayerStack::add(const std::string& name, std::shared_ptr<nn::Module> layer) {
  register_module(name, std::move(layer));
  return *this;
}

Tensor LayerStack::forward(const Tensor& x) { return nn::forward_in_order(*this, x); }
Shape LayerStack::output_shape(const Shape& input) const {
  return nn::output_shape_in_order(*this, input);
}
std::int64_t LayerStack::flops(const Shape& input) const {
  return nn::flops_in_order(*this, input);
}

Tensor Model::loss(const Tensor& output, const Tensor& x, const Tensor& labels) const {
  return task_loss(spec_.task, output, x, labels);
}

Tensor Model::predict_frames(const Tensor& /*x*/) {
  EPOCH_THROW(InvalidArgument, "model ", spec_.name, " does not predict frames");
}

std::shared_ptr<Model> build_model(const std::string& name) {
  const ModelSpec& spec = find_model(name);
  for (const Entry& e : entries())
    if (e.spec.name == name) {
      if (e.make != nullptr) return e.make(spec);
      std::shared_ptr<Model> model = build_described(zoo_description(name, e.recipe()));
      EPOCH_CHECK(model->spec().outputs == spec.outputs, "zoo/", name,
                  ".json: the output is not its last dense layer's");
      return model;
    }
  return build_described(registered_model(name)->description);
}

ModelDescription describe_model(const std::string& name) {
  const ModelSpec& spec = find_model(name);
  for (const Entry& e : entries())
    if (e.spec.name == name) {
      if (e.make != nullptr)
        EPOCH_THROW(ConfigError, name, " is a built-in block, not a description: it cannot be exported");
      return zoo_description(name, e.recipe());
    }
  (void)spec;
  return registered_model(name)->description;
}

double task_loss_sum_f64(Task task, const Tensor& output, const Tensor& x, const Tensor& labels) {
  const std::vector<float> out = output.to_vector();
  const std::int64_t n = output.size(0);
  EPOCH_CHECK(n > 0 && static_cast<std::int64_t>(out.size()) % n == 0,
              "task_loss_sum_f64: an output without samples");
  const std::int64_t k = static_cast<std::int64_t>(out.size()) / n;
  double sum = 0.0;
  switch (task) {
    case Task::classification: {
      const std::vector<float> label = labels.to_vector();  // i32 class numbers, exact as floats
      for (std::int64_t i = 0; i < n; ++i) {
        const float* row = out.data() + i * k;
        double top = row[0];
        for (std::int64_t j = 1; j < k; ++j) top = std::max(top, static_cast<double>(row[j]));
        double e = 0.0;
        for (std::int64_t j = 0; j < k; ++j) e += std::exp(static_cast<double>(row[j]) - top);
        const auto at = static_cast<std::int64_t>(label[static_cast<std::size_t>(i)]);
        EPOCH_CHECK(at >= 0 && at < k, "task_loss_sum_f64: label ", at, " of ", k, " classes");
        sum += top + std::log(e) - static_cast<double>(row[at]);
      }
      return sum;
    }
    case Task::binary: {
      const std::vector<float> label = labels.to_vector();  // i32 class numbers, exact as floats
      for (std::int64_t i = 0; i < n; ++i) {
        const double z = out[static_cast<std::size_t>(i)];
        const double t = label[static_cast<std::size_t>(i)];
        sum += std::max(z, 0.0) - z * t + std::log1p(std::exp(-std::fabs(z)));
      }
      return sum;
    }
    case Task::reconstruction: {
      const std::vector<float> target = x.to_vector();
      EPOCH_CHECK(target.size() == out.size(), "task_loss_sum_f64: the reconstruction has ",
                  out.size(), " values for ", target.size(), " inputs");
      for (std::int64_t i = 0; i < n; ++i) {
        double s = 0.0;
        for (std::int64_t j = 0; j < k; ++j) {
          const double d = static_cast<double>(out[static_cast<std::size_t>(i * k + j)]) -
                           static_cast<double>(target[static_cast<std::size_t>(i * k + j)]);
          s += d * d;
        }
        sum += s / static_cast<double>(k);
      }
      return sum;
    }
    case Task::frame_prediction:
      break;
  }
  EPOCH_THROW(InvalidArgument, "task_loss_sum_f64: a frame-prediction model computes its own loss");
}

Tensor task_loss(Task task, const Tensor& output, const Tensor& x, const Tensor& labels) {
  switch (task) {
    case Task::classification:
      return softmax_cross_entropy(output, labels);
    case Task::binary:  // the targets are made where the labels are: no trip to the host
      EPOCH_CHECK(labels.dtype() == DType::i32, "binary labels must be i32");
      return bce_with_logits(output, ops::i32_to_f32(labels).view({labels.numel(), 1}));
    case Task::reconstruction:
      return mse_loss(output, flatten(x.detach()));
    case Task::frame_prediction:
      EPOCH_THROW(InvalidArgument, "a frame-prediction model computes its own loss");
  }
  EPOCH_THROW(InvalidArgument, "unknown task");
}

}  // namespace epoch::models
