// Activations and softmax: hand-computed values, stability at extreme inputs, gradient checks
// through the autograd functions, and rejected arguments.
#include "epoch/ops/activation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "epoch/autograd/functions.h"
#include "epoch/ops/backend.h"
#include "testing/testing.h"

namespace epoch {
namespace {

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

TEST(Activation, ReluValuesAndBackward) {
  const Tensor x = Tensor::from_vector({2, 3}, {-2.0f, -0.5f, 0.0f, 0.25f, 1.0f, 3.0f});
  EXPECT_TRUE(
      testing::allclose(ops::relu_forward(x), Tensor::from_vector({2, 3}, {0, 0, 0, 0.25f, 1, 3})));
  const Tensor dy = Tensor::from_vector({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_TRUE(testing::allclose(ops::relu_backward(dy, x),
                                Tensor::from_vector({2, 3}, {0, 0, 0, 4, 5, 6})));
}

TEST(Activation, SigmoidValuesAreStableAtExtremes) {
  const Tensor x = Tensor::from_vector({6}, {-100.0f, -5.0f, 0.0f, 0.5f, 5.0f, 100.0f});
  ops::CpuKernelsGuard reference(ops::CpuKernels::reference);  // the fast path flushes denormals
  const std::vector<float> y = ops::sigmoid_forward(x).to_vector();
  const std::vector<float> xv = x.to_vector();
  for (std::size_t i = 0; i < y.size(); ++i) {
    ASSERT_TRUE(std::isfinite(y[i])) << "x = " << xv[i];
    const double expected = 1.0 / (1.0 + std::exp(-static_cast<double>(xv[i])));
    EXPECT_NEAR(y[i], expected, 1e-6 * std::max(expected, 1e-30)) << "x = " << xv[i];
  }
  EXPECT_EQ(y[2], 0.5f);
  EXPECT_EQ(y[5], 1.0f);
  EXPECT_GT(y[0], 0.0f);  // exp(-100) ~ 3.7e-44 is a float denormal, not 0 or NaN
  EXPECT_LT(y[0], 1e-40f);
}

TEST(Activation, SigmoidMatchesFormulaOnALargeTensor) {
  // Large enough to take the OpenMP path.
  const Tensor x = testing::random_tensor({100000}, 11, -20.0f, 20.0f);
  const std::vector<float> xv = x.to_vector(), y = ops::sigmoid_forward(x).to_vector();
  for (std::size_t i = 0; i < y.size(); ++i)
    ASSERT_NEAR(y[i], 1.0 / (1.0 + std::exp(-static_cast<double>(xv[i]))), 3e-7) << i;
}

TEST(Activation, SigmoidAndTanhBackwardUseTheOutput) {
  const Tensor y = Tensor::from_vector({3}, {0.25f, 0.5f, -0.5f});
  const Tensor dy = Tensor::from_vector({3}, {2.0f, 1.0f, 4.0f});
  EXPECT_TRUE(testing::allclose(ops::sigmoid_backward(dy, y),
                                Tensor::from_vector({3}, {0.375f, 0.25f, -3.0f})));
  EXPECT_TRUE(testing::allclose(ops::tanh_backward(dy, y),
                                Tensor::from_vector({3}, {1.875f, 0.75f, 3.0f})));
}

TEST(Activation, TanhValues) {
  const Tensor x = Tensor::from_vector({4}, {-50.0f, -0.5f, 0.0f, 1.0f});
  EXPECT_TRUE(testing::allclose(
      ops::tanh_forward(x), Tensor::from_vector({4}, {-1.0f, std::tanh(-0.5f), 0.0f, 0.76159416f}),
      1e-6f));
}

TEST(Activation, HardSigmoidValuesAndBackward) {
  const Tensor x = Tensor::from_vector({5}, {-3.0f, -1.0f, 0.0f, 1.0f, 3.0f});
  EXPECT_TRUE(testing::allclose(ops::hard_sigmoid_forward(x),
                                Tensor::from_vector({5}, {0.0f, 0.3f, 0.5f, 0.7f, 1.0f})));
  EXPECT_TRUE(testing::allclose(ops::hard_sigmoid_forward(x, 0.5f, 0.0f),
                                Tensor::from_vector({5}, {0.0f, 0.0f, 0.0f, 0.5f, 1.0f})));
  const Tensor dy = Tensor::full({5}, 2.0f);
  EXPECT_TRUE(testing::allclose(ops::hard_sigmoid_backward(dy, x),
                                Tensor::from_vector({5}, {0.0f, 0.4f, 0.4f, 0.4f, 0.0f})));
}

TEST(Activation, ClipValuesAndBackward) {
  const Tensor x = Tensor::from_vector({5}, {-2.0f, -0.5f, 0.1f, 0.9f, 4.0f});
  EXPECT_TRUE(testing::allclose(ops::clip_forward(x, -1.0f, 0.5f),
                                Tensor::from_vector({5}, {-1.0f, -0.5f, 0.1f, 0.5f, 0.5f})));
  const Tensor dy = Tensor::from_vector({5}, {1, 2, 3, 4, 5});
  EXPECT_TRUE(testing::allclose(ops::clip_backward(dy, x, -1.0f, 0.5f),
                                Tensor::from_vector({5}, {0, 2, 3, 0, 0})));
}

TEST(Activation, SoftmaxKnownValuesAndHugeLogits) {
  const Tensor x = Tensor::from_vector(
      {3, 3}, {1.0f, 2.0f, 3.0f, 1000.0f, 1000.0f, 1000.0f, 1000.0f, 0.0f, -1000.0f});
  const Tensor y = ops::softmax_forward(x);
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  const float third = 1.0f / 3.0f;
  EXPECT_TRUE(testing::allclose(
      y,
      Tensor::from_vector(
          {3, 3}, {static_cast<float>(std::exp(1.0) / z), static_cast<float>(std::exp(2.0) / z),
                   static_cast<float>(std::exp(3.0) / z), third, third, third, 1.0f, 0.0f, 0.0f}),
      1e-6f));
  const std::vector<float> v = y.to_vector();
  for (int row = 0; row < 3; ++row) {
    double s = 0.0;
    for (int k = 0; k < 3; ++k) {
      ASSERT_TRUE(std::isfinite(v[row * 3 + k]));
      s += v[row * 3 + k];
    }
    EXPECT_NEAR(s, 1.0, 1e-6);
  }
}

TEST(Activation, SoftmaxRowsSumToOneOnALargeBatch) {
  const Tensor x = testing::random_tensor({512, 100}, 12, -30.0f, 30.0f);
  const std::vector<float> v = ops::softmax_forward(x).to_vector();
  for (int row = 0; row < 512; ++row) {
    double s = 0.0;
    for (int k = 0; k < 100; ++k) s += v[row * 100 + k];
    ASSERT_NEAR(s, 1.0, 1e-5) << "row " << row;
  }
}

TEST(Activation, Gradchecks) {
  Tensor x = testing::random_away_from_zero({3, 5}, 21, 0.05f, 2.0f).set_requires_grad(true);
  EXPECT_TRUE(testing::gradcheck([](const std::vector<Tensor>& in) { return relu(in[0]); }, {x}));
  Tensor s = testing::random_tensor({3, 5}, 22, -4.0f, 4.0f).set_requires_grad(true);
  EXPECT_TRUE(
      testing::gradcheck([](const std::vector<Tensor>& in) { return sigmoid(in[0]); }, {s}));
  EXPECT_TRUE(testing::gradcheck([](const std::vector<Tensor>& in) { return tanh(in[0]); }, {s}));
}

TEST(Activation, GradchecksAwayFromKinks) {
  // hard_sigmoid kinks at x = -2.5 and 2.5; clip(-0.5, 0.5) at x = +-0.5. Values on both sides.
  Tensor h = Tensor::from_vector({2, 4}, {-4.0f, -2.2f, -1.0f, -0.1f, 0.3f, 1.7f, 2.8f, 5.0f})
                 .set_requires_grad(true);
  EXPECT_TRUE(
      testing::gradcheck([](const std::vector<Tensor>& in) { return hard_sigmoid(in[0]); }, {h}));
  EXPECT_TRUE(testing::gradcheck(
      [](const std::vector<Tensor>& in) { return hard_sigmoid(in[0], 0.5f, 0.25f); }, {h}));
  Tensor c = Tensor::from_vector({2, 4}, {-2.0f, -0.7f, -0.4f, -0.1f, 0.2f, 0.45f, 0.6f, 3.0f})
                 .set_requires_grad(true);
  EXPECT_TRUE(testing::gradcheck(
      [](const std::vector<Tensor>& in) { return clip(in[0], -0.5f, 0.5f); }, {c}));
}

TEST(Activation, GradientsAccumulateAndStayFiniteWhenSaturated) {
  Tensor x = Tensor::from_vector({4}, {-100.0f, -1.0f, 2.0f, 100.0f}).set_requires_grad(true);
  sum(sigmoid(x)).backward();
  const std::vector<float> once = x.grad().to_vector();
  sum(sigmoid(x)).backward();
  const std::vector<float> twice = x.grad().to_vector();
  for (std::size_t i = 0; i < once.size(); ++i) {
    ASSERT_TRUE(std::isfinite(once[i]));
    EXPECT_FLOAT_EQ(twice[i], 2.0f * once[i]);
  }
  EXPECT_EQ(once[3], 0.0f);  // sigmoid(100) is exactly 1 in float
  EXPECT_NEAR(once[1], std::exp(-1.0) / std::pow(1.0 + std::exp(-1.0), 2.0), 1e-6);
  x.zero_grad();
  sum(relu(x)).backward();
  EXPECT_TRUE(testing::allclose(x.grad(), Tensor::from_vector({4}, {0, 0, 1, 1})));
}

TEST(Activation, BadArgumentsThrow) {
  const Tensor x = Tensor::from_vector({2, 2}, {1, 2, 3, 4});
  const Tensor labels = Tensor::from_ints({2}, std::vector<std::int32_t>{0, 1});
  EXPECT_THROW(ops::relu_forward(labels), InvalidArgument);
  EXPECT_THROW(ops::relu_forward(Tensor()), InvalidArgument);
  EXPECT_THROW(ops::relu_backward(Tensor::zeros({4}), x), InvalidArgument);
  EXPECT_THROW(ops::sigmoid_backward(Tensor::zeros({2, 3}), x), InvalidArgument);
  EXPECT_THROW(ops::tanh_backward(x, Tensor::zeros({3, 2})), InvalidArgument);
  EXPECT_THROW(ops::clip_forward(x, 1.0f, -1.0f), InvalidArgument);
  EXPECT_THROW(ops::clip_backward(Tensor::zeros({1}), x, 0.0f, 1.0f), InvalidArgument);
  EXPECT_THROW(ops::hard_sigmoid_backward(Tensor::zeros({2}), x), InvalidArgument);
  EXPECT_THROW(ops::softmax_forward(Tensor::zeros({4})), InvalidArgument);
  EXPECT_THROW(ops::softmax_forward(Tensor::zeros({2, 0})), InvalidArgument);
  EXPECT_THROW(ops::softmax_forward(Tensor::zeros({2, 2, 2})), InvalidArgument);
}

}  // namespace
}  // namespace epoch
