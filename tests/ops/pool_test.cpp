// Pooling: hand-computed max/avg/global values and indices, padded positions never winning,
// TensorFlow-style asymmetric "same" padding, gradient checks (tie-free inputs) and bad arguments.
#include "epoch/ops/pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <numeric>

#include "epoch/autograd/functions.h"
#include "epoch/ops/backend.h"
#include "epoch/tensor/random.h"
#include "testing/testing.h"

namespace epoch {
namespace {

using ops::Pool2dParams;

Pool2dParams pool(std::int64_t k, std::int64_t s, std::int64_t top = 0, std::int64_t bottom = 0,
                  std::int64_t left = 0, std::int64_t right = 0, bool include_pad = true) {
  Pool2dParams p;
  p.kernel_h = p.kernel_w = k;
  p.stride_h = p.stride_w = s;
  p.pad_top = top;
  p.pad_bottom = bottom;
  p.pad_left = left;
  p.pad_right = right;
  p.count_include_pad = include_pad;
  return p;
}

// Distinct values spaced 0.03 apart in a random order: no ties, even after a gradcheck step.
Tensor distinct_values(const Shape& shape, std::uint64_t seed) {
  Tensor t = Tensor::empty(shape);
  std::vector<std::int64_t> order(static_cast<std::size_t>(t.numel()));
  std::iota(order.begin(), order.end(), 0);
  RandomStream rng(seed, 0xd15);
  for (std::size_t i = order.size(); i > 1; --i)
    std::swap(order[i - 1], order[rng.below(i)]);
  for (std::int64_t i = 0; i < t.numel(); ++i)
    t.f32()[i] = 0.03f * static_cast<float>(order[static_cast<std::size_t>(i)] - t.numel() / 2);
  return t;
}

// The definition on an explicitly padded plane: max over real inputs, or the window sum over
// the chosen divisor.
Tensor naive_pool(const Tensor& x, const Pool2dParams& p, bool max) {
  const std::int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const std::int64_t OH = (H + p.pad_top + p.pad_bottom - p.kernel_h) / p.stride_h + 1;
  const std::int64_t OW = (W + p.pad_left + p.pad_right - p.kernel_w) / p.stride_w + 1;
  Tensor y = Tensor::empty({N, C, OH, OW});
  for (std::int64_t nc = 0; nc < N * C; ++nc)
    for (std::int64_t oh = 0; oh < OH; ++oh)
      for (std::int64_t ow = 0; ow < OW; ++ow) {
        double best = -std::numeric_limits<double>::infinity(), s = 0.0;
        int real = 0;
        for (std::int64_t i = 0; i < p.kernel_h; ++i)
          for (std::int64_t j = 0; j < p.kernel_w; ++j) {
            const std::int64_t h = oh * p.stride_h - p.pad_top + i;
            const std::int64_t w = ow * p.stride_w - p.pad_left + j;
            if (h < 0 || h >= H || w < 0 || w >= W) continue;
            const double v = x.f32()[(nc * H + h) * W + w];
            best = std::max(best, v);
            s += v;
            ++real;
          }
        const double divisor = p.count_include_pad ? static_cast<double>(p.kernel_h * p.kernel_w)
                                                   : static_cast<double>(real);
        y.f32()[(nc * OH + oh) * OW + ow] = static_cast<float>(max ? best : s / divisor);
      }
  return y;
}

Tensor one_to_16() {
  std::vector<float> v(16);
  std::iota(v.begin(), v.end(), 1.0f);
  return Tensor::from_vector({1, 1, 4, 4}, v);
}

std::vector<std::int32_t> ints(const Tensor& t) {
  const std::int32_t* p = t.data<std::int32_t>();
  return {p, p + t.numel()};
}

TEST(Pool, MaxValuesAndIndices) {
  ops::CpuKernelsGuard reference(ops::CpuKernels::reference);
  const ops::MaxPoolResult r = ops::max_pool2d_forward(one_to_16(), pool(2, 2));
  EXPECT_TRUE(testing::allclose(r.y, Tensor::from_vector({1, 1, 2, 2}, {6, 8, 14, 16})));
  EXPECT_EQ(ints(r.indices), (std::vector<std::int32_t>{5, 7, 13, 15}));
  const Tensor dx =
      ops::max_pool2d_backward(Tensor::from_vector({1, 1, 2, 2}, {1, 2, 3, 4}), one_to_16(), r,
                               pool(2, 2));
  EXPECT_TRUE(testing::allclose(
      dx, Tensor::from_vector({1, 1, 4, 4}, {0, 0, 0, 0, 0, 1, 0, 2, 0, 0, 0, 0, 0, 3, 0, 4})));
}

TEST(Pool, MaxOverlappingWindowsAccumulate) {
  ops::CpuKernelsGuard reference(ops::CpuKernels::reference);
  const Tensor x = Tensor::from_vector({1, 1, 3, 3}, {1, 2, 3, 4, 9, 5, 6, 7, 8});
  const ops::MaxPoolResult r = ops::max_pool2d_forward(x, pool(2, 1));
  EXPECT_TRUE(testing::allclose(r.y, Tensor::full({1, 1, 2, 2}, 9.0f)));
  const Tensor dx = ops::max_pool2d_backward(Tensor::full({1, 1, 2, 2}, 1.0f), x, r, pool(2, 1));
  EXPECT_TRUE(
      testing::allclose(dx, Tensor::from_vector({1, 1, 3, 3}, {0, 0, 0, 0, 4, 0, 0, 0, 0})));
}

TEST(Pool, MaxPaddingNeverWinsAndFirstMaximumWins) {
  ops::CpuKernelsGuard reference(ops::CpuKernels::reference);
  const Tensor x = Tensor::full({1, 1, 2, 2}, -5.0f);
  const ops::MaxPoolResult r = ops::max_pool2d_forward(x, pool(2, 1, 1, 1, 1, 1));
  EXPECT_TRUE(testing::allclose(r.y, Tensor::full({1, 1, 3, 3}, -5.0f)));
  EXPECT_EQ(ints(r.indices), (std::vector<std::int32_t>{0, 0, 1, 0, 0, 1, 2, 2, 3}));
}

TEST(Pool, AverageValues) {
  ops::CpuKernelsGuard reference(ops::CpuKernels::reference);
  EXPECT_TRUE(testing::allclose(ops::avg_pool2d_forward(one_to_16(), pool(2, 2)),
                                Tensor::from_vector({1, 1, 2, 2}, {3.5f, 5.5f, 11.5f, 13.5f})));
  // Kernel 3, stride 2, one row/column of padding at the bottom/right: 4 -> 2.
  EXPECT_TRUE(testing::allclose(ops::avg_pool2d_forward(one_to_16(), pool(3, 2, 0, 1, 0, 1, false)),
                                Tensor::from_vector({1, 1, 2, 2}, {6.0f, 7.5f, 12.0f, 13.5f})));
  EXPECT_TRUE(testing::allclose(ops::avg_pool2d_forward(one_to_16(), pool(3, 2, 0, 1, 0, 1, true)),
                                Tensor::from_vector({1, 1, 2, 2}, {6.0f, 5.0f, 8.0f, 6.0f})));
  const ops::MaxPoolResult r = ops::max_pool2d_forward(one_to_16(), pool(3, 2, 0, 1, 0, 1));
  EXPECT_TRUE(testing::allclose(r.y, Tensor::from_vector({1, 1, 2, 2}, {11, 12, 15, 16})));
  EXPECT_EQ(ints(r.indices), (std::vector<std::int32_t>{10, 11, 14, 15}));
  // Backward spreads dy by the same divisor: the bottom-right output covers 4 real inputs.
  const Tensor dx = ops::avg_pool2d_backward(Tensor::from_vector({1, 1, 2, 2}, {0, 0, 0, 8}),
                                             {1, 1, 4, 4}, pool(3, 2, 0, 1, 0, 1, false));
  EXPECT_TRUE(testing::allclose(
      dx, Tensor::from_vector({1, 1, 4, 4}, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 0, 0, 2, 2})));
}

TEST(Pool, GlobalAverageValues) {
  ops::CpuKernelsGuard reference(ops::CpuKernels::reference);
  const Tensor x = Tensor::from_vector({1, 2, 2, 2}, {1, 2, 3, 4, -1, -1, 5, 9});
  EXPECT_TRUE(testing::allclose(ops::global_avg_pool2d_forward(x),
                                Tensor::from_vector({1, 2}, {2.5f, 3.0f})));
  EXPECT_TRUE(testing::allclose(
      ops::global_avg_pool2d_backward(Tensor::from_vector({1, 2}, {4, -8}), {1, 2, 2, 2}),
      Tensor::from_vector({1, 2, 2, 2}, {1, 1, 1, 1, -2, -2, -2, -2})));
}

TEST(Pool, TensorFlowSamePadding24To12) {
  ops::CpuKernelsGuard reference(ops::CpuKernels::reference);
  const Pool2dParams same = pool(3, 2, 0, 1, 0, 1, false);
  EXPECT_EQ(ops::pool_out_size(24, 3, 2, 0, 1), 12);
  Tensor x = distinct_values({1, 2, 24, 24}, 3).set_requires_grad(true);
  const ops::MaxPoolResult r = ops::max_pool2d_forward(x.detach(), same);
  EXPECT_EQ(r.y.shape(), Shape({1, 2, 12, 12}));
  EXPECT_TRUE(testing::allclose(r.y, naive_pool(x.detach(), same, true)));
  EXPECT_TRUE(
      testing::allclose(ops::avg_pool2d_forward(x.detach(), same), naive_pool(x, same, false)));
  EXPECT_TRUE(testing::gradcheck(
      [same](const std::vector<Tensor>& in) { return max_pool2d(in[0], same); }, {x}));
  EXPECT_TRUE(testing::gradcheck(
      [same](const std::vector<Tensor>& in) { return avg_pool2d(in[0], same); }, {x}));
}

TEST(Pool, MatchDefinitionAndGradcheck) {
  ops::CpuKernelsGuard reference(ops::CpuKernels::reference);
  const std::vector<Pool2dParams> configs = {
      pool(2, 2), pool(3, 1), pool(3, 2, 1, 1, 1, 1), pool(3, 2, 1, 1, 1, 1, false),
      pool(2, 1, 1, 0, 0, 1), pool(3, 3, 2, 0, 1, 2, false)};
  std::uint64_t seed = 20;
  for (const Pool2dParams& p : configs) {
    Tensor x = distinct_values({2, 3, 7, 6}, ++seed).set_requires_grad(true);
    EXPECT_TRUE(testing::allclose(ops::max_pool2d_forward(x.detach(), p).y,
                                  naive_pool(x, p, true)));
    EXPECT_TRUE(
        testing::allclose(ops::avg_pool2d_forward(x.detach(), p), naive_pool(x, p, false)));
    EXPECT_TRUE(testing::gradcheck(
        [p](const std::vector<Tensor>& in) { return max_pool2d(in[0], p); }, {x}));
    EXPECT_TRUE(testing::gradcheck(
        [p](const std::vector<Tensor>& in) { return avg_pool2d(in[0], p); }, {x}));
  }
  Tensor x = testing::random_tensor({2, 3, 4, 5}, 30).set_requires_grad(true);
  EXPECT_TRUE(testing::gradcheck(
      [](const std::vector<Tensor>& in) { return global_avg_pool2d(in[0]); }, {x}));
}

TEST(Pool, BadArgumentsThrow) {
  const Tensor x = testing::random_tensor({1, 2, 5, 5}, 1);
  EXPECT_THROW(ops::max_pool2d_forward(x, pool(6, 1)), InvalidArgument);        // kernel > input
  EXPECT_THROW(ops::max_pool2d_forward(x, pool(2, 0)), InvalidArgument);        // stride 0
  EXPECT_THROW(ops::max_pool2d_forward(x, pool(2, 2, 2, 0)), InvalidArgument);  // pad >= kernel
  EXPECT_THROW(ops::avg_pool2d_forward(x, pool(3, 1, 0, 0, -1, 0)), InvalidArgument);
  EXPECT_THROW(ops::avg_pool2d_forward(x.view({2, 5, 5}), pool(2, 2)), InvalidArgument);
  EXPECT_THROW(ops::global_avg_pool2d_forward(x.view({2, 5, 5})), InvalidArgument);
  EXPECT_THROW(ops::max_pool2d_forward(Tensor::zeros({1, 2, 5, 5}, DType::i32), pool(2, 2)),
               InvalidArgument);
  const ops::MaxPoolResult r = ops::max_pool2d_forward(x, pool(2, 2));
  EXPECT_THROW(ops::max_pool2d_backward(testing::random_tensor({1, 2, 3, 3}, 2), x, r, pool(2, 2)),
               InvalidArgument);
  ops::MaxPoolResult foreign = r;
  foreign.indices = Tensor::zeros({7}, DType::u8);
  EXPECT_THROW(ops::max_pool2d_backward(r.y, x, foreign, pool(2, 2)), InvalidArgument);
  EXPECT_THROW(ops::avg_pool2d_backward(r.y, {1, 2, 6, 6}, pool(2, 2, 0, 1)), InvalidArgument);
  EXPECT_THROW(ops::global_avg_pool2d_backward(r.y, {1, 2, 5, 5}), InvalidArgument);
}

}  // namespace
}  // namespace epoch
