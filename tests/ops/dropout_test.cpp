// Dropout: the drop rate, the mask as a pure function of (seed, key, index), the preserved
// expectation, the identity outside training, gradients, and rejected arguments.
#include "epoch/ops/dropout.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "epoch/autograd/functions.h"
#include "epoch/ops/backend.h"
#include "epoch/tensor/random.h"
#include "testing/testing.h"

namespace epoch {
namespace {

constexpr std::int64_t kN = 100000;

TEST(Dropout, RateIsCloseToP) {
  const Tensor x = Tensor::full({kN}, 1.0f);
  for (float p : {0.1f, 0.5f, 0.8f}) {
    const std::vector<float> m = ops::dropout_forward(x, p, 1, 2).mask.to_vector();
    std::int64_t dropped = 0;
    for (float v : m) {
      ASSERT_TRUE(v == 0.0f || v == 1.0f / (1.0f - p)) << v;
      dropped += v == 0.0f;
    }
    // The standard deviation of the rate is at most 0.0016 here; 0.01 is over 6 of them.
    EXPECT_NEAR(static_cast<double>(dropped) / kN, p, 0.01) << "p = " << p;
  }
}

TEST(Dropout, MaskIsAPureFunctionOfSeedKeyAndIndex) {
  const Tensor x = testing::random_tensor({kN}, 51);
  const float p = 0.3f;
  const ops::DropoutResult a = ops::dropout_forward(x, p, 7, 100);
  const ops::DropoutResult b = ops::dropout_forward(x, p, 7, 100);
  EXPECT_EQ(a.mask.to_vector(), b.mask.to_vector());
  EXPECT_EQ(a.y.to_vector(), b.y.to_vector());
  EXPECT_NE(a.mask.to_vector(), ops::dropout_forward(x, p, 7, 101).mask.to_vector());
  EXPECT_NE(a.mask.to_vector(), ops::dropout_forward(x, p, 8, 100).mask.to_vector());
  // The documented rule: keep element i iff (bits_at(i) >> 8) * 2^-24 >= p.
  const RandomStream stream(7, 100);
  const std::vector<float> m = a.mask.to_vector();
  for (std::int64_t i = 0; i < 1000; ++i) {
    const float u =
        static_cast<float>(stream.bits_at(static_cast<std::uint64_t>(i)) >> 8) / 16777216.0f;
    ASSERT_EQ(m[static_cast<std::size_t>(i)] != 0.0f, u >= p) << "element " << i;
  }
  // A tensor's mask is the prefix of a longer tensor's mask under the same (seed, key).
  const std::vector<float> small =
      ops::dropout_forward(Tensor::full({100}, 1.0f), p, 7, 100).mask.to_vector();
  EXPECT_EQ(small, std::vector<float>(m.begin(), m.begin() + 100));
}

// Every element, at sizes around the kernel's groups of 4, batches of 64 and chunks of 1024, and
// above its parallel threshold.
TEST(Dropout, EveryElementFollowsTheDocumentedRule) {
  const float p = 0.45f;
  const RandomStream stream(3, 9);
  for (std::int64_t n : {1, 3, 4, 5, 63, 64, 65, 1023, 1024, 1025, 5000, 70001}) {
    const Tensor x = testing::random_tensor({n}, 60);
    const ops::DropoutResult r = ops::dropout_forward(x, p, 3, 9);
    const std::vector<float> xs = x.to_vector(), ys = r.y.to_vector(), m = r.mask.to_vector();
    for (std::int64_t i = 0; i < n; ++i) {
      const auto at = static_cast<std::size_t>(i);
      const float u =
          static_cast<float>(stream.bits_at(static_cast<std::uint64_t>(i)) >> 8) / 16777216.0f;
      const float keep = u >= p ? 1.0f / (1.0f - p) : 0.0f;
      ASSERT_EQ(m[at], keep) << "n " << n << " element " << i;
      ASSERT_EQ(ys[at], xs[at] * keep) << "n " << n << " element " << i;
    }
  }
}

TEST(Dropout, MaskDoesNotDependOnTheThreadCount) {
  const Tensor x = testing::random_tensor({kN}, 52);
  const int saved = ops::num_threads();
  ops::set_num_threads(1);
  const std::vector<float> one = ops::dropout_forward(x, 0.5f, 3, 4).y.to_vector();
  ops::set_num_threads(2);
  const std::vector<float> two = ops::dropout_forward(x, 0.5f, 3, 4).y.to_vector();
  ops::set_num_threads(saved);
  EXPECT_EQ(one, two);
}

TEST(Dropout, ExpectationIsPreserved) {
  const Tensor x = Tensor::full({kN}, 2.0f);
  for (float p : {0.2f, 0.5f}) {
    const std::vector<float> y = ops::dropout_forward(x, p, 9, 1).y.to_vector();
    double s = 0.0;
    for (float v : y) s += v;
    // Relative standard deviation sqrt(p / ((1 - p) n)) is at most 0.0032 here.
    EXPECT_NEAR(s / kN, 2.0, 2.0 * 0.02) << "p = " << p;
  }
}

TEST(Dropout, IdentityOutsideTrainingAndAtPZero) {
  const Tensor x = testing::random_tensor({3, 4}, 53);
  EXPECT_EQ(dropout(x, 0.5f, false, 1, 2).to_vector(), x.to_vector());
  EXPECT_EQ(dropout(x, 0.0f, true, 1, 2).to_vector(), x.to_vector());
  // The op itself at p = 0 keeps everything with scale 1.
  const ops::DropoutResult r = ops::dropout_forward(x, 0.0f, 1, 2);
  EXPECT_EQ(r.y.to_vector(), x.to_vector());
  EXPECT_EQ(r.mask.to_vector(), std::vector<float>(12, 1.0f));
}

TEST(Dropout, BackwardAndGradcheck) {
  const Tensor dy = Tensor::from_vector({4}, {1, 2, 3, 4});
  const Tensor mask = Tensor::from_vector({4}, {0.0f, 2.0f, 2.0f, 0.0f});
  EXPECT_TRUE(
      testing::allclose(ops::dropout_backward(dy, mask), Tensor::from_vector({4}, {0, 4, 6, 0})));
  Tensor x = testing::random_tensor({4, 8}, 54).set_requires_grad(true);
  EXPECT_TRUE(testing::gradcheck(
      [](const std::vector<Tensor>& in) { return dropout(in[0], 0.4f, true, 11, 12); }, {x}));
  // Gradient is exactly the mask.
  x.set_grad(Tensor());
  sum(dropout(x, 0.4f, true, 11, 12)).backward();
  EXPECT_EQ(x.grad().to_vector(), ops::dropout_forward(x.detach(), 0.4f, 11, 12).mask.to_vector());
}

TEST(Dropout, BadArgumentsThrow) {
  const Tensor x = Tensor::zeros({4});
  EXPECT_THROW(ops::dropout_forward(x, 1.0f, 1, 2), InvalidArgument);
  EXPECT_THROW(ops::dropout_forward(x, -0.1f, 1, 2), InvalidArgument);
  EXPECT_THROW(ops::dropout_forward(x, std::nanf(""), 1, 2), InvalidArgument);
  EXPECT_THROW(ops::dropout_forward(Tensor::zeros({4}, DType::i32), 0.5f, 1, 2), InvalidArgument);
  EXPECT_THROW(ops::dropout_backward(x, Tensor::zeros({5})), InvalidArgument);
  EXPECT_THROW(dropout(x, 1.5f, true, 1, 2), InvalidArgument);
  EXPECT_THROW(dropout(x, -0.5f, false, 1, 2), InvalidArgument);
}

}  // namespace
}  // namespace epoch
