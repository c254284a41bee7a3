// Exporting descriptions: epoch's format and Keras 3 JSON read back to the same model (the
// zoo's and Keras's own files), what Keras cannot express is refused naming the layer, and
// Keras itself reads what epoch writes with the same count_params() (when the development
// venv with Keras is there: scripts/setup-keras.sh; otherwise that part is skipped, saying so).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "epoch/models/graph_model.h"
#include "epoch/models/keras_reader.h"
#include "epoch/models/keras_writer.h"
#include "epoch/models/model_file.h"
#include "epoch/models/summary.h"
#include "epoch/nn/layers.h"
#include "epoch/tensor/error.h"

namespace epoch::models {
namespace {

std::string keras_file(const std::string& name) {
  return std::string(EPOCH_SOURCE_DIR) + "/tests/models/keras/" + name;
}

const char* kModels[] = {"fmnist-cnn", "catdog", "cifar10-keras", "autoencoder", "deep-cnn"};

TEST(Export, EpochsFormatGivesTheSameModelBitForBit) {
  for (const char* name : kModels) {
    SCOPED_TRACE(name);
    const ModelDescription d = describe_model(name);
    ModelDescription back = description_from_json(description_to_json(d), "x.json");
    const std::shared_ptr<Model> a = build_model(name), b = build_described(back);
    nn::initialize(*a, 3);
    nn::initialize(*b, 3);
    const nn::NamedTensors sa = a->state(), sb = b->state();
    ASSERT_EQ(sa.size(), sb.size());
    for (std::size_t i = 0; i < sa.size(); ++i) {
      EXPECT_EQ(sa[i].first, sb[i].first);
      EXPECT_EQ(sa[i].second.to_vector(), sb[i].second.to_vector());
    }
    EXPECT_EQ(b->spec().task, a->spec().task);
  }
}

TEST(Export, KerasJsonReadsBackToTheSameCountsAndShapes) {
  std::vector<ModelDescription> all;
  for (const char* name : kModels) all.push_back(describe_model(name));
  for (const char* f : {"residual.json", "odd_layers.json", "catdog.json", "autoencoder.json"})
    all.push_back(read_model_file(keras_file(f)));
  for (const ModelDescription& d : all) {
    SCOPED_TRACE(d.name);
    const ModelDescription back = read_keras_json(write_keras_json(d).dump(), "back.json");
    const ModelSummary a = summarize(*build_described(d)), b = summarize(*build_described(back));
    EXPECT_EQ(a.total(), b.total());
    EXPECT_EQ(a.output, b.output);
    EXPECT_EQ(a.flops, b.flops);
    EXPECT_EQ(back.task, d.task);
  }
}

// What a Keras file's recipe says goes back into the file: L2 regularizers (as kernel_regularizer
// on the layers the decay is limited to), SGD's momentum and Nesterov; the ELU layers and
// activations; a batch norm of PyTorch's running variance or a recipe Keras has no word for is
// named in a warning.
TEST(Export, KerasRecipeAndLayersGoBackIntoTheFile) {
  const ModelDescription residual = read_model_file(keras_file("residual.json"));
  std::vector<std::string> warnings;
  const ModelDescription back =
      read_keras_json(write_keras_json(residual, &warnings).dump(), "back.json");
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  std::map<std::string, Recipe::Value> a, b;
  for (const auto& [key, value] : residual.recipe.settings) a[key] = value;
  for (const auto& [key, value] : back.recipe.settings) b[key] = value;
  for (const char* key : {"optimizer.name", "optimizer.weight_decay", "optimizer.decay_only",
                          "optimizer.momentum", "optimizer.nesterov"}) {
    ASSERT_TRUE(a.count(key) == 1 && b.count(key) == 1) << key;
    EXPECT_TRUE(a[key] == b[key]) << key;
  }
  // Each activation comes back as the same function with the same constants (the writer adds
  // the classifier's softmax after the last layer, which the loss then applies).
  const auto functions = [](const ModelDescription& d) {
    nlohmann::json out = nlohmann::json::array();
    for (const LayerNode& n : d.layers) {
      if (n.op != "activation") continue;
      nlohmann::json f = n.attrs;
      f.erase("source");
      f.erase("inputs");
      out.push_back(f);
    }
    return out;
  };
  const ModelDescription activations = read_model_file(keras_file("activations.json"));
  nlohmann::json again = functions(read_keras_json(write_keras_json(activations).dump(), "a.json"));
  ASSERT_EQ(again.back()["function"], "softmax");
  again.erase(again.size() - 1);
  EXPECT_EQ(again, functions(activations));
  // A batch norm of PyTorch's running variance: Keras would average the biased one.
  ModelDescription unbiased = residual;
  for (LayerNode& n : unbiased.layers)
    if (n.op == "batch_norm") n.attrs.erase("running_variance");
  warnings.clear();
  (void)write_keras_json(unbiased, &warnings);
  ASSERT_FALSE(warnings.empty());
  EXPECT_NE(warnings.front().find("averages the biased batch variance"), std::string::npos)
      << warnings.front();
  // A zoo recipe's schedule and augmentation have no place in compile_config: named.
  warnings.clear();
  (void)write_keras_json(describe_model("cifar10-keras"), &warnings);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("leaves out the recipe's augment."), std::string::npos) << warnings[0];
}

TEST(Export, WhatKerasCannotExpressIsRefused) {
  try {
    (void)write_keras_json(describe_model("cifar10-tf"));
    FAIL() << "written";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("cifar10-tf: norm1: lrn has no Keras form"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(write_keras_json(describe_model("resnet18")), ConfigError);  // padded max pool
  EXPECT_THROW(describe_model("prednet"), ConfigError);                     // a built-in block
}

TEST(Export, KerasReadsWhatEpochWrites) {
  const std::string python = std::string(EPOCH_SOURCE_DIR) + "/.venv-keras/bin/python";
  if (!std::filesystem::exists(python))
    GTEST_SKIP() << "no Keras venv (scripts/setup-keras.sh): Keras's side is not checked";
  const std::string dir = ::testing::TempDir() + "/epoch_export_keras";
  std::filesystem::create_directories(dir);
  std::string files;
  std::vector<std::int64_t> counts;
  for (const char* name : {"fmnist-cnn", "cifar10-keras"}) {
    const ModelDescription d = describe_model(name);
    const std::string path = dir + "/" + name + ".json";
    std::ofstream(path) << write_keras_json(d).dump();
    files += " " + path;
    counts.push_back(summarize(*build_described(d)).total());
  }
  const std::string residual = read_model_file(keras_file("residual.json")).name;
  std::ofstream(dir + "/residual.json") << write_keras_json(read_model_file(residual)).dump();
  files += " " + dir + "/residual.json";
  counts.push_back(5461);
  const std::string cmd = "TF_CPP_MIN_LOG_LEVEL=3 " + python +
                          " -c 'import sys, keras\nfor f in sys.argv[1:]: "
                          "print(keras.models.model_from_json(open(f).read()).count_params())'" +
                          files + " 2>/dev/null";
  FILE* pipe = popen(cmd.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::vector<std::int64_t> keras;
  long long v = 0;
  while (std::fscanf(pipe, "%lld", &v) == 1) keras.push_back(v);
  pclose(pipe);
  EXPECT_EQ(keras, counts);
}

}  // namespace
}  // namespace epoch::models
