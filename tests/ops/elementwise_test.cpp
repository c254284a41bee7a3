// Elementwise arithmetic and reductions: broadcasting values, sum_to_shape, scalar and in-place
// ops, reductions that are bitwise identical across thread counts, and rejected broadcasts.
#include "epoch/ops/elementwise.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "epoch/ops/backend.h"
#include "epoch/ops/convert.h"
#include "testing/testing.h"

namespace epoch {
namespace {

TEST(Convert, I32ToF32KeepsShapeAndValues) {
  const Tensor x = Tensor::from_ints({2, 2}, std::vector<std::int32_t>{0, 1, -3, 16777217});
  const Tensor y = ops::i32_to_f32(x);
  EXPECT_EQ(y.dtype(), DType::f32);
  EXPECT_EQ(y.shape(), x.shape());
  EXPECT_EQ(y.to_vector(), (std::vector<float>{0.0f, 1.0f, -3.0f, 16777216.0f}));
  EXPECT_THROW(ops::i32_to_f32(y), InvalidArgument);
}

TEST(Elementwise, BroadcastShape) {
  EXPECT_EQ(ops::broadcast_shape({2, 3}, {3}), (Shape{2, 3}));
  EXPECT_EQ(ops::broadcast_shape({2, 1}, {1, 3}), (Shape{2, 3}));
  EXPECT_EQ(ops::broadcast_shape({4, 1, 5}, {3, 1}), (Shape{4, 3, 5}));
  EXPECT_EQ(ops::broadcast_shape({}, {2, 2}), (Shape{2, 2}));
  EXPECT_THROW(ops::broadcast_shape({2, 3}, {4}), InvalidArgument);
  EXPECT_THROW(ops::broadcast_shape({2, 3}, {3, 3}), InvalidArgument);
}

TEST(Elementwise, BroadcastingForwardValues) {
  const Tensor a = Tensor::from_vector({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor row = Tensor::from_vector({3}, {10, 20, 30});
  const Tensor col = Tensor::from_vector({2, 1}, {2, 4});
  EXPECT_TRUE(
      testing::allclose(ops::add(a, row), Tensor::from_vector({2, 3}, {11, 22, 33, 14, 25, 36})));
  EXPECT_TRUE(
      testing::allclose(ops::sub(row, a), Tensor::from_vector({2, 3}, {9, 18, 27, 6, 15, 24})));
  EXPECT_TRUE(
      testing::allclose(ops::mul(a, col), Tensor::from_vector({2, 3}, {2, 4, 6, 16, 20, 24})));
  EXPECT_TRUE(testing::allclose(ops::div(a, col),
                                Tensor::from_vector({2, 3}, {0.5f, 1, 1.5f, 1, 1.25f, 1.5f})));
  // (2, 1) with (1, 3): both operands broadcast.
  EXPECT_TRUE(testing::allclose(ops::add(col, Tensor::from_vector({1, 3}, {1, 2, 3})),
                                Tensor::from_vector({2, 3}, {3, 4, 5, 5, 6, 7})));
  // A scalar tensor broadcasts to anything.
  EXPECT_TRUE(
      testing::allclose(ops::mul(Tensor::scalar(3.0f), col), Tensor::from_vector({2, 1}, {6, 12})));
  // Same shape (the contiguous fast path), large enough for OpenMP.
  const Tensor x = testing::random_tensor({70000}, 61), y = testing::random_tensor({70000}, 62);
  const std::vector<float> xv = x.to_vector(), yv = y.to_vector(), s = ops::add(x, y).to_vector();
  for (std::size_t i = 0; i < s.size(); ++i) ASSERT_EQ(s[i], xv[i] + yv[i]) << i;
}

TEST(Elementwise, BadBroadcastThrows) {
  const Tensor a = Tensor::zeros({2, 3});
  EXPECT_THROW(ops::add(a, Tensor::zeros({2})), InvalidArgument);
  EXPECT_THROW(ops::mul(a, Tensor::zeros({3, 2})), InvalidArgument);
  EXPECT_THROW(ops::sub(a, Tensor::zeros({2, 3}, DType::i32)), InvalidArgument);
  EXPECT_THROW(ops::div(Tensor(), a), InvalidArgument);
  Tensor y = Tensor::zeros({2, 3});
  EXPECT_THROW(ops::axpy_(y, Tensor::zeros({3})), InvalidArgument);
  EXPECT_THROW(ops::sum_to_shape(a, {4}), InvalidArgument);
  EXPECT_THROW(ops::mean(Tensor::zeros({0})), InvalidArgument);
}

TEST(Elementwise, ScalarAndInPlaceOps) {
  const Tensor a = Tensor::from_vector({3}, {1, -2, 3});
  EXPECT_TRUE(
      testing::allclose(ops::affine_scalar(a, 2.0f, 1.0f), Tensor::from_vector({3}, {3, -3, 7})));
  Tensor y = Tensor::from_vector({3}, {1, 1, 1});
  ops::axpy_(y, a, 0.5f);
  EXPECT_TRUE(testing::allclose(y, Tensor::from_vector({3}, {1.5f, 0, 2.5f})));
  ops::scale_(y, -2.0f);
  EXPECT_TRUE(testing::allclose(y, Tensor::from_vector({3}, {-3, 0, -5})));
  ops::fill_(y, 7.0f);
  EXPECT_TRUE(testing::allclose(y, Tensor::from_vector({3}, {7, 7, 7})));
  EXPECT_FLOAT_EQ(ops::sum(a).item(), 2.0f);
  EXPECT_FLOAT_EQ(ops::mean(a).item(), 2.0f / 3.0f);
}

TEST(Elementwise, SumToShapeReducesBroadcastDimensions) {
  const Tensor x = Tensor::from_vector({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_TRUE(testing::allclose(ops::sum_to_shape(x, {3}), Tensor::from_vector({3}, {5, 7, 9})));
  EXPECT_TRUE(
      testing::allclose(ops::sum_to_shape(x, {1, 3}), Tensor::from_vector({1, 3}, {5, 7, 9})));
  EXPECT_TRUE(
      testing::allclose(ops::sum_to_shape(x, {2, 1}), Tensor::from_vector({2, 1}, {6, 15})));
  EXPECT_TRUE(testing::allclose(ops::sum_to_shape(x, {}), Tensor::scalar(21.0f)));
  EXPECT_TRUE(testing::allclose(ops::sum_to_shape(x, {2, 3}), x));
  const Tensor z = Tensor::from_vector({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  EXPECT_TRUE(testing::allclose(ops::sum_to_shape(z, {2, 1, 2}),
                                Tensor::from_vector({2, 1, 2}, {4, 6, 12, 14})));
}

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(Elementwise, SumIsBitwiseIdenticalAcrossThreadCounts) {
  // Values of mixed magnitude, so a different summation order would change the float result.
  const Tensor x = ops::mul(testing::random_tensor({1 << 20}, 63, -1.0f, 1.0f),
                            testing::random_tensor({1 << 20}, 64, 0.0f, 1000.0f));
  const Tensor wide = testing::random_tensor({512, 300}, 65);
  const int saved = ops::num_threads();
  std::vector<float> results[2];
  for (int threads : {1, 2}) {
    ops::set_num_threads(threads);
    std::vector<float>& r = results[threads - 1];
    r.push_back(ops::sum(x).item());
    r.push_back(ops::mean(x).item());
    const std::vector<float> cols = ops::sum_to_shape(wide, {300}).to_vector();
    r.insert(r.end(), cols.begin(), cols.end());
  }
  ops::set_num_threads(saved);
  EXPECT_TRUE(bitwise_equal(results[0], results[1]));
  // And the value is right (the reference sum is in double).
  double expected = 0.0;
  for (float v : x.to_vector()) expected += v;
  EXPECT_NEAR(results[0][0], expected, 1e-6 * std::fabs(expected) + 1e-2);
}

}  // namespace
}  // namespace epoch
