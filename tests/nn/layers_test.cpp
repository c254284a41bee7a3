// nn layers and modules: shapes, FLOPs, parameter registration, deterministic initialization,
// the flat parameter buffer, train/eval switching.
#include "epoch/nn/layers.h"

#include <gtest/gtest.h>

#include <cmath>

#include "epoch/autograd/functions.h"
#include "epoch/nn/flat_parameters.h"
#include "testing/testing.h"

namespace epoch::nn {
namespace {

std::shared_ptr<Sequential> tiny_cnn() {
  auto s = std::make_shared<Sequential>();
  s->add(Conv2d::same(1, 4, 3)).add(std::make_shared<Act>(Activation::relu)).add(Pool2d::max(2));
  s->add(std::make_shared<Flatten>()).add(std::make_shared<Linear>(4 * 4 * 4, 3));
  return s;
}

TEST(Layers, ShapesFlopsAndParameterNames) {
  auto net = tiny_cnn();
  EXPECT_EQ(net->output_shape({1, 8, 8}), (Shape{3}));
  // conv: 2 * (4*8*8) * (1*3*3); linear: 2 * 64 * 3; pooling counts no multiply-adds.
  EXPECT_EQ(net->flops({1, 8, 8}), 2 * 256 * 9 + 2 * 64 * 3);
  const NamedTensors params = net->parameters();
  ASSERT_EQ(params.size(), 4u);
  EXPECT_EQ(params[0].first, "0.weight");
  EXPECT_EQ(params[1].first, "0.bias");
  EXPECT_EQ(params[2].first, "4.weight");
  EXPECT_EQ(net->parameter_count(), 4 * 9 + 4 + 64 * 3 + 3);
  EXPECT_THROW(net->output_shape({2, 8, 8}), InvalidArgument);
}

TEST(Layers, InitializationIsDeterministicAndScaled) {
  auto a = tiny_cnn(), b = tiny_cnn(), c = tiny_cnn();
  initialize(*a, 42);
  initialize(*b, 42);
  initialize(*c, 43);
  const auto pa = a->parameters(), pb = b->parameters(), pc = c->parameters();
  EXPECT_EQ(pa[0].second.to_vector(), pb[0].second.to_vector());
  EXPECT_NE(pa[0].second.to_vector(), pc[0].second.to_vector());
  for (float v : pa[1].second.to_vector()) EXPECT_EQ(v, 0.0f);  // bias
  const float bound = std::sqrt(6.0f / (9.0f + 36.0f));         // glorot, fan in 9, out 36
  for (float v : pa[0].second.to_vector()) EXPECT_LE(std::fabs(v), bound);
}

TEST(Layers, JitterMovesEveryParameterOneUlpFromItsSeed) {
  auto a = tiny_cnn(), b = tiny_cnn(), c = tiny_cnn();
  initialize(*a, 42);
  initialize(*b, 42);
  initialize(*c, 42);
  jitter_ulp(*b, 7);
  jitter_ulp(*c, 7);
  const auto pa = a->parameters(), pb = b->parameters(), pc = c->parameters();
  int up = 0, down = 0;
  for (std::size_t k = 0; k < pa.size(); ++k) {
    const std::vector<float> va = pa[k].second.to_vector(), vb = pb[k].second.to_vector();
    EXPECT_EQ(vb, pc[k].second.to_vector()) << pa[k].first;  // the same seed, the same jitter
    for (std::size_t i = 0; i < va.size(); ++i) {
      const bool is_up = vb[i] == std::nextafter(va[i], HUGE_VALF);
      const bool is_down = vb[i] == std::nextafter(va[i], -HUGE_VALF);
      ASSERT_TRUE(is_up || is_down) << pa[k].first << "[" << i << "]: " << va[i] << " -> " << vb[i];
      up += is_up;
      down += is_down;
    }
  }
  EXPECT_GT(up, 20);  // both ways, about half each
  EXPECT_GT(down, 20);
}

TEST(Layers, FlatParametersKeepValuesAndCollectGradients) {
  auto net = tiny_cnn();
  initialize(*net, 1);
  const std::vector<float> before = net->parameters()[2].second.to_vector();
  FlatParameters flat = flatten_parameters(*net);
  EXPECT_EQ(flat.values.numel(), net->parameter_count());
  EXPECT_EQ(net->parameters()[2].second.to_vector(), before);
  const Tensor x = testing::random_tensor({2, 1, 8, 8}, 3);
  sum(net->forward(x)).backward();
  // Every gradient landed in the flat buffer, at its parameter's offset.
  std::int64_t offset = 0;
  for (const auto& [name, p] : net->parameters()) {
    const std::vector<float> g = p.grad().to_vector();
    const std::vector<float> all = flat.grads.to_vector();
    for (std::size_t i = 0; i < g.size(); ++i)
      EXPECT_EQ(g[i], all[static_cast<std::size_t>(offset) + i]) << name;
    offset += p.numel();
  }
  float norm = 0.0f;
  for (float v : flat.grads.to_vector()) norm += v * v;
  EXPECT_GT(norm, 0.0f);
}

TEST(Layers, DropoutOnlyInTrainingAndSeededPerStep) {
  Dropout d(0.5f);
  const Tensor x = Tensor::full({1000}, 1.0f);
  d.train(false);
  EXPECT_EQ(d.forward(x).to_vector(), x.to_vector());
  d.train(true);
  d.set_step_seed(7, 1);
  const std::vector<float> a = d.forward(x).to_vector();
  d.set_step_seed(7, 1);
  EXPECT_EQ(d.forward(x).to_vector(), a);
  d.set_step_seed(7, 2);
  EXPECT_NE(d.forward(x).to_vector(), a);
  EXPECT_THROW(Dropout(1.0f), InvalidArgument);
}

TEST(Layers, BatchNormRegistersBuffersAndSwitchesStatistics) {
  BatchNorm bn(3);
  EXPECT_EQ(bn.parameters().size(), 2u);
  EXPECT_EQ(bn.buffers().size(), 2u);
  const Tensor x = testing::random_tensor({4, 3, 2, 2}, 5, 0.0f, 4.0f);
  bn.train(true);
  bn.forward(x);
  EXPECT_NE(bn.running_mean.to_vector(), std::vector<float>(3, 0.0f));
  bn.train(false);
  const std::vector<float> eval1 = bn.forward(x).to_vector();
  EXPECT_EQ(bn.forward(x).to_vector(), eval1);  // eval mode does not update statistics
}

}  // namespace
}  // namespace epoch::nn
