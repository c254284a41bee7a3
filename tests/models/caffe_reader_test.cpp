// Caffe nets and solvers: AlexNet's train_val.prototxt in both of Caffe's dialects gives Caffe's
// 60,965,224 parameters and the same layers; LeNet's 431,080; a deploy net with net-level
// inputs; BatchNorm + Scale, Eltwise, Concat and in-place layers; Caffe's fillers; the solver's
// recipe; the text format's syntax and its errors; hostile files refused in one line.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "epoch/models/caffe_reader.h"
#include "epoch/models/graph_model.h"
#include "epoch/models/summary.h"
#include "epoch/models/text_format.h"
#include "epoch/nn/layers.h"
#include "epoch/tensor/error.h"

namespace epoch::models {
namespace {

std::string caffe_file(const std::string& name) {
  std::ifstream in(std::string(EPOCH_SOURCE_DIR) + "/tests/models/caffe/" + name, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

ModelSummary summary_of(const std::string& text, const CaffeOptions& o = {}) {
  return summarize(*build_described(read_caffe_net(text, "net.prototxt", o)));
}

std::string error_of(const std::string& text, const CaffeOptions& o = {}) {
  try {
    (void)described_spec(read_caffe_net(text, "net.prototxt", o));
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    return what;
  }
  return "(no error)";
}

TEST(CaffeReader, AlexNetInBothDialectsHasCaffesParameters) {
  const ModelSummary now = summary_of(caffe_file("alexnet_train_val.prototxt"));
  const ModelSummary v1 = summary_of(caffe_file("alexnet_train_val_v1.prototxt"));
  EXPECT_EQ(now.total(), 60965224);
  EXPECT_EQ(v1.total(), 60965224);
  EXPECT_EQ(now.input, (Shape{3, 227, 227}));  // crop_size with 3 channels
  EXPECT_EQ(now.output, (Shape{1000}));
  ASSERT_EQ(now.layers.size(), v1.layers.size());
  for (std::size_t i = 0; i < now.layers.size(); ++i) {
    EXPECT_EQ(now.layers[i].name, v1.layers[i].name);
    EXPECT_EQ(now.layers[i].type, v1.layers[i].type);
    EXPECT_EQ(now.layers[i].output, v1.layers[i].output);
  }
  // Caffe rounds pooling sizes up: 55 -> 27 -> 13 -> 6.
  for (const LayerSummary& l : now.layers) {
    if (l.name == "pool5") {
      EXPECT_EQ(l.output, (Shape{256, 6, 6}));
    }
  }
  const ModelDescription d = read_caffe_net(caffe_file("alexnet_train_val.prototxt"), "a");
  EXPECT_EQ(d.layers.front().attrs["weight_init"]["kind"], "normal");
  EXPECT_EQ(d.layers.front().attrs["weight_init"]["std"], 0.01);
  for (const LayerNode& n : d.layers) {
    if (n.name == "conv2") {
      EXPECT_EQ(n.attrs["bias_init"]["value"], 0.1);
    }
  }
  // decay_mult 0 on the biases: weight decay on the weights alone; batch 256 from data_param.
  // lr_mult 2 on the biases: their learning rate doubled.
  bool decay_only = false, batch = false;
  std::vector<std::string> lr_mult;
  for (const auto& [key, value] : d.recipe.settings) {
    if (key == "optimizer.decay_only")
      decay_only = std::get<std::vector<std::string>>(value).size() == 8;
    if (key == "batch_size") batch = std::get<std::int64_t>(value) == 256;
    if (key == "optimizer.lr_mult") lr_mult = std::get<std::vector<std::string>>(value);
  }
  EXPECT_TRUE(decay_only);
  EXPECT_TRUE(batch);
  ASSERT_EQ(lr_mult.size(), 8u);
  EXPECT_EQ(lr_mult.front(), "conv1.bias=2");
  EXPECT_FALSE(d.warnings.empty());  // mean_file, crop_size
}

TEST(CaffeReader, LeNetTakesItsShapeFromTheFlag) {
  const std::string lenet = caffe_file("lenet_train_test.prototxt");
  EXPECT_NE(error_of(lenet).find("net.prototxt: mnist: Data carries no shape: pass --input-shape"),
            std::string::npos);
  CaffeOptions o;
  o.input_shape = {1, 28, 28};
  const ModelSummary s = summary_of(lenet, o);
  EXPECT_EQ(s.total(), 431080);
  const ModelDescription d = read_caffe_net(lenet, "l", o);
  EXPECT_EQ(d.layers.front().attrs["weight_init"]["kind"], "variance_scaling");  // xavier
}

TEST(CaffeReader, DeployNetsBlocksAndInPlaceLayers) {
  // Net-level input, a residual block of BatchNorm + Scale (Caffe's 2C + 1 and 2C parameters),
  // an in-place ReLU, Eltwise SUM, Concat, average pooling, and Softmax as the output.
  const std::string net = R"(
name: "block"  # a comment
input: "data"
input_dim: 1 input_dim: 8 input_dim: 10 input_dim: 10
layer { name: "conv" type: "Convolution" bottom: "data" top: "conv"
        convolution_param { num_output: 8 kernel_size: 3 pad: 1 bias_term: false } }
layer { name: "bn" type: "BatchNorm" bottom: "conv" top: "conv" }
layer { name: "scale" type: "Scale" bottom: "conv" top: "conv" scale_param { bias_term: true } }
layer { name: "relu" type: "ReLU" bottom: "conv" top: "conv" }
layer { name: "sum" type: "Eltwise" bottom: "conv" bottom: "data" top: "sum" }
layer { name: "cat" type: "Concat" bottom: "sum" bottom: "data" top: "cat" }
layer { name: "pool" type: "Pooling" bottom: "cat" top: "pool"
        pooling_param { pool: AVE kernel_size: 2 stride: 2 } }
layer { name: "fc" type: "InnerProduct" bottom: "pool" top: "fc"
        inner_product_param { num_output: 4 } }
layer { name: "prob" type: "Softmax" bottom: "fc" top: "prob" }
)";
  const ModelSummary s = summary_of(net);
  EXPECT_EQ(s.total(), 8 * 8 * 9 + (2 * 8 + 1) + 2 * 8 + (16 * 5 * 5 * 4 + 4));
  EXPECT_EQ(s.output, (Shape{4}));
  // No filler: Caffe's constant 0.
  const ModelDescription d = read_caffe_net(net, "n");
  EXPECT_EQ(d.layers.front().attrs["weight_init"]["value"], 0.0);
  EXPECT_EQ(d.layers[1].inputs, std::vector<std::string>{"conv"});  // bn after conv
}

// CIFAR-10 quick's average pooling: Caffe's rounded-up last window overhangs an unpadded input
// and Caffe divides by the values inside it; a BatchNorm without a Scale after it has Caffe's
// 2C + 1 blobs and nothing to learn.
TEST(CaffeReader, OverhangingAveragePoolBatchNormAloneAndLrnWithinChannel) {
  const std::string net = R"(
input: "data"
input_dim: 1 input_dim: 2 input_dim: 4 input_dim: 4
layer { name: "bn" type: "BatchNorm" bottom: "data" top: "data" }
layer { name: "pool" type: "Pooling" bottom: "data" top: "pool"
        pooling_param { pool: AVE kernel_size: 3 stride: 2 } }
layer { name: "fc" type: "InnerProduct" bottom: "pool" top: "fc"
        inner_product_param { num_output: 3 } }
)";
  const ModelSummary s = summary_of(net);
  EXPECT_EQ(s.total(), (2 * 2 + 1) + (2 * 2 * 2 * 3 + 3));  // ceil((4 - 3) / 2) + 1 = 2
  EXPECT_EQ(s.trainable, 2 * 2 * 2 * 3 + 3);
  const std::shared_ptr<Model> m = build_described(read_caffe_net(net, "n"));
  m->train(false);
  std::vector<float> x(32);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 16);  // 0..15 twice
  // The batch norm in eval mode with its initial statistics leaves x (nearly) as it is; the
  // pooling's windows: rows/cols {0,1,2} and {2,3}: means of 9, 6, 6 and 4 values.
  const Tensor pooled = m->children()[1].second->forward(Tensor::from_vector({1, 2, 4, 4}, x));
  const std::vector<float> p = pooled.to_vector();
  ASSERT_EQ(p.size(), 8u);
  EXPECT_NEAR(p[0], (0 + 1 + 2 + 4 + 5 + 6 + 8 + 9 + 10) / 9.0f, 1e-5f);
  EXPECT_NEAR(p[1], (2 + 3 + 6 + 7 + 10 + 11) / 6.0f, 1e-5f);
  EXPECT_NEAR(p[2], (8 + 9 + 10 + 12 + 13 + 14) / 6.0f, 1e-5f);
  EXPECT_NEAR(p[3], (10 + 11 + 14 + 15) / 4.0f, 1e-5f);
  // CIFAR-10 full's LRN within each channel.
  const std::string lrn = R"(
input: "data"
input_dim: 1 input_dim: 2 input_dim: 4 input_dim: 4
layer { name: "norm1" type: "LRN" bottom: "data" top: "norm1"
        lrn_param { local_size: 3 alpha: 5e-05 beta: 0.75 norm_region: WITHIN_CHANNEL } }
layer { name: "fc" type: "InnerProduct" bottom: "norm1" top: "fc" inner_product_param { num_output: 3 } }
)";
  EXPECT_EQ(read_caffe_net(lrn, "n").layers[0].attrs["region"], "within_channel");
  std::string other = lrn;
  other.replace(other.find("WITHIN_CHANNEL"), 14, "SIDEWAYS");
  EXPECT_NE(error_of(other).find("norm1: LRN norm_region SIDEWAYS is not supported"),
            std::string::npos);
}

