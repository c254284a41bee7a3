// Autograd graph mechanics: accumulation, shared inputs, no-grad, freed graphs, installed
// gradient buffers.
#include "epoch/autograd/autograd.h"

#include <gtest/gtest.h>

#include "epoch/autograd/functions.h"
#include "testing/testing.h"

namespace epoch {
namespace {

TEST(Autograd, GradientOfProductAndSum) {
  Tensor a = Tensor::from_vector({3}, {1.0f, 2.0f, 3.0f}).set_requires_grad(true);
  Tensor b = Tensor::from_vector({3}, {4.0f, 5.0f, 6.0f}).set_requires_grad(true);
  sum(mul(a, b)).backward();
  EXPECT_TRUE(testing::allclose(a.grad(), b.detach()));
  EXPECT_TRUE(testing::allclose(b.grad(), a.detach()));
}

TEST(Autograd, GradientsAccumulateAcrossBackwardCalls) {
  Tensor a = Tensor::from_vector({2}, {1.0f, -2.0f}).set_requires_grad(true);
  sum(affine(a, 3.0f)).backward();
  sum(affine(a, 3.0f)).backward();
  EXPECT_TRUE(testing::allclose(a.grad(), Tensor::from_vector({2}, {6.0f, 6.0f})));
  a.zero_grad();
  EXPECT_TRUE(testing::allclose(a.grad(), Tensor::from_vector({2}, {0.0f, 0.0f})));
}

TEST(Autograd, InputUsedTwiceGetsBothContributions) {
  Tensor a = Tensor::from_vector({2}, {1.5f, -2.0f}).set_requires_grad(true);
  sum(mul(a, a)).backward();  // d/da a^2 = 2a
  EXPECT_TRUE(testing::allclose(a.grad(), Tensor::from_vector({2}, {3.0f, -4.0f})));
}

TEST(Autograd, DiamondGraphSumsBranches) {
  Tensor a = Tensor::from_vector({2}, {1.0f, 2.0f}).set_requires_grad(true);
  Tensor h = affine(a, 2.0f);
  sum(add(mul(h, h), h)).backward();  // d/da (4a^2 + 2a) = 8a + 2
  EXPECT_TRUE(testing::allclose(a.grad(), Tensor::from_vector({2}, {10.0f, 18.0f})));
}

// A leaf is named once, when its last contribution is in: b feeds only the node next to the
// root, so it is complete first; a feeds the graph's far end through two paths.
TEST(Autograd, LeafReadyNamesEachLeafOnceWhenItsGradientIsComplete) {
  Tensor a = Tensor::from_vector({2}, {1.0f, 2.0f}).set_requires_grad(true);
  Tensor b = Tensor::from_vector({2}, {3.0f, 4.0f}).set_requires_grad(true);
  Tensor h = affine(a, 2.0f);
  const Tensor loss = sum(mul(add(mul(h, h), h), b));  // (4a^2 + 2a) * b
  std::vector<std::pair<const autograd::Meta*, std::vector<float>>> ready;
  autograd::backward(loss, Tensor(), [&](const autograd::Meta& leaf) {
    ready.emplace_back(&leaf, leaf.grad.to_vector());
  });
  ASSERT_EQ(ready.size(), 2u);
  EXPECT_EQ(ready[0].first, b.autograd_meta().get());
  EXPECT_EQ(ready[1].first, a.autograd_meta().get());
  EXPECT_EQ(ready[1].second, a.grad().to_vector()) << "a was named before its gradient was final";
  EXPECT_TRUE(testing::allclose(a.grad(), Tensor::from_vector({2}, {30.0f, 72.0f})));
}

TEST(Autograd, NoGradGuardRecordsNothing) {
  Tensor a = Tensor::from_vector({2}, {1.0f, 2.0f}).set_requires_grad(true);
  Tensor y;
  {
    autograd::NoGradGuard guard;
    y = sum(mul(a, a));
  }
  EXPECT_FALSE(y.requires_grad());
  EXPECT_THROW(y.backward(), InvalidArgument);
}

TEST(Autograd, SecondBackwardThroughFreedGraphIsAClearError) {
  Tensor a = Tensor::from_vector({2}, {1.0f, 2.0f}).set_requires_grad(true);
  Tensor y = sum(mul(a, a));
  y.backward();
  EXPECT_THROW(y.backward(), InvalidArgument);
}

TEST(Autograd, InstalledGradientBufferIsAccumulatedInPlace) {
  Tensor flat = Tensor::zeros({4});
  Tensor a = Tensor::from_vector({2}, {1.0f, 2.0f}).set_requires_grad(true);
  a.set_grad(flat.narrow0(2, 2));
  sum(affine(a, 5.0f)).backward();
  EXPECT_TRUE(testing::allclose(flat, Tensor::from_vector({4}, {0.0f, 0.0f, 5.0f, 5.0f})));
}

// A training step leaves its gradient buffers stale instead of zeroing them: the first
// contribution replaces the stale values, the next adds to it, as from zeros.
TEST(Autograd, AStaleGradientBufferIsReplacedThenAddedTo) {
  const Tensor x = testing::random_tensor({3, 4}, 1);
  const Tensor w0 = testing::random_tensor({4, 4}, 2);
  const auto gradient = [&](bool stale) {
    Tensor w = w0.clone().set_requires_grad(true);
    Tensor buffer = Tensor::full({4, 4}, stale ? 1e30f : 0.0f);
    w.set_grad(buffer);
    w.autograd_meta()->grad_stale = stale;
    sum(linear(linear(x, w, Tensor()), w, Tensor())).backward();  // w contributes twice
    EXPECT_FALSE(w.autograd_meta()->grad_stale);
    return buffer.to_vector();
  };
  EXPECT_EQ(gradient(true), gradient(false));
}

// gradient_destination hands a stale buffer to the running closure once, and nothing outside
// a closure or for a buffer that is not stale.
TEST(Autograd, GradientDestinationIsTheStaleBufferOnce) {
  Tensor a = Tensor::from_vector({2}, {1.0f, 2.0f}).set_requires_grad(true);
  Tensor buffer = Tensor::full({2}, 7.0f);
  a.set_grad(buffer);
  a.autograd_meta()->grad_stale = true;
  EXPECT_FALSE(autograd::gradient_destination(0, a).defined());  // outside a closure
  Tensor y = a.detach().clone();
  int calls = 0;
  autograd::record(y, "writes_its_gradient", {a}, [&, like = a.detach()](const Tensor& dy) {
    ++calls;
    Tensor into = autograd::gradient_destination(0, like);
    EXPECT_TRUE(into.defined());
    EXPECT_FALSE(autograd::gradient_destination(0, like).defined());  // no longer stale
    into.copy_from(dy);
    return std::vector<Tensor>{Tensor()};
  });
  y.backward(Tensor::from_vector({2}, {3.0f, 4.0f}));
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(buffer.to_vector(), (std::vector<float>{3.0f, 4.0f}));
  EXPECT_FALSE(a.autograd_meta()->grad_stale);
}

TEST(Autograd, BroadcastGradientsReduceToInputShape) {
  Tensor a = testing::random_tensor({2, 3}, 1).set_requires_grad(true);
  Tensor b = testing::random_tensor({3}, 2).set_requires_grad(true);
  EXPECT_TRUE(
      testing::gradcheck([](const std::vector<Tensor>& in) { return mul(in[0], in[1]); }, {a, b}));
  Tensor c = testing::random_tensor({2, 1}, 3, 0.5f, 2.0f).set_requires_grad(true);
  EXPECT_TRUE(
      testing::gradcheck([](const std::vector<Tensor>& in) { return div(in[0], in[1]); }, {a, c}));
  EXPECT_TRUE(
      testing::gradcheck([](const std::vector<Tensor>& in) { return sub(in[0], in[1]); }, {a, b}));
}

TEST(Autograd, MeanAndAffineGradcheck) {
  Tensor a = testing::random_tensor({3, 4}, 4).set_requires_grad(true);
  EXPECT_TRUE(testing::gradcheck(
      [](const std::vector<Tensor>& in) { return mean(affine(in[0], -2.0f, 1.0f)); }, {a}));
}

}  // namespace
}  // namespace epoch
