// Model files: the Keras models of tests/models/keras (written by Keras 3 itself, and Keras 2's
// form of three) give Keras's count_params(), output_shape and every layer's output shape;
// Keras's semantics reach the description (preprocessing, weight decay, batch norm, hard
// sigmoid); epoch's own format reads back to the same model; hostile files are refused in one
// line each.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "epoch/models/graph_model.h"
#include "epoch/models/keras_reader.h"
#include "epoch/models/model_file.h"
#include "epoch/models/summary.h"
#include "epoch/nn/layers.h"
#include "epoch/tensor/error.h"

namespace epoch::models {
namespace {

using nlohmann::json;

std::string keras_dir() { return std::string(EPOCH_SOURCE_DIR) + "/tests/models/keras/"; }

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

json expected() { return json::parse(read_text(keras_dir() + "expected.json"))["models"]; }

json batch(const Shape& shape, bool channels_last) {
  json out = json::array({nullptr});
  for (std::int64_t d : source_shape(shape, channels_last)) out.push_back(d);
  return out;
}

TEST(ModelFile, KerasFilesGiveKerasCountsAndShapes) {
  const json all = expected();
  for (const auto& [name, want] : all.items()) {
    for (const std::string& file :
         {name + ".json", name + "_keras2.json", name + ".keras", name + "_deflated.keras"}) {
      const std::string path = keras_dir() + file;
      if (!std::filesystem::exists(path)) continue;
      SCOPED_TRACE(file);
      const ModelSummary s = summarize(*build_model(path));
      EXPECT_EQ(s.total(), want["count_params"].get<std::int64_t>());
      EXPECT_EQ(batch(s.output, s.channels_last), want["output_shape"]);
      EXPECT_TRUE(s.channels_last);
      EXPECT_EQ(s.sha256.size(), 64u);
      if (file != name + ".json") continue;  // the other forms were written with other names
      int matched = 0;
      for (const LayerSummary& row : s.layers) {
        if (!want["layer_output_shapes"].contains(row.name)) continue;
        EXPECT_EQ(batch(row.output, true), want["layer_output_shapes"][row.name]) << row.name;
        ++matched;
      }
      EXPECT_GE(matched, 3);
    }
  }
}

// The activations as Keras computes them: a file of ELU(0.5), elu, selu, swish, silu,
// ReLU(max_value=6), relu6, hard_sigmoid (Keras 3's), LeakyReLU(0.1), leaky_relu (0.2), tanh,
// sigmoid, ReLU and linear side by side, against Keras's own output on seven values.
TEST(ModelFile, ActivationsComputeAsKeras) {
  const json want = expected()["activations"]["forward"];
  const std::shared_ptr<Model> m = build_model(keras_dir() + "activations.json");
  m->train(false);
  const std::vector<float> in = want["input"].get<std::vector<float>>();
  const std::vector<float> out =
      m->forward(Tensor::from_vector({1, static_cast<std::int64_t>(in.size())}, in)).to_vector();
  const std::vector<float> keras = want["output"].get<std::vector<float>>();
  ASSERT_EQ(out.size(), keras.size());
  for (std::size_t i = 0; i < out.size(); ++i)
    EXPECT_NEAR(out[i], keras[i], 2e-6f * std::max(1.0f, std::abs(keras[i])))
        << "value " << i % in.size() << " of activation " << i / in.size();
}

const LayerNode& layer_of(const ModelDescription& d, const std::string& op, int index = 0) {
  for (const LayerNode& n : d.layers)
    if (n.op == op && index-- == 0) return n;
  throw std::runtime_error("no " + op);
}

const Recipe::Value* setting(const Recipe& r, const std::string& key) {
  const Recipe::Value* v = nullptr;
  for (const auto& [k, value] : r.settings)
    if (k == key) v = &value;
  return v;
}

TEST(ModelFile, KerasSemanticsReachTheDescription) {
  const ModelDescription catdog = read_model_file(keras_dir() + "catdog.json");
  EXPECT_EQ(catdog.format, "keras 3");
  EXPECT_EQ(catdog.task, Task::binary);
  EXPECT_EQ(catdog.input, (Shape{3, 64, 64}));
  // The leading Rescaling is the run's preprocessing, not applied again by the model.
  EXPECT_TRUE(layer_of(catdog, "rescaling").attrs["as_preprocessing"].get<bool>());
  EXPECT_NEAR(std::get<double>(*setting(catdog.recipe, "rescale")), 1.0 / 255, 1e-12);
  EXPECT_EQ(std::get<std::string>(*setting(catdog.recipe, "optimizer.name")), "adam");
  EXPECT_EQ(std::get<std::string>(*setting(catdog.recipe, "schedule.name")), "constant");
  EXPECT_EQ(std::get<std::int64_t>(*setting(catdog.recipe, "batch_size")), 32);
  EXPECT_EQ(layer_of(catdog, "flatten").attrs["order"], "hwc");
  // The output's sigmoid belongs to the loss: the model gives a logit.
  const std::shared_ptr<Model> m = build_described(catdog);
  EXPECT_EQ(m->children().back().first, "dense_1");

  const ModelDescription residual = read_model_file(keras_dir() + "residual.json");
  EXPECT_EQ(residual.task, Task::classification);
  const LayerNode& bn = layer_of(residual, "batch_norm", 1);  // momentum=0.9, epsilon=1e-5
  EXPECT_NEAR(bn.attrs["momentum"].get<double>(), 0.1, 1e-9);
  EXPECT_NEAR(bn.attrs["epsilon"].get<double>(), 1e-5, 1e-12);
  const LayerNode& bn0 = layer_of(residual, "batch_norm", 0);  // Keras's defaults
  EXPECT_NEAR(bn0.attrs["momentum"].get<double>(), 0.01, 1e-9);
  EXPECT_NEAR(bn0.attrs["epsilon"].get<double>(), 1e-3, 1e-12);
  EXPECT_EQ(bn0.attrs["running_variance"], "biased");  // Keras averages the biased variance
  // ... but tf.keras (Keras 2) normalizes images with its fused batch norm, which averages the
  // unbiased one (measured with tf_keras 2.21).
  const ModelDescription residual2 = read_model_file(keras_dir() + "residual_keras2.json");
  EXPECT_EQ(layer_of(residual2, "batch_norm", 0).attrs["running_variance"], "unbiased");
  bool biased_built = false;
  const std::shared_ptr<Model> built = build_described(residual);
  for (const auto& [name, child] : built->children())
    biased_built |= child->describe().find("biased running variance") != std::string::npos;
  EXPECT_TRUE(biased_built);
  // L2(1e-4) on two kernels: weight decay 2e-4 on those parameters alone, with SGD's settings.
  EXPECT_NEAR(std::get<double>(*setting(residual.recipe, "optimizer.weight_decay")), 2e-4, 1e-12);
  EXPECT_EQ(std::get<std::vector<std::string>>(*setting(residual.recipe, "optimizer.decay_only"))
                .size(),
            2u);
  EXPECT_EQ(std::get<std::string>(*setting(residual.recipe, "optimizer.name")), "sgd");
  EXPECT_NEAR(std::get<double>(*setting(residual.recipe, "optimizer.momentum")), 0.9, 1e-6);
  EXPECT_EQ(layer_of(residual, "add").inputs.size(), 2u);

  // hard_sigmoid as each Keras version defines it.
  const ModelDescription k3 = read_model_file(keras_dir() + "odd_layers.json");
  const ModelDescription k2 = read_model_file(keras_dir() + "odd_layers_keras2.json");
  EXPECT_EQ(k2.format, "keras 2");
  EXPECT_NEAR(layer_of(k3, "conv2d", 1).attrs["slope"].get<double>(), 1.0 / 6, 1e-12);
  EXPECT_NEAR(layer_of(k2, "conv2d", 1).attrs["slope"].get<double>(), 0.2, 1e-12);
  EXPECT_EQ(k3.task, Task::classification);  // from_logits=True: a linear output
}

TEST(ModelFile, KerasInitializersDrawAsKerasDoes) {
  // HeNormal: a normal of std sqrt(2 / fan_in) truncated at 2 std; RandomUniform; Constant.
  const json model = {
      {"class_name", "Sequential"},
      {"config",
       {{"layers",
         {{{"class_name", "InputLayer"}, {"config", {{"name", "in"}, {"batch_shape", {nullptr, 400}}}}},
          {{"class_name", "Dense"},
           {"config",
            {{"name", "he"},
             {"units", 500},
             {"kernel_initializer", {{"class_name", "HeNormal"}, {"config", json::object()}}},
             {"bias_initializer", {{"class_name", "Constant"}, {"config", {{"value", 0.25}}}}}}}},
          {{"class_name", "Dense"},
           {"config",
            {{"name", "out"},
             {"units", 3},
             {"activation", "softmax"},
             {"kernel_initializer",
              {{"class_name", "RandomUniform"}, {"config", {{"minval", 0.5}, {"maxval", 0.75}}}}}}}}}}}}};
  const std::shared_ptr<Model> m = build_described(read_keras_json(model.dump(), "init.json"));
  nn::initialize(*m, 11);
  for (const auto& [name, t] : m->parameters()) {
    const std::vector<float> v = t.to_vector();
    double sum = 0, squares = 0, lo = 1e9, hi = -1e9;
    for (float x : v) {
      sum += x;
      squares += static_cast<double>(x) * x;
      lo = std::min<double>(lo, x);
      hi = std::max<double>(hi, x);
    }
    const double mean = sum / v.size(), std = std::sqrt(squares / v.size() - mean * mean);
    if (name == "he.weight") {
      const double want = std::sqrt(2.0 / 400);  // Keras: the truncated normal keeps this std
      EXPECT_NEAR(std, want, 0.02 * want);
      EXPECT_LE(hi, 2.0 * want / 0.87962566103423978 + 1e-6);
    } else if (name == "he.bias") {
      EXPECT_EQ(lo, 0.25);
      EXPECT_EQ(hi, 0.25);
    } else if (name == "out.weight") {
      EXPECT_GE(lo, 0.5);
      EXPECT_LT(hi, 0.75);
    }
  }
  // A depthwise kernel takes Keras's fans of its (3, 3, 32, 3) kernel: Glorot-uniform in
  // +-sqrt(6 / (9 * (32 + 3))) = 0.138, where the grouped weight's own would give 0.083.
  const std::shared_ptr<Model> sep = build_model(keras_dir() + "separable.json");
  nn::initialize(*sep, 3);
  bool seen = false;
  for (const auto& [name, t] : sep->parameters()) {
    if (name != "depthwise_conv2d.weight") continue;
    seen = true;
    ASSERT_EQ(t.shape(), (Shape{96, 1, 3, 3}));
    double hi = 0;
    for (float x : t.to_vector()) hi = std::max<double>(hi, std::abs(x));
    EXPECT_LE(hi, std::sqrt(6.0 / (9 * 35)));
    EXPECT_GT(hi, 0.9 * std::sqrt(6.0 / (9 * 35)));
  }
  EXPECT_TRUE(seen);
}

TEST(ModelFile, EpochsOwnFormatReadsBackToTheSameModel) {
  const std::string dir = ::testing::TempDir() + "/epoch_model_file_roundtrip";
  std::filesystem::create_directories(dir);
  for (const char* name : {"catdog.json", "residual.json", "odd_layers.json", "autoencoder.json"}) {
    SCOPED_TRACE(name);
    const ModelDescription d = read_model_file(keras_dir() + name);
    const json written = description_to_json(d);
    const std::string path = dir + "/" + name;
    std::ofstream(path) << written.dump(1);
    const ModelDescription back = read_model_file(path);
    json again = description_to_json(back);
    again["name"] = written["name"];
    EXPECT_EQ(again, written);
    const ModelSummary a = summarize(*build_described(d)), b = summarize(*build_described(back));
    EXPECT_EQ(a.total(), b.total());
    EXPECT_EQ(a.flops, b.flops);
    EXPECT_EQ(a.output, b.output);
  }
}

/// The one-line error reading `text` as a Keras file gives (ConfigError or IoError).
std::string keras_error(const std::string& text) {
  try {
    (void)described_spec(read_keras_json(text, "net.json"));
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

json sequential(json layers) {
  json all = json::array({{{"class_name", "InputLayer"},
                           {"config", {{"name", "in"}, {"batch_shape", {nullptr, 8, 8, 3}}}}}});
  for (json& l : layers) all.push_back(l);
  return {{"class_name", "Sequential"}, {"config", {{"name", "s"}, {"layers", all}}}};
}

json layer(const std::string& cls, json config) {
  return {{"class_name", cls}, {"config", config}};
}

json functional(json layers, const std::string& output) {
  return {{"class_name", "Functional"},
          {"config",
           {{"name", "f"},
            {"layers", layers},
            {"input_layers", {"in", 0, 0}},
            {"output_layers", {output, 0, 0}}}}};
}

json node_of(const std::string& name, const std::string& cls, json config,
             std::vector<std::string> inputs) {
  json args = json::array();
  for (const std::string& i : inputs)
    args.push_back({{"class_name", "__keras_tensor__"},
                    {"config", {{"keras_history", {i, 0, 0}}}}});
  config["name"] = name;
  return {{"class_name", cls},
          {"name", name},
          {"config", config},
          {"inbound_nodes", json::array({{{"args", inputs.size() == 1 ? args[0] : args}}})}};
}

void expect_refused(const std::string& text, const std::string& says) {
  const std::string e = keras_error(text);
  EXPECT_NE(e.find(says), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
}

TEST(ModelFile, HostileAndUnsupportedFilesAreRefusedInOneLine) {
  const json dense = layer("Dense", {{"name", "out"}, {"units", 2}, {"activation", "softmax"}});
  const json flat = layer("Flatten", {{"name", "flat"}});
  // What epoch does not support, named with the layer and the key.
  json conv = layer("Conv2D", {{"name", "conv3"}, {"filters", 4}, {"kernel_size", {3, 3}},
                               {"data_format", "channels_first"}});
  expect_refused(sequential({conv, flat, dense}).dump(),
                 "net.json: conv3: Conv2D data_format channels_first is not supported");
  json custom = layer("MyLayer", {{"name", "mine"}});
  custom["registered_name"] = "Custom>MyLayer";
  expect_refused(sequential({custom, flat, dense}).dump(),
                 "net.json: mine: Custom>MyLayer (a custom layer) is not supported");
  expect_refused(sequential({layer("LSTM", {{"name", "lstm"}}), dense}).dump(),
                 "lstm: LSTM is not a layer epoch supports");
  json gelu = layer("Dense", {{"name", "g"}, {"units", 4}, {"activation", "gelu"}});
  expect_refused(sequential({flat, gelu, dense}).dump(), "g: Dense activation gelu is not supported");
  json orth = layer("Dense", {{"name", "h"}, {"units", 4}, {"kernel_initializer", {{"class_name", "Orthogonal"}}}});
  expect_refused(sequential({flat, orth, dense}).dump(),
                 "h: Dense kernel_initializer Orthogonal is not supported");
  // A loss or optimizer setting that would change training is refused, not dropped.
  json compiled = sequential({flat, dense});
  compiled["compile_config"] = {
      {"loss", {{"class_name", "CategoricalCrossentropy"}, {"config", {{"label_smoothing", 0.1}}}}}};
  expect_refused(compiled.dump(),
                 "compile_config loss CategoricalCrossentropy label_smoothing 0.1 is not supported");
  compiled["compile_config"]["loss"]["config"] = {{"reduction", "sum"}};
  expect_refused(compiled.dump(), "reduction \"sum\" is not supported");
  compiled["compile_config"] = {{"loss", "categorical_crossentropy"},
                                {"optimizer", {{"class_name", "Adam"}, {"config", {{"clipnorm", 1.0}}}}}};
  expect_refused(compiled.dump(), "compile_config optimizer clipnorm is not supported");
  // A mixed-precision policy is read in float32, saying so.
  json mixed = layer("Dense", {{"name", "m"},
                               {"units", 2},
                               {"dtype", {{"class_name", "DTypePolicy"},
                                          {"config", {{"name", "mixed_float16"}}}}}});
  const ModelDescription with_policy = read_keras_json(sequential({flat, mixed}).dump(), "net.json");
  ASSERT_EQ(with_policy.warnings.size(), 1u);
  EXPECT_NE(with_policy.warnings[0].find("m: dtype policy mixed_float16"), std::string::npos);
  // Truncated files.
  const std::string good = read_text(keras_dir() + "residual.json");
  for (std::size_t keep : {std::size_t{0}, std::size_t{1}, good.size() / 3, good.size() - 1})
    expect_refused(good.substr(0, keep), "net.json: not valid JSON");
  // A cycle, a layer that takes its own output, a layer that is not there.
  const json in = {{"class_name", "InputLayer"},
                   {"name", "in"},
                   {"config", {{"name", "in"}, {"batch_shape", {nullptr, 4}}}},
                   {"inbound_nodes", json::array()}};
  expect_refused(functional({in, node_of("a", "Dense", {{"units", 3}}, {"b"}),
                             node_of("b", "Dense", {{"units", 3}}, {"a"})},
                            "b")
                     .dump(),
                 "the layers form a cycle");
  expect_refused(functional({in, node_of("a", "Dense", {{"units", 3}}, {"a"})}, "a").dump(),
                 "a depends on itself");
  expect_refused(functional({in, node_of("a", "Dense", {{"units", 3}}, {"ghost"})}, "a").dump(),
                 "ghost: a layer the model refers to is not in the file");
  // Absurd sizes: refused before any memory is asked for.
  expect_refused(sequential({flat, layer("Dense", {{"name", "huge"}, {"units", 1000000000000}}),
                             dense})
                     .dump(),
                 "huge: Dense units 1000000000000 is outside");
  json wide = sequential({layer("Conv2D", {{"name", "wide"}, {"filters", 16000000},
                                          {"kernel_size", {64, 64}}}),
                          flat, dense});
  wide["config"]["layers"][0]["config"]["batch_shape"] = {nullptr, 64, 64, 3};
  expect_refused(wide.dump(), "wide: Conv2D brings the model beyond epoch's limit of 2^32");
  json big = sequential({flat, dense});
  big["config"]["layers"][0]["config"]["batch_shape"] = {nullptr, 4000000, 4000000, 3};
  expect_refused(big.dump(), "beyond epoch's limit of 2^31 values per sample");
  // 10^6 layers.
  std::string many = R"({"class_name": "Sequential", "config": {"layers": [)"
                     R"({"class_name": "InputLayer", "config": {"name": "in", "batch_shape": [null, 4]}})";
  for (int i = 0; i < 1000000; ++i)
    many += R"(,{"class_name":"Dropout","config":{"name":"d)" + std::to_string(i) + R"(","rate":0.1}})";
  many += "]}}";
  expect_refused(many, "1000001 layers (at most 100000)");
  // Not a model at all, a wrong kind of value.
  expect_refused(R"({"class_name": "Tokenizer"})", "class Tokenizer is not a Keras Sequential");
  expect_refused(R"([1, 2, 3])", "not valid JSON");
  json wrong = sequential({flat, layer("Dense", {{"name", "d"}, {"units", "many"}}), dense});
  expect_refused(wrong.dump(), "net.json: ");
}

TEST(ModelFile, EpochFormatRefusesTyposAndUnknownOps) {
  const auto error = [](const std::string& layers) {
    const std::string text = R"({"format": "epoch-model", "version": 1, "input": [1, 8, 8],
        "task": "classification", "layers": )" + layers + "}";
    try {
      (void)described_spec(description_from_json(json::parse(text), "m.json"));
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(error(R"([{"name": "c", "op": "conv2d", "filter": 4, "kernel": 3}])")
                .find("m.json: c: conv2d has an attribute 'filter' that conv2d does not take"),
            std::string::npos);
  EXPECT_NE(error(R"([{"name": "x", "op": "transformer"}])").find("x: transformer is an op"),
            std::string::npos);
  EXPECT_NE(error(R"([{"name": "f", "op": "flatten"}, {"name": "o", "op": "dense", "units": 1}])")
                .find("a classifier gives (K) class scores"),
            std::string::npos);
  EXPECT_NE(error(R"([{"name": "f", "op": "flatten"}, {"name": "f", "op": "dense", "units": 3}])")
                .find("two layers are named 'f'"),
            std::string::npos);
  EXPECT_NE(error(R"([{"name": "f", "op": "flatten"}, {"name": "o", "op": "dense", "units": 3},
                      {"name": "p", "op": "dense", "units": 3, "inputs": ["f"]}])")
                .find("o: dense leads nowhere"),
            std::string::npos);
  EXPECT_EQ(error(R"([{"name": "f", "op": "flatten"}, {"name": "o", "op": "dense", "units": 3}])"),
            "(no error)");
}

}  // namespace
}  // namespace epoch::models