// GoogLeNet's auxiliary classifiers: a second SoftmaxWithLoss with loss_weight on a layer before
// the output is an auxiliary loss, its head's parameters counted as Caffe counts them; training
// adds weight x its loss, evaluating leaves it out.
TEST(CaffeReader, AuxiliaryClassifiersAddTheirWeightedLoss) {
  const auto net = [](double weight) {
    return R"(
input: "data"
input_dim: 2 input_dim: 3 input_dim: 4 input_dim: 4
layer { name: "c1" type: "Convolution" bottom: "data" top: "c1"
        convolution_param { num_output: 4 kernel_size: 1 weight_filler { type: "xavier" } } }
layer { name: "aux" type: "InnerProduct" bottom: "c1" top: "aux"
        inner_product_param { num_output: 3 weight_filler { type: "xavier" } } }
layer { name: "aux_loss" type: "SoftmaxWithLoss" bottom: "aux" bottom: "label" top: "aux_loss"
        loss_weight: )" + std::to_string(weight) + R"( }
layer { name: "out" type: "InnerProduct" bottom: "c1" top: "out"
        inner_product_param { num_output: 3 weight_filler { type: "xavier" } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "out" bottom: "label" top: "loss" }
)";
  };
  const ModelDescription d = read_caffe_net(net(0.3), "n");
  ASSERT_EQ(d.aux_losses.size(), 1u);
  EXPECT_EQ(d.aux_losses[0].first, "aux");
  EXPECT_EQ(summary_of(net(0.3)).total(), (3 * 4 + 4) + 2 * (64 * 3 + 3));
  const Tensor x = Tensor::from_vector({2, 3, 4, 4}, std::vector<float>(96, 0.5f));
  const Tensor labels = Tensor::from_ints({2}, std::vector<std::int32_t>{0, 2});
  const auto extra = [&](double weight) {  // the training loss less the output's own
    const std::shared_ptr<Model> m = build_described(read_caffe_net(net(weight), "n"));
    nn::initialize(*m, 7);
    m->train(false);
    const float main = m->loss(m->forward(x), x, labels).item();
    m->train(true);
    return m->loss(m->forward(x), x, labels).item() - main;
  };
  const float at3 = extra(0.3), at6 = extra(0.6);
  EXPECT_GT(at3, 0.0f);
  EXPECT_NEAR(at6, 2.0f * at3, 1e-5f);
  // The description keeps them (a checkpoint rebuilds the same model).
  EXPECT_EQ(description_from_json(description_to_json(d), "d.json").aux_losses, d.aux_losses);
  // A weight on the output's own loss (one loss layer or several) is refused, not dropped.
  std::string weighted = net(0.3);
  weighted.replace(weighted.rfind("top: \"loss\" }"), 14, "top: \"loss\" loss_weight: 2 }");
  EXPECT_NE(error_of(weighted).find("loss: SoftmaxWithLoss loss_weight 2 on the output"),
            std::string::npos)
      << error_of(weighted);
  std::string lenet = caffe_file("lenet_train_test.prototxt");
  lenet.replace(lenet.find("type: \"SoftmaxWithLoss\""), 24,
                "type: \"SoftmaxWithLoss\" loss_weight: 2");
  EXPECT_NE(error_of(lenet, CaffeOptions{.input_shape = {1, 28, 28}})
                .find("loss: SoftmaxWithLoss loss_weight 2 on the output"),
            std::string::npos);
}

