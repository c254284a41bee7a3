// The zoo as files (zoo/*.json): each layer-stack model read from its file is the model the C++
// zoo built before (kept below as the reference): the same layers, parameter names and shapes,
// the same initial bits for a seed, the same outputs and gradients bit for bit, and the same
// spec without building.
#include <gtest/gtest.h>

#include <map>

#include "epoch/autograd/autograd.h"
#include "epoch/autograd/functions.h"
#include "epoch/models/zoo.h"
#include "testing/testing.h"

#include "epoch/nn/layers.h"
#include "epoch/nn/residual.h"

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

/// The model of `spec.name` as the C++ zoo built it; null for a model it did not build.
std::shared_ptr<LayerStack> build_reference_model(const ModelSpec& spec) {
  static const std::map<std::string, void (*)(Layers&)> builders = {
      {"fmnist-cnn", fmnist_cnn},   {"autoencoder", autoencoder},     {"catdog", catdog},
      {"catdog-wide", catdog_wide}, {"deep-cnn", deep_cnn},           {"cifar10-keras", cifar10_keras},
      {"cifar10-tf", cifar10_tf},   {"alexnet", alexnet},             {"alexnet-bn", alexnet_bn},
      {"resnet18", resnet18},       {"resnet50", resnet50}};
  const auto it = builders.find(spec.name);
  if (it == builders.end()) return nullptr;
  auto model = std::make_shared<LayerStack>(spec);
  Layers layers(*model);
  it->second(layers);
  return model;
}

TEST(ZooFiles, EachFileIsTheModelTheCodeBuilt) {
  int compared = 0;
  for (const ModelSpec& spec : model_specs()) {
    const std::shared_ptr<LayerStack> want = build_reference_model(spec);
    if (want == nullptr) continue;  // PredNet: a built-in block
    SCOPED_TRACE(spec.name);
    ++compared;
    const std::shared_ptr<Model> got = build_model(spec.name);
    ASSERT_NE(dynamic_cast<const LayerStack*>(got.get()), nullptr);
    EXPECT_EQ(got->spec().outputs, spec.outputs);
    EXPECT_EQ(got->spec().input, spec.input);
    ASSERT_EQ(got->children().size(), want->children().size());
    for (std::size_t i = 0; i < want->children().size(); ++i) {
      EXPECT_EQ(got->children()[i].first, want->children()[i].first);
      EXPECT_EQ(got->children()[i].second->describe(), want->children()[i].second->describe());
    }
    nn::initialize(*got, 5);
    nn::initialize(*want, 5);
    const nn::NamedTensors a = got->state(), b = want->state();
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].first, b[i].first);
      EXPECT_EQ(a[i].second.shape(), b[i].second.shape());
      if (spec.input[1] <= 64) EXPECT_EQ(a[i].second.to_vector(), b[i].second.to_vector()) << a[i].first;
    }
    EXPECT_EQ(got->flops(spec.input), want->flops(spec.input));
    if (spec.input[1] > 64) continue;  // ImageNet sizes: the layers and names above suffice
    Shape batch = {2};
    for (std::int64_t d : spec.input) batch.push_back(d);
    const Tensor x = testing::random_tensor(batch, 9, 0.0f, 1.0f);
    got->train(false);
    want->train(false);
    EXPECT_EQ(got->forward(x).to_vector(), want->forward(x).to_vector());
  }
  EXPECT_EQ(compared, 11);
}

}  // namespace epoch::models
