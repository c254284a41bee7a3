// The zoo of MODELS.md, layer for layer. Binary models end in one logit (the sigmoid lives in
// the loss and in prediction); classifiers end in logits.
#include "epoch/models/zoo.h"

#include <map>

#include "epoch/autograd/functions.h"
#include "epoch/models/graph_model.h"
#include "epoch/models/model_file.h"
#include "epoch/models/prednet.h"
#include "epoch/nn/layers.h"
#include "epoch/nn/residual.h"
#include "epoch/ops/convert.h"

namespace epoch::models {
namespace {
using nn::Act;
using nn::Activation;
using nn::Conv2d;
using nn::Linear;
using nn::Pool2d;

/// Adds layers to a LayerStack under numbered names by kind: conv1, conv2, relu1, fc1, ...
class Layers {
 public:
  explicit Layers(LayerStack& stack) : stack_(stack) {}
  Layers& add(const std::string& kind, std::shared_ptr<nn::Module> layer) {
    stack_.add(kind + std::to_string(++count_[kind]), std::move(layer));
    return *this;
  }
  Layers& conv(std::shared_ptr<nn::Module> c) { return add("conv", std::move(c)); }
  Layers& relu() { return add("relu", std::make_shared<Act>(Activation::relu)); }
  Layers& pool(std::shared_ptr<nn::Module> p) { return add("pool", std::move(p)); }
  Layers& fc(std::int64_t in, std::int64_t out) {
    return add("fc", std::make_shared<Linear>(in, out));
  }
  Layers& dropout(float p) { return add("dropout", std::make_shared<nn::Dropout>(p)); }
  Layers& flatten() {
    stack_.add("flatten", std::make_shared<nn::Flatten>());
    return *this;
  }
  LayerStack& stack() { return stack_; }