TEST(CaffeReader, UnsupportedAndHostileNetsAreRefusedInOneLine) {
  const std::string head = "input: \"data\" input_dim: 1 input_dim: 3 input_dim: 8 input_dim: 8\n";
  EXPECT_NE(error_of(head + R"(layer { name: "py" type: "Python" bottom: "data" top: "py" })")
                .find("py: Python is not a layer epoch supports"),
            std::string::npos);
  EXPECT_NE(error_of(head + R"(layer { name: "c" type: "Convolution" bottom: "nowhere" top: "c"
                              convolution_param { num_output: 2 kernel_size: 1 } })")
                .find("c: Convolution: bottom 'nowhere' is made by no earlier layer"),
            std::string::npos);
  EXPECT_NE(error_of(head + R"(layer { name: "c" type: "Convolution" bottom: "data" top: "c"
                              convolution_param { num_output: 1000000000000 kernel_size: 1 } })")
                .find("c: Convolution filters 1000000000000 is outside"),
            std::string::npos);
  EXPECT_NE(error_of(head + R"(layer { name: "s" type: "Scale" bottom: "data" top: "s" })")
                .find("s: Scale is supported only right after a BatchNorm"),
            std::string::npos);
  EXPECT_NE(error_of(head + R"(layer { name: "e" type: "Eltwise" bottom: "data" bottom: "data"
                              top: "e" eltwise_param { operation: PROD } })")
                .find("e: Eltwise operation PROD is not supported"),
            std::string::npos);
  EXPECT_NE(error_of("layer { name: \"x\" type: \"ReLU\"").find("net.prototxt:1: the file ends "
                                                               "inside a message"),
            std::string::npos);
  EXPECT_NE(error_of(head + "layer { name: \"x }").find("a string is not closed"),
            std::string::npos);
  std::string deep = head;
  for (int i = 0; i < 200; ++i) deep += "layer { ";
  EXPECT_NE(error_of(deep).find("nested more than 100 deep"), std::string::npos);
  EXPECT_NE(error_of("name: \"empty\"").find("no layer { } or layers { }"), std::string::npos);
  // Every truncation of AlexNet: a net or one error, never a crash.
  const std::string alexnet = caffe_file("alexnet_train_val.prototxt");
  for (std::size_t keep = 0; keep < alexnet.size(); keep += 1 + alexnet.size() / 211) {
    try {
      (void)described_spec(read_caffe_net(alexnet.substr(0, keep), "a"));
    } catch (const ConfigError&) {
    }
  }
}

