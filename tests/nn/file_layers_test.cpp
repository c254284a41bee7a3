// The layers model files bring (ZeroPad2d, GlobalMaxPool2d, Rescale, Identity, leaky ReLU, a
// hard sigmoid of any slope, ELU/SELU, swish, ReLU6, Caffe's within-channel LRN): each against
// values worked by hand and its numerical gradient.
#include <gtest/gtest.h>

#include <cmath>

#include "epoch/autograd/autograd.h"
#include "epoch/autograd/functions.h"
#include "epoch/nn/layers.h"
#include "testing/testing.h"

namespace epoch::nn {
namespace {

std::vector<float> values(const Tensor& t) {
  const Tensor c = t.contiguous();
  return {c.f32(), c.f32() + c.numel()};
}

TEST(FileLayers, ZeroPadPutsZerosOnEachSide) {
  ZeroPad2d pad(1, 2, 0, 1);
  const Tensor x = Tensor::from_vector({1, 1, 2, 2}, {1, 2, 3, 4});
  const Tensor y = pad.forward(x);
  ASSERT_EQ(y.shape(), (Shape{1, 1, 5, 3}));
  EXPECT_EQ(values(y), (std::vector<float>{0, 0, 0, 1, 2, 0, 3, 4, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(pad.output_shape({3, 2, 2}), (Shape{3, 5, 3}));
  Tensor a = testing::random_tensor({2, 3, 4, 3}, 1).set_requires_grad(true);
  EXPECT_TRUE(testing::gradcheck([&](const std::vector<Tensor>& in) { return pad.forward(in[0]); },
                                 {a}));
}

// Caffe's WITHIN_CHANNEL LRN: y = x (1 + alpha * mean of x^2 over the size x size window, zeros
// outside counted)^-beta, against a double-precision loop; and the pow it is built on.
TEST(FileLayers, LrnWithinChannelAsCaffe) {
  const ops::LrnParams p{3, 0.5f, 0.75f, 1.0f};
  Lrn lrn(p, true);
  const Tensor x = testing::random_tensor({2, 2, 4, 5}, 3, -2.0f, 2.0f);
  const std::vector<float> xv = values(x), y = values(lrn.forward(x));
  for (int n = 0; n < 2 * 2; ++n)
    for (int h = 0; h < 4; ++h)
      for (int w = 0; w < 5; ++w) {
        double sq = 0.0;
        for (int dh = -1; dh <= 1; ++dh)
          for (int dw = -1; dw <= 1; ++dw)
            if (h + dh >= 0 && h + dh < 4 && w + dw >= 0 && w + dw < 5) {
              const double v = xv[static_cast<std::size_t>((n * 4 + h + dh) * 5 + w + dw)];
              sq += v * v;
            }
        const std::size_t i = static_cast<std::size_t>((n * 4 + h) * 5 + w);
        EXPECT_NEAR(y[i], xv[i] * std::pow(1.0 + 0.5 * sq / 9.0, -0.75), 1e-5) << i;
      }
  Tensor a = testing::random_tensor({1, 2, 3, 4}, 4).set_requires_grad(true);
  EXPECT_TRUE(testing::gradcheck([&](const std::vector<Tensor>& in) { return lrn.forward(in[0]); },
                                 {a}));
  Tensor b = testing::random_tensor({7}, 5, 0.5f, 3.0f).set_requires_grad(true);
  EXPECT_NEAR(values(pow(b, -0.75f))[0], std::pow(values(b)[0], -0.75f), 1e-6f);
  EXPECT_TRUE(testing::gradcheck([](const std::vector<Tensor>& in) { return pow(in[0], 2.5f); },
                                 {b}));
}

TEST(FileLayers, GlobalMaxPoolTakesEachChannelsMaximum) {
  GlobalMaxPool2d pool;
  const Tensor x = Tensor::from_vector({1, 2, 2, 2}, {1, 5, -2, 3, -1, -4, -3, -2});
  EXPECT_EQ(values(pool.forward(x)), (std::vector<float>{5, -1}));
  EXPECT_EQ(pool.output_shape({7, 3, 4}), (Shape{7}));
  Tensor a = testing::random_tensor({2, 3, 3, 4}, 2).set_requires_grad(true);  // distinct values
  EXPECT_TRUE(testing::gradcheck(
      [&](const std::vector<Tensor>& in) { return pool.forward(in[0]); }, {a}));
}

TEST(FileLayers, ActivationsOfKerasFiles) {
  const Tensor x = Tensor::from_vector({1, 4}, {-4, -1, 0.5f, 4});
  EXPECT_EQ(values(Act::leaky_relu(0.1f)->forward(x)),
            (std::vector<float>{-0.4f, -0.1f, 0.5f, 4.0f}));
  // Keras 3's hard_sigmoid: relu6(x + 3) / 6.
  const std::vector<float> hs = values(Act::hard_sigmoid(1.0f / 6.0f, 0.5f)->forward(x));
  EXPECT_FLOAT_EQ(hs[0], 0.0f);
  EXPECT_FLOAT_EQ(hs[1], 2.0f / 6.0f);
  EXPECT_FLOAT_EQ(hs[2], 3.5f / 6.0f);
  EXPECT_FLOAT_EQ(hs[3], 1.0f);
  EXPECT_EQ(values(Act(Activation::linear).forward(x)), values(x));
  EXPECT_EQ(values(Rescale(0.5f, 1.0f).forward(x)), (std::vector<float>{-1, 0.5f, 1.25f, 3}));
  EXPECT_EQ(values(Identity("Rescaling").forward(x)), values(x));
  Tensor a = testing::random_away_from_zero({3, 5}, 3).set_requires_grad(true);
  EXPECT_TRUE(testing::gradcheck(
      [](const std::vector<Tensor>& in) { return Act::leaky_relu(0.2f)->forward(in[0]); }, {a}));
  EXPECT_TRUE(testing::gradcheck(
      [](const std::vector<Tensor>& in) { return Rescale(-2.0f, 0.5f).forward(in[0]); }, {a}));
  // ELU (and SELU), swish, ReLU6 against std::exp and by hand.
  const Tensor y = Act::elu(1.5f, 2.0f)->forward(x);
  const std::vector<float> e = values(y);
  EXPECT_NEAR(e[0], 2.0f * 1.5f * (std::exp(-4.0f) - 1.0f), 1e-6f);
  EXPECT_NEAR(e[1], 2.0f * 1.5f * (std::exp(-1.0f) - 1.0f), 1e-6f);
  EXPECT_FLOAT_EQ(e[2], 1.0f);
  EXPECT_FLOAT_EQ(e[3], 8.0f);
  EXPECT_NEAR(values(Act(Activation::swish).forward(x))[1], -1.0f / (1.0f + std::exp(1.0f)), 1e-6f);
  EXPECT_EQ(values(Act::relu_max(6.0f)->forward(Tensor::from_vector({1, 3}, {-1, 3, 9}))),
            (std::vector<float>{0, 3, 6}));
  EXPECT_TRUE(testing::gradcheck(
      [](const std::vector<Tensor>& in) { return Act::elu(1.0f, 1.0507f)->forward(in[0]); }, {a}));
  EXPECT_TRUE(testing::gradcheck(
      [](const std::vector<Tensor>& in) { return Act(Activation::swish).forward(in[0]); }, {a}));
  Tensor b = testing::random_tensor({3, 5}, 4, -2.5f, 2.5f).set_requires_grad(true);
  EXPECT_TRUE(testing::gradcheck(
      [](const std::vector<Tensor>& in) {
        return Act::hard_sigmoid(1.0f / 6.0f, 0.5f)->forward(in[0]);
      },
      {b}));
}

}  // namespace
}  // namespace epoch::nn
