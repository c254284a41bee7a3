// Losses: hand-computed values, stability at extreme logits, gradients through the autograd
// functions, thread-count independence of the mean, and rejected arguments.
#include "epoch/ops/loss.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "epoch/autograd/functions.h"
#include "epoch/ops/backend.h"
#include "testing/testing.h"

namespace epoch {
namespace {

Tensor ints(const Shape& shape, std::vector<std::int32_t> values) {
  return Tensor::from_ints(shape, values);
}

TEST(Loss, SoftmaxCrossEntropyOfKnownLogits) {
  const Tensor logits = Tensor::from_vector({2, 3}, {1.0f, 2.0f, 3.0f, 0.0f, 0.0f, 0.0f});
  const Tensor labels = ints({2}, {2, 0});
  const ops::SoftmaxCrossEntropyResult r = ops::softmax_cross_entropy_forward(logits, labels);
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  const double row0 = std::log(z) - 3.0, row1 = std::log(3.0);
  EXPECT_EQ(r.loss.shape(), Shape{});
  EXPECT_NEAR(r.loss.item(), (row0 + row1) / 2.0, 1e-6);
  const float third = 1.0f / 3.0f;
  EXPECT_TRUE(testing::allclose(
      r.probs,
      Tensor::from_vector(
          {2, 3}, {static_cast<float>(std::exp(1.0) / z), static_cast<float>(std::exp(2.0) / z),
                   static_cast<float>(std::exp(3.0) / z), third, third, third}),
      1e-6f));
  // dlogits = (probs - onehot) * dloss / N with dloss = 2, N = 2.
  const Tensor g = ops::softmax_cross_entropy_backward(2.0f, r.probs, labels);
  const std::vector<float> p = r.probs.to_vector();
  EXPECT_TRUE(testing::allclose(
      g, Tensor::from_vector({2, 3}, {p[0], p[1], p[2] - 1.0f, p[3] - 1.0f, p[4], p[5]}), 1e-6f));
}

TEST(Loss, SoftmaxCrossEntropyIsFiniteForHugeLogits) {
  const Tensor logits = Tensor::from_vector({2, 2}, {1000.0f, 0.0f, 0.0f, 1000.0f});
  const Tensor labels = ints({2}, {0, 0});
  const ops::SoftmaxCrossEntropyResult r = ops::softmax_cross_entropy_forward(logits, labels);
  // Row 0 is certain and right (loss 0); row 1 is certain and wrong (loss 1000).
  EXPECT_NEAR(r.loss.item(), 500.0, 1e-3);
  EXPECT_TRUE(testing::allclose(r.probs, Tensor::from_vector({2, 2}, {1, 0, 0, 1})));
}

TEST(Loss, BceWithLogitsKnownAndExtremeValues) {
  // Per element: max(x,0) - x*t + log1p(exp(-|x|)).
  const Tensor x = Tensor::from_vector({6}, {0.0f, 100.0f, -100.0f, 100.0f, -100.0f, 2.0f});
  const Tensor t = Tensor::from_vector({6}, {1.0f, 1.0f, 1.0f, 0.0f, 0.0f, 0.25f});
  const double last = 2.0 - 2.0 * 0.25 + std::log1p(std::exp(-2.0));
  const double expected = (std::log(2.0) + 0.0 + 100.0 + 100.0 + 0.0 + last) / 6.0;
  const float loss = ops::bce_with_logits_forward(x, t).item();
  ASSERT_TRUE(std::isfinite(loss));
  EXPECT_NEAR(loss, expected, 1e-5);
  // Each extreme element alone.
  EXPECT_NEAR(ops::bce_with_logits_forward(Tensor::from_vector({1}, {-100.0f}),
                                           Tensor::from_vector({1}, {1.0f}))
                  .item(),
              100.0, 1e-4);
  EXPECT_NEAR(ops::bce_with_logits_forward(Tensor::from_vector({1}, {100.0f}),
                                           Tensor::from_vector({1}, {1.0f}))
                  .item(),
              0.0, 1e-12);
  // Gradient (sigmoid(x) - t) * dloss / n, finite at the extremes.
  const Tensor g = ops::bce_with_logits_backward(6.0f, x, t);
  const float s2 = static_cast<float>(1.0 / (1.0 + std::exp(-2.0)));
  EXPECT_TRUE(testing::allclose(
      g, Tensor::from_vector({6}, {-0.5f, 0.0f, -1.0f, 1.0f, 0.0f, s2 - 0.25f}), 1e-6f));
}

TEST(Loss, MseAndL1KnownValues) {
  const Tensor x = Tensor::from_vector({2, 2}, {1.0f, 2.0f, 3.0f, 4.0f});
  const Tensor t = Tensor::from_vector({2, 2}, {1.5f, 2.0f, 1.0f, 5.0f});
  // Differences -0.5, 0, 2, -1.
  EXPECT_NEAR(ops::mse_forward(x, t).item(), (0.25 + 0 + 4 + 1) / 4.0, 1e-6);
  EXPECT_NEAR(ops::l1_forward(x, t).item(), (0.5 + 0 + 2 + 1) / 4.0, 1e-6);
  EXPECT_TRUE(testing::allclose(ops::mse_backward(2.0f, x, t),
                                Tensor::from_vector({2, 2}, {-0.5f, 0.0f, 2.0f, -1.0f})));
  // Subgradient 0 where x == target.
  EXPECT_TRUE(testing::allclose(ops::l1_backward(2.0f, x, t),
                                Tensor::from_vector({2, 2}, {-0.5f, 0.0f, 0.5f, -0.5f})));
}

TEST(Loss, Gradchecks) {
  Tensor logits = testing::random_tensor({4, 5}, 31, -3.0f, 3.0f).set_requires_grad(true);
  const Tensor labels = ints({4}, {0, 4, 2, 2});
  EXPECT_TRUE(testing::gradcheck(
      [labels](const std::vector<Tensor>& in) { return softmax_cross_entropy(in[0], labels); },
      {logits}));

  Tensor z = testing::random_tensor({3, 4}, 32, -5.0f, 5.0f).set_requires_grad(true);
  const Tensor soft = testing::random_tensor({3, 4}, 33, 0.0f, 1.0f);
  EXPECT_TRUE(testing::gradcheck(
      [soft](const std::vector<Tensor>& in) { return bce_with_logits(in[0], soft); }, {z}));

  const Tensor target = testing::random_tensor({3, 4}, 34);
  EXPECT_TRUE(testing::gradcheck(
      [target](const std::vector<Tensor>& in) { return mse_loss(in[0], target); }, {z}));
  // L1 away from its kink: x - target at least 0.05 in magnitude.
  Tensor x =
      add(target, testing::random_away_from_zero({3, 4}, 35)).detach().set_requires_grad(true);
  EXPECT_TRUE(testing::gradcheck(
      [target](const std::vector<Tensor>& in) { return l1_loss(in[0], target); }, {x}));
}

TEST(Loss, GradientsReachTheLogitsThroughAutograd) {
  Tensor logits = Tensor::from_vector({1, 2}, {0.0f, 0.0f}).set_requires_grad(true);
  softmax_cross_entropy(logits, ints({1}, {1})).backward();
  EXPECT_TRUE(testing::allclose(logits.grad(), Tensor::from_vector({1, 2}, {0.5f, -0.5f})));
}

bool bitwise_equal(float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; }

TEST(Loss, MeansDoNotDependOnTheThreadCount) {
  const Tensor x = testing::random_tensor({300000}, 36, -4.0f, 4.0f);
  const Tensor t = testing::random_tensor({300000}, 37, 0.0f, 1.0f);
  const Tensor logits = testing::random_tensor({3000, 100}, 38, -5.0f, 5.0f);
  std::vector<std::int32_t> lv(3000);
  for (std::size_t i = 0; i < lv.size(); ++i) lv[i] = static_cast<std::int32_t>((i * 7) % 100);
  const Tensor labels = ints({3000}, lv);
  const int saved = ops::num_threads();
  std::vector<float> by_threads[2];
  for (int threads : {1, 2}) {
    ops::set_num_threads(threads);
    by_threads[threads - 1] = {ops::mse_forward(x, t).item(), ops::l1_forward(x, t).item(),
                               ops::bce_with_logits_forward(x, t).item(),
                               ops::softmax_cross_entropy_forward(logits, labels).loss.item()};
  }
  ops::set_num_threads(saved);
  for (std::size_t i = 0; i < by_threads[0].size(); ++i)
    EXPECT_TRUE(bitwise_equal(by_threads[0][i], by_threads[1][i]))
        << "loss " << i << ": " << by_threads[0][i] << " vs " << by_threads[1][i];
}

TEST(Loss, BadArgumentsThrow) {
  const Tensor logits = Tensor::from_vector({2, 3}, {1, 2, 3, 4, 5, 6});
  // Wrong label dtype, length, rank.
  EXPECT_THROW(ops::softmax_cross_entropy_forward(logits, Tensor::from_vector({2}, {0, 1})),
               InvalidArgument);
  EXPECT_THROW(ops::softmax_cross_entropy_forward(logits, ints({3}, {0, 1, 2})), InvalidArgument);
  EXPECT_THROW(ops::softmax_cross_entropy_forward(logits, ints({2, 1}, {0, 1})), InvalidArgument);
  EXPECT_THROW(ops::softmax_cross_entropy_forward(Tensor::zeros({6}), ints({2}, {0, 1})),
               InvalidArgument);
  // Labels outside [0, K), named in the message.
  for (std::int32_t bad : {3, -1}) {
    try {
      ops::softmax_cross_entropy_forward(logits, ints({2}, {0, bad}));
      ADD_FAILURE() << "label " << bad << " was accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("label " + std::to_string(bad)), std::string::npos)
          << e.what();
    }
  }
  EXPECT_THROW(ops::softmax_cross_entropy_backward(1.0f, logits, ints({2}, {0, 7})),
               InvalidArgument);
  // Shape mismatches and empty inputs.
  const Tensor a = Tensor::zeros({2, 3}), b = Tensor::zeros({3, 2});
  EXPECT_THROW(ops::bce_with_logits_forward(a, b), InvalidArgument);
  EXPECT_THROW(ops::bce_with_logits_backward(1.0f, a, b), InvalidArgument);
  EXPECT_THROW(ops::mse_forward(a, b), InvalidArgument);
  EXPECT_THROW(ops::mse_backward(1.0f, a, b), InvalidArgument);
  EXPECT_THROW(ops::l1_forward(a, b), InvalidArgument);
  EXPECT_THROW(ops::l1_backward(1.0f, a, b), InvalidArgument);
  EXPECT_THROW(ops::mse_forward(Tensor::zeros({0}), Tensor::zeros({0})), InvalidArgument);
  EXPECT_THROW(ops::mse_forward(a, ints({2, 3}, {0, 0, 0, 0, 0, 0})), InvalidArgument);
}

}  // namespace
}  // namespace epoch