 private:
  LayerStack& stack_;
  std::map<std::string, int> count_;
};

void fmnist_cnn(Layers& l) {
  l.conv(Conv2d::same(1, 32, 3)).relu().pool(Pool2d::max(2));
  l.conv(Conv2d::same(32, 64, 3)).relu().pool(Pool2d::max(2));
  l.flatten().fc(3136, 128).relu().fc(128, 10);
}

void autoencoder(Layers& l) {
  l.flatten();
  l.add("encode", std::make_shared<Linear>(784, 256)).relu();
  l.add("encode", std::make_shared<Linear>(256, 64)).relu();
  l.add("decode", std::make_shared<Linear>(64, 256)).relu();
  l.add("decode", std::make_shared<Linear>(256, 784));
  l.add("sigmoid", std::make_shared<Act>(Activation::sigmoid));
}

void catdog(Layers& l) {
  l.conv(Conv2d::valid(3, 32, 3)).relu().pool(Pool2d::max(2));
  l.conv(Conv2d::valid(32, 32, 3)).relu().pool(Pool2d::max(2));
  l.flatten().fc(6272, 128).relu().fc(128, 1);
}

void catdog_wide(Layers& l) {
  std::int64_t in = 3;
  for (int i = 0; i < 4; ++i) {
    l.conv(Conv2d::valid(in, 64, 3)).relu().pool(Pool2d::max(2));
    in = 64;
  }
  l.flatten().fc(2304, 128).relu().dropout(0.5f).fc(128, 1);
}

void deep_cnn(Layers& l) {
  std::int64_t in = 3;
  for (int i = 1; i <= 32; ++i) {
    l.conv(Conv2d::same(in, 64, 3)).relu();
    in = 64;
    if (i % 8 == 0) l.pool(Pool2d::max(2));
  }
  l.flatten().fc(1024, 128).relu().fc(128, 1);
}

void cifar10_keras(Layers& l) {
  l.conv(Conv2d::same(3, 32, 3)).relu();
  l.conv(Conv2d::valid(32, 32, 3)).relu().pool(Pool2d::max(2)).dropout(0.25f);
  l.conv(Conv2d::same(32, 64, 3)).relu();
  l.conv(Conv2d::valid(64, 64, 3)).relu().pool(Pool2d::max(2)).dropout(0.25f);
  l.flatten().fc(2304, 512).relu().dropout(0.5f).fc(512, 10);
}

void cifar10_tf(Layers& l) {
  ops::LrnParams lrn;  // TensorFlow's depth radius 4, bias 1, alpha 0.001/9, beta 0.75
  lrn.size = 9;
  lrn.alpha = 0.001f;
  lrn.beta = 0.75f;
  lrn.k = 1.0f;
  l.conv(Conv2d::same(3, 64, 5)).relu().pool(Pool2d::max_same(3, 2, 24, 24));
  l.add("norm", std::make_shared<nn::Lrn>(lrn));
  l.conv(Conv2d::same(64, 64, 5)).relu().add("norm", std::make_shared<nn::Lrn>(lrn));
  l.pool(Pool2d::max_same(3, 2, 12, 12));
  l.flatten().fc(2304, 384).relu().fc(384, 192).relu().fc(192, 10);
}

// ImageNet-size models (MODELS.md). AlexNet's layers are numbered as torchvision's features
// and classifier indices are not (a LayerStack names each layer): conv1..5, fc1..3. ResNet's
// are named as torchvision's (conv1, bn1, layer1.0.conv1, ..., layer4.1.downsample.0, fc), so
// parameter paths match.

std::shared_ptr<Pool2d> max_pool_3x3_s2(std::int64_t pad) {
  ops::Pool2dParams p;
  p.kernel_h = p.kernel_w = 3;
  p.stride_h = p.stride_w = 2;
  p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = pad;
  return std::make_shared<Pool2d>(nn::PoolKind::max, p);
}

std::shared_ptr<Conv2d> conv(std::int64_t in, std::int64_t out, std::int64_t k, std::int64_t stride,
                             std::int64_t pad, bool bias) {
  ops::Conv2dParams p;
  p.stride_h = p.stride_w = stride;
  p.pad_h = p.pad_w = pad;
  return std::make_shared<Conv2d>(in, out, k, k, p, bias);
}

void alexnet_layers(Layers& l, bool bn) {
  const auto conv_block = [&](std::shared_ptr<Conv2d> c, std::int64_t out) {
    l.conv(std::move(c));
    if (bn) l.add("bn", std::make_shared<nn::BatchNorm>(out));
    l.relu();
  };
  conv_block(conv(3, 64, 11, 4, 2, !bn), 64);
  l.pool(max_pool_3x3_s2(0));
  conv_block(conv(64, 192, 5, 1, 2, !bn), 192);
  l.pool(max_pool_3x3_s2(0));
  conv_block(conv(192, 384, 3, 1, 1, !bn), 384);
  conv_block(conv(384, 256, 3, 1, 1, !bn), 256);
  conv_block(conv(256, 256, 3, 1, 1, !bn), 256);
  l.pool(max_pool_3x3_s2(0));
  l.add("avgpool", std::make_shared<nn::AdaptiveAvgPool2d>(6, 6));
  l.flatten();
  const auto dense = [&](std::int64_t in, std::int64_t out) {
    l.dropout(0.5f);
    l.fc(in, out);
    if (bn) l.add("bn", std::make_shared<nn::BatchNorm>(out));
    l.relu();
  };
  dense(256 * 6 * 6, 4096);
  dense(4096, 4096);
  l.fc(4096, 1000);
}

void alexnet(Layers& l) { alexnet_layers(l, false); }
void alexnet_bn(Layers& l) { alexnet_layers(l, true); }
void resnet18(Layers& l);
void resnet50(Layers& l);

// BasicBlock (two 3x3) or Bottleneck (1x1, 3x3 with the stride: v1.5, 1x1 to 4x the width).
std::shared_ptr<nn::Residual> resnet_block(std::int64_t in, std::int64_t width, std::int64_t stride,
                                           bool bottleneck) {
  auto b = std::make_shared<nn::Residual>();
  const std::int64_t out = bottleneck ? 4 * width : width;
  if (bottleneck) {
    b->add("conv1", conv(in, width, 1, 1, 0, false))
        .add("bn1", std::make_shared<nn::BatchNorm>(width))
        .add("relu1", std::make_shared<Act>(Activation::relu))
        .add("conv2", conv(width, width, 3, stride, 1, false))
        .add("bn2", std::make_shared<nn::BatchNorm>(width))
        .add("relu2", std::make_shared<Act>(Activation::relu))
        .add("conv3", conv(width, out, 1, 1, 0, false))
        .add("bn3", std::make_shared<nn::BatchNorm>(out));
  } else {
    b->add("conv1", conv(in, width, 3, stride, 1, false))
        .add("bn1", std::make_shared<nn::BatchNorm>(width))
        .add("relu1", std::make_shared<Act>(Activation::relu))
        .add("conv2", conv(width, width, 3, 1, 1, false))
        .add("bn2", std::make_shared<nn::BatchNorm>(width));
  }
  if (stride != 1 || in != out) {
    auto down = std::make_shared<nn::Sequential>();
    down->add(conv(in, out, 1, stride, 0, false)).add(std::make_shared<nn::BatchNorm>(out));
    b->add("downsample", down);
  }
  return b;
}

void resnet(LayerStack& s, const std::vector<int>& blocks, bool bottleneck) {
  s.add("conv1", conv(3, 64, 7, 2, 3, false));
  s.add("bn1", std::make_shared<nn::BatchNorm>(64));
  s.add("relu", std::make_shared<Act>(Activation::relu));
  s.add("maxpool", max_pool_3x3_s2(1));
  std::int64_t in = 64;
  for (std::size_t stage = 0; stage < blocks.size(); ++stage) {
    const std::int64_t width = std::int64_t{64} << stage;
    auto layer = std::make_shared<nn::Sequential>();
    for (int i = 0; i < blocks[stage]; ++i) {
      const std::int64_t stride = i == 0 && stage > 0 ? 2 : 1;
      layer->add(resnet_block(in, width, stride, bottleneck));
      in = bottleneck ? 4 * width : width;
    }
    s.add("layer" + std::to_string(stage + 1), layer);
  }
  s.add("avgpool", std::make_shared<nn::GlobalAvgPool2d>());
  s.add("fc", std::make_shared<Linear>(in, 1000));
}

void resnet18(Layers& l) { resnet(l.stack(), {2, 2, 2, 2}, false); }
void resnet50(Layers& l) { resnet(l.stack(), {3, 4, 6, 3}, true); }

}  // namespace

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

struct Entry {
  ModelSpec spec;
  void (*build)(Layers&);  // a LayerStack's layers
  Recipe (*recipe)();
  std::shared_ptr<Model> (*make)(const ModelSpec&) = nullptr;  // a model that is no stack
};

const std::vector<Entry>& entries() {
  static const std::vector<Entry> all = [] {
    std::vector<Entry> v = {
        {{"fmnist-cnn",
          "2 conv + 2 dense, Fashion-MNIST (the default)",
          {1, 28, 28},
          10,
          Task::classification,
          {}},
         fmnist_cnn,
         default_recipe},
        {{"autoencoder",
          "784-256-64-256-784 dense autoencoder, MSE",
          {1, 28, 28},
          784,
          Task::reconstruction,
          {}},
         autoencoder,
         default_recipe},
        {{"catdog", "cats-vs-dogs: 2 conv/pool + dense, 64x64", {3, 64, 64}, 1, Task::binary, {}},
         catdog,
         catdog_recipe},
        {{"catdog-wide",
          "cats-vs-dogs: 4 conv/pool of 64 + dropout, 128x128",
          {3, 128, 128},
          1,
          Task::binary,
          {}},
         catdog_wide,
         catdog_recipe},
        {{"deep-cnn",
          "32 plain 3x3 convs of 64 (a throughput test), 64x64",
          {3, 64, 64},
          1,
          Task::binary,
          {}},
         deep_cnn,
         catdog_recipe},
        {{"cifar10-keras",
          "Keras CIFAR-10 example CNN, 32x32",
          {3, 32, 32},
          10,
          Task::classification,
          {}},
         cifar10_keras,
         cifar10_keras_recipe},
        {{"cifar10-tf",
          "TensorFlow CIFAR-10 tutorial CNN with LRN, 24x24 crops",
          {3, 24, 24},
          10,
          Task::classification,
          {}},
         cifar10_tf,
         cifar10_tf_recipe},
        {{"alexnet",
          "torchvision's AlexNet, 224x224, 1000 classes",
          {3, 224, 224},
          1000,
          Task::classification,
          {}},
         alexnet,
         alexnet_recipe},
        {{"alexnet-bn",
          "AlexNet with batch norm after every conv and hidden dense layer",
          {3, 224, 224},
          1000,
          Task::classification,
          {}},
         alexnet_bn,
         alexnet_recipe},
        {{"resnet18",
          "ResNet-18 v1.5, 224x224, 1000 classes",
          {3, 224, 224},
          1000,
          Task::classification,
          {}},
         resnet18,
         resnet_recipe},
        {{"resnet50",
          "ResNet-50 v1.5 (stride on the bottleneck's 3x3), 224x224",
          {3, 224, 224},
          1000,
          Task::classification,
          {}},
         resnet50,
         resnet_recipe},
        {{"prednet",
          "PredNet (Lotter et al.): 4 ConvLSTM layers, 10-frame clips of 128x160",
          {10, 3, 128, 160},
          4,
          Task::frame_prediction,
          {}},
         nullptr,
         prednet_recipe,
         make_prednet},
        {{"prednet-study",
          "PredNet with peepholes, next-frame MSE, 20-frame windows of 120x160",
          {20, 3, 120, 160},
          1,
          Task::frame_prediction,
          {}},
         nullptr,
         prednet_study_recipe,
         make_prednet},
    };
    for (Entry& e : v) e.spec.recipe = e.recipe();  // the specs above leave it for this
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
      auto model = std::make_shared<LayerStack>(spec);
      Layers layers(*model);
      e.build(layers);
      return model;
    }
  return build_described(registered_model(name)->description);
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
