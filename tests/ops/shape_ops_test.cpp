// Concat, slice and 2x upsampling: hand-computed values, gradients through the autograd
// functions, and rejected arguments.
#include "epoch/ops/shape_ops.h"

#include <gtest/gtest.h>

#include <vector>

#include "epoch/autograd/functions.h"
#include "testing/testing.h"

namespace epoch {
namespace {

TEST(ShapeOps, ConcatAlongEachDimension) {
  const Tensor a = Tensor::from_vector({2, 2}, {1, 2, 3, 4});
  const Tensor b = Tensor::from_vector({2, 1}, {5, 6});
  const Tensor c = Tensor::from_vector({1, 2}, {7, 8});
  EXPECT_TRUE(
      testing::allclose(ops::concat({a, b}, 1), Tensor::from_vector({2, 3}, {1, 2, 5, 3, 4, 6})));
  EXPECT_TRUE(
      testing::allclose(ops::concat({a, b}, -1), Tensor::from_vector({2, 3}, {1, 2, 5, 3, 4, 6})));
  EXPECT_TRUE(testing::allclose(ops::concat({a, c, a}, 0),
                                Tensor::from_vector({5, 2}, {1, 2, 3, 4, 7, 8, 1, 2, 3, 4})));
  EXPECT_TRUE(testing::allclose(ops::concat({a}, 0), a));
}

TEST(ShapeOps, ConcatChannelsOfImagesAndOtherDtypes) {
  // (N=2, C, H=1, W=2): channels of each image stay together.
  const Tensor a = Tensor::from_vector({2, 1, 1, 2}, {1, 2, 3, 4});
  const Tensor b = Tensor::from_vector({2, 2, 1, 2}, {10, 11, 12, 13, 14, 15, 16, 17});
  EXPECT_TRUE(testing::allclose(
      ops::concat({a, b}, 1),
      Tensor::from_vector({2, 3, 1, 2}, {1, 2, 10, 11, 12, 13, 3, 4, 14, 15, 16, 17})));
  const Tensor i = Tensor::from_ints({2}, std::vector<std::int32_t>{1, 2});
  const Tensor j = Tensor::from_ints({1}, std::vector<std::int32_t>{3});
  const Tensor ij = ops::concat({i, j}, 0);
  EXPECT_EQ(ij.dtype(), DType::i32);
  EXPECT_EQ(ij.to_vector(), (std::vector<float>{1, 2, 3}));
}

TEST(ShapeOps, SliceAndItsBackward) {
  const Tensor x = Tensor::from_vector({2, 4}, {0, 1, 2, 3, 4, 5, 6, 7});
  EXPECT_TRUE(testing::allclose(ops::slice(x, 1, 1, 2), Tensor::from_vector({2, 2}, {1, 2, 5, 6})));
  EXPECT_TRUE(testing::allclose(ops::slice(x, -1, 3, 1), Tensor::from_vector({2, 1}, {3, 7})));
  EXPECT_TRUE(testing::allclose(ops::slice(x, 0, 1, 1), Tensor::from_vector({1, 4}, {4, 5, 6, 7})));
  EXPECT_EQ(ops::slice(x, 1, 4, 0).shape(), (Shape{2, 0}));
  const Tensor dy = Tensor::from_vector({2, 2}, {1, 2, 3, 4});
  EXPECT_TRUE(testing::allclose(ops::slice_backward(dy, {2, 4}, 1, 2),
                                Tensor::from_vector({2, 4}, {0, 0, 1, 2, 0, 0, 3, 4})));
  EXPECT_TRUE(testing::allclose(ops::slice_backward(dy, {3, 2}, 0, 1),
                                Tensor::from_vector({3, 2}, {0, 0, 1, 2, 3, 4})));
}

TEST(ShapeOps, SliceOfALargeTensorTakesEveryRow) {
  // Enough bytes to take the parallel copy path.
  const Tensor x = testing::random_tensor({64, 3, 64, 64}, 41);
  const Tensor y = ops::slice(x, 1, 1, 2);
  const std::vector<float> xv = x.to_vector(), yv = y.to_vector();
  constexpr std::int64_t kPlane = 64 * 64;
  for (std::int64_t n = 0; n < 64; ++n)
    for (std::int64_t k = 0; k < 2 * kPlane; ++k)
      ASSERT_EQ(yv[n * 2 * kPlane + k], xv[(n * 3 + 1) * kPlane + k]) << n << " " << k;
}

TEST(ShapeOps, UpsampleNearest2xValuesAndBackward) {
  const Tensor x = Tensor::from_vector({1, 1, 2, 2}, {1, 2, 3, 4});
  EXPECT_TRUE(testing::allclose(
      ops::upsample_nearest2x_forward(x),
      Tensor::from_vector({1, 1, 4, 4}, {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4})));
  const Tensor dy = Tensor::from_vector({1, 2, 2, 2}, {1, 2, 3, 4, 10, 20, 30, 40});
  EXPECT_TRUE(testing::allclose(ops::upsample_nearest2x_backward(dy),
                                Tensor::from_vector({1, 2, 1, 1}, {10, 100})));
}

TEST(ShapeOps, Gradchecks) {
  Tensor a = testing::random_tensor({2, 3, 2}, 42).set_requires_grad(true);
  Tensor b = testing::random_tensor({2, 1, 2}, 43).set_requires_grad(true);
  EXPECT_TRUE(testing::gradcheck(
      [](const std::vector<Tensor>& in) {
        return concat({in[0], in[1]}, 1);
      },
      {a, b}));
  EXPECT_TRUE(testing::gradcheck(
      [](const std::vector<Tensor>& in) {
        return concat({in[1], in[0], in[1]}, -2);
      },
      {a, b}));
  EXPECT_TRUE(
      testing::gradcheck([](const std::vector<Tensor>& in) { return slice(in[0], 1, 1, 2); }, {a}));
  EXPECT_TRUE(testing::gradcheck(
      [](const std::vector<Tensor>& in) { return slice(in[0], -1, 1, 1); }, {a}));
  Tensor x = testing::random_tensor({2, 2, 3, 3}, 44).set_requires_grad(true);
  EXPECT_TRUE(testing::gradcheck(
      [](const std::vector<Tensor>& in) { return upsample_nearest2x(in[0]); }, {x}));
}

TEST(ShapeOps, ConcatGradientSkipsInputsThatNeedNone) {
  Tensor a = Tensor::from_vector({1, 2}, {1, 2}).set_requires_grad(true);
  const Tensor b = Tensor::from_vector({1, 1}, {3});
  sum(mul(concat({b, a}, 1), Tensor::from_vector({1, 3}, {5, 6, 7}))).backward();
  EXPECT_TRUE(testing::allclose(a.grad(), Tensor::from_vector({1, 2}, {6, 7})));
}

TEST(ShapeOps, BadArgumentsThrow) {
  const Tensor a = Tensor::zeros({2, 3}), b = Tensor::zeros({2, 4});
  EXPECT_THROW(ops::concat({}, 0), InvalidArgument);
  EXPECT_THROW(ops::concat({a, b}, 2), InvalidArgument);
  EXPECT_THROW(ops::concat({a, b}, -3), InvalidArgument);
  EXPECT_THROW(ops::concat({a, b}, 0), InvalidArgument);  // shapes differ outside dim
  EXPECT_THROW(ops::concat({a, Tensor::zeros({2, 3, 1})}, 1), InvalidArgument);
  EXPECT_THROW(ops::concat({a, Tensor::zeros({2, 3}, DType::i32)}, 0), InvalidArgument);
  EXPECT_THROW(ops::concat({a, Tensor()}, 0), InvalidArgument);
  EXPECT_THROW(ops::concat({Tensor::scalar(1.0f), Tensor::scalar(2.0f)}, 0), InvalidArgument);
  EXPECT_THROW(ops::slice(a, 1, 2, 2), InvalidArgument);
  EXPECT_THROW(ops::slice(a, 1, -1, 1), InvalidArgument);
  EXPECT_THROW(ops::slice(a, 2, 0, 1), InvalidArgument);
  EXPECT_THROW(ops::slice_backward(Tensor::zeros({2, 2}), {2, 3}, 1, 2), InvalidArgument);
  EXPECT_THROW(ops::slice_backward(Tensor::zeros({1, 2}), {2, 3}, 0, 0), InvalidArgument);
  EXPECT_THROW(ops::slice_backward(Tensor::zeros({2}), {2, 3}, 1, 0), InvalidArgument);
  EXPECT_THROW(ops::upsample_nearest2x_forward(a), InvalidArgument);
  EXPECT_THROW(ops::upsample_nearest2x_backward(Tensor::zeros({1, 1, 3, 4})), InvalidArgument);
  EXPECT_THROW(ops::upsample_nearest2x_backward(Tensor::zeros({1, 4, 4})), InvalidArgument);
}

}  // namespace
}  // namespace epoch
