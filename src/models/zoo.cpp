// The zoo of MODELS.md, layer for layer. Binary models end in one logit (the sigmoid lives in
// the loss and in prediction); classifiers end in logits.
#include "epoch/models/zoo.h"

#include "epoch/autograd/functions.h"
#include "epoch/nn/layers.h"

namespace epoch::models {
namespace {
using nn::Act;
using nn::Activation;
using nn::Conv2d;
using nn::Linear;
using nn::Pool2d;
using nn::Sequential;

std::shared_ptr<Act> relu_layer() { return std::make_shared<Act>(Activation::relu); }

std::shared_ptr<Sequential> fmnist_cnn() {
  auto s = std::make_shared<Sequential>();
  s->add(Conv2d::same(1, 32, 3)).add(relu_layer()).add(Pool2d::max(2));
  s->add(Conv2d::same(32, 64, 3)).add(relu_layer()).add(Pool2d::max(2));
  s->add(std::make_shared<nn::Flatten>());
  s->add(std::make_shared<Linear>(3136, 128)).add(relu_layer());
  s->add(std::make_shared<Linear>(128, 10));
  return s;
}

std::shared_ptr<Sequential> autoencoder() {
  auto s = std::make_shared<Sequential>();
  s->add(std::make_shared<nn::Flatten>());
  s->add(std::make_shared<Linear>(784, 256)).add(relu_layer());
  s->add(std::make_shared<Linear>(256, 64)).add(relu_layer());
  s->add(std::make_shared<Linear>(64, 256)).add(relu_layer());
  s->add(std::make_shared<Linear>(256, 784)).add(std::make_shared<Act>(Activation::sigmoid));
  return s;
}

std::shared_ptr<Sequential> catdog() {
  auto s = std::make_shared<Sequential>();
  s->add(Conv2d::valid(3, 32, 3)).add(relu_layer()).add(Pool2d::max(2));
  s->add(Conv2d::valid(32, 32, 3)).add(relu_layer()).add(Pool2d::max(2));
  s->add(std::make_shared<nn::Flatten>());
  s->add(std::make_shared<Linear>(6272, 128)).add(relu_layer());
  s->add(std::make_shared<Linear>(128, 1));
  return s;
}

std::shared_ptr<Sequential> catdog_wide() {
  auto s = std::make_shared<Sequential>();
  std::int64_t in = 3;
  for (int i = 0; i < 4; ++i) {
    s->add(Conv2d::valid(in, 64, 3)).add(relu_layer()).add(Pool2d::max(2));
    in = 64;
  }
  s->add(std::make_shared<nn::Flatten>());
  s->add(std::make_shared<Linear>(2304, 128)).add(relu_layer());
  s->add(std::make_shared<nn::Dropout>(0.5f));
  s->add(std::make_shared<Linear>(128, 1));
  return s;
}

std::shared_ptr<Sequential> deep_cnn() {
  auto s = std::make_shared<Sequential>();
  std::int64_t in = 3;
  for (int i = 1; i <= 32; ++i) {
    s->add(Conv2d::same(in, 64, 3)).add(relu_layer());
    in = 64;
    if (i % 8 == 0) s->add(Pool2d::max(2));
  }
  s->add(std::make_shared<nn::Flatten>());
  s->add(std::make_shared<Linear>(1024, 128)).add(relu_layer());
  s->add(std::make_shared<Linear>(128, 1));
  return s;
}

std::shared_ptr<Sequential> cifar10_keras() {
  auto s = std::make_shared<Sequential>();
  s->add(Conv2d::same(3, 32, 3)).add(relu_layer());
  s->add(Conv2d::valid(32, 32, 3)).add(relu_layer()).add(Pool2d::max(2));
  s->add(std::make_shared<nn::Dropout>(0.25f));
  s->add(Conv2d::same(32, 64, 3)).add(relu_layer());
  s->add(Conv2d::valid(64, 64, 3)).add(relu_layer()).add(Pool2d::max(2));
  s->add(std::make_shared<nn::Dropout>(0.25f));
  s->add(std::make_shared<nn::Flatten>());
  s->add(std::make_shared<Linear>(2304, 512)).add(relu_layer());
  s->add(std::make_shared<nn::Dropout>(0.5f));
  s->add(std::make_shared<Linear>(512, 10));
  return s;
}

std::shared_ptr<Sequential> cifar10_tf() {
  ops::LrnParams lrn;  // TensorFlow's depth radius 4, bias 1, alpha 0.001/9, beta 0.75
  lrn.size = 9;
  lrn.alpha = 0.001f;
  lrn.beta = 0.75f;
  lrn.k = 1.0f;
  auto s = std::make_shared<Sequential>();
  s->add(Conv2d::same(3, 64, 5)).add(relu_layer()).add(Pool2d::max_same(3, 2, 24, 24));
  s->add(std::make_shared<nn::Lrn>(lrn));
  s->add(Conv2d::same(64, 64, 5)).add(relu_layer()).add(std::make_shared<nn::Lrn>(lrn));
  s->add(Pool2d::max_same(3, 2, 12, 12));
  s->add(std::make_shared<nn::Flatten>());
  s->add(std::make_shared<Linear>(2304, 384)).add(relu_layer());
  s->add(std::make_shared<Linear>(384, 192)).add(relu_layer());
  s->add(std::make_shared<Linear>(192, 10));
  return s;
}

struct Entry {
  ModelSpec spec;
  std::shared_ptr<Sequential> (*build)();
};

const std::vector<Entry>& entries() {
  static const std::vector<Entry> all = {
      {{"fmnist-cnn", "2 conv + 2 dense, Fashion-MNIST (the default)", {1, 28, 28}, 10,
        Task::classification},
       fmnist_cnn},
      {{"autoencoder", "784-256-64-256-784 dense autoencoder, MSE", {1, 28, 28}, 784,
        Task::reconstruction},
       autoencoder},
      {{"catdog", "cats-vs-dogs: 2 conv/pool + dense, 64x64", {3, 64, 64}, 1, Task::binary},
       catdog},
      {{"catdog-wide", "cats-vs-dogs: 4 conv/pool of 64 + dropout, 128x128", {3, 128, 128}, 1,
        Task::binary},
       catdog_wide},
      {{"deep-cnn", "32 plain 3x3 convs of 64 (a throughput test), 64x64", {3, 64, 64}, 1,
        Task::binary},
       deep_cnn},
      {{"cifar10-keras", "Keras CIFAR-10 example CNN, 32x32", {3, 32, 32}, 10,
        Task::classification},
       cifar10_keras},
      {{"cifar10-tf", "TensorFlow CIFAR-10 tutorial CNN with LRN, 24x24 crops", {3, 24, 24}, 10,
        Task::classification},
       cifar10_tf},
  };
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
  EPOCH_THROW(ConfigError, "unknown model '", name, "' (valid: ", valid, ")");
}

Model build_model(const std::string& name) {
  const ModelSpec& spec = find_model(name);
  for (const Entry& e : entries())
    if (e.spec.name == name) return Model{spec, e.build()};
  EPOCH_THROW(ConfigError, "unknown model '", name, "'");
}

Tensor model_loss(Task task, const Tensor& output, const Tensor& x, const Tensor& labels) {
  switch (task) {
    case Task::classification:
      return softmax_cross_entropy(output, labels);
    case Task::binary: {
      EPOCH_CHECK(labels.dtype() == DType::i32, "binary labels must be i32");
      std::vector<float> t = labels.to_vector();
      Tensor targets = Tensor::from_vector({static_cast<std::int64_t>(t.size()), 1}, t);
      return bce_with_logits(output, targets.to(output.device()));
    }
    case Task::reconstruction:
      return mse_loss(output, flatten(x.detach()));
  }
  EPOCH_THROW(InvalidArgument, "unknown task");
}

}  // namespace epoch::models