TEST(CaffeReader, TheTextFormatsSyntax) {
  const TextMessage m = parse_text_format(R"(
    a: 1  b: -2.5e-3 ; c: "x\"y\n" 'z'  # adjacent strings join
    d: ENUM_VALUE
    m { inner: 3 } n: { } o < p: [4, 5] >
  )", "t");
  EXPECT_EQ(m.find("a")->value, "1");
  EXPECT_EQ(m.find("b")->value, "-2.5e-3");
  EXPECT_EQ(m.find("c")->value, "x\"y\nz");
  EXPECT_TRUE(m.find("c")->quoted);
  EXPECT_EQ(m.find("d")->value, "ENUM_VALUE");
  EXPECT_EQ(m.find("m")->message->find("inner")->value, "3");
  EXPECT_TRUE(m.find("n")->message->fields.empty());
  EXPECT_EQ(m.find("o")->message->all("p").size(), 2u);
  EXPECT_THROW(parse_text_format("a 1", "t"), ConfigError);
  EXPECT_THROW(parse_text_format("a: }", "t"), ConfigError);
  EXPECT_THROW(parse_text_format("a: \"\\q\"", "t"), ConfigError);
}

TEST(CaffeReader, TheSolverGivesTheRecipe) {
  Recipe r;
  std::vector<std::string> warnings;
  read_caffe_solver(caffe_file("lenet_solver.prototxt"), "s.prototxt", r, warnings);
  std::map<std::string, Recipe::Value> v;
  for (const auto& [key, value] : r.settings) v[key] = value;
  EXPECT_EQ(std::get<std::string>(v["optimizer.name"]), "lars");  // Intel-Caffe's local_lr_auto
  EXPECT_EQ(std::get<double>(v["optimizer.lr"]), 0.01);
  EXPECT_EQ(std::get<double>(v["optimizer.momentum"]), 0.9);
  EXPECT_EQ(std::get<double>(v["optimizer.weight_decay"]), 0.0005);
  EXPECT_EQ(std::get<std::string>(v["schedule.name"]), "step");
  EXPECT_EQ(std::get<std::int64_t>(v["schedule.step_size"]), 5000);
  EXPECT_EQ(std::get<std::int64_t>(v["schedule.warmup_steps"]), 100);
  EXPECT_NEAR(std::get<double>(v["schedule.warmup_start_factor"]), 0.1, 1e-12);
  EXPECT_EQ(std::get<std::int64_t>(v["max_steps"]), 10000);  // max_iter: the run's length
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("ignored fields epoch does not use: engine"), std::string::npos);
  EXPECT_THROW(read_caffe_solver("max_iter: 0", "s", r, warnings), ConfigError);
  EXPECT_THROW(read_caffe_solver("max_iter: 2.5", "s", r, warnings), ConfigError);
  EXPECT_THROW(read_caffe_solver("lr_policy: \"inv\"", "s", r, warnings), ConfigError);
  EXPECT_THROW(read_caffe_solver("type: \"AdaGrad\"", "s", r, warnings), ConfigError);
}

}  // namespace
}  // namespace epoch::models
