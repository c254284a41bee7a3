// conv2d: hand-computed values, a direct-loop oracle for strides/padding/dilation/groups,
// gradient checks over a grid of configurations, thread-count independence and bad arguments.
#include "epoch/ops/conv2d.h"

#include <gtest/gtest.h>

#include <tuple>

#include "epoch/autograd/functions.h"
#include "epoch/ops/backend.h"
#include "testing/testing.h"

namespace epoch {
namespace {

using ops::Conv2dParams;

// The definition, one output at a time: y[n][oc][oh][ow] = b[oc] + sum over the group's inputs.
Tensor naive_conv(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dParams& p) {
  const std::int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const std::int64_t OC = w.size(0), KH = w.size(2), KW = w.size(3);
  const std::int64_t OH = (H + 2 * p.pad_h - p.dilation_h * (KH - 1) - 1) / p.stride_h + 1;
  const std::int64_t OW = (W + 2 * p.pad_w - p.dilation_w * (KW - 1) - 1) / p.stride_w + 1;
  const std::int64_t Cg = C / p.groups, OCg = OC / p.groups;
  Tensor y = Tensor::zeros({N, OC, OH, OW});
  const float *xp = x.f32(), *wp = w.f32();
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t oc = 0; oc < OC; ++oc)
      for (std::int64_t oh = 0; oh < OH; ++oh)
        for (std::int64_t ow = 0; ow < OW; ++ow) {
          double s = b.defined() ? b.f32()[oc] : 0.0;
          const std::int64_t g = oc / OCg;
          for (std::int64_t ci = 0; ci < Cg; ++ci)
            for (std::int64_t kh = 0; kh < KH; ++kh)
              for (std::int64_t kw = 0; kw < KW; ++kw) {
                const std::int64_t h = oh * p.stride_h - p.pad_h + kh * p.dilation_h;
                const std::int64_t v = ow * p.stride_w - p.pad_w + kw * p.dilation_w;
                if (h < 0 || h >= H || v < 0 || v >= W) continue;
                s += static_cast<double>(xp[((n * C + g * Cg + ci) * H + h) * W + v]) *
                     wp[((oc * Cg + ci) * KH + kh) * KW + kw];
              }
          y.f32()[((n * OC + oc) * OH + oh) * OW + ow] = static_cast<float>(s);
        }
  return y;
}

Tensor x_1_to_9() {
  return Tensor::from_vector({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
}

TEST(Conv2d, HandComputedSingleChannel) {
  ops::CpuKernelsGuard reference(ops::CpuKernels::reference);
  const Tensor x = x_1_to_9();
  const Tensor w = Tensor::from_vector({1, 1, 2, 2}, {1, 2, 3, 4});
  const Tensor b = Tensor::from_vector({1}, {0.5f});
  EXPECT_TRUE(testing::allclose(ops::conv2d_forward(x, w, b, {}),
                                Tensor::from_vector({1, 1, 2, 2}, {37.5f, 47.5f, 67.5f, 77.5f})));
  Conv2dParams p;
  p.stride_h = p.stride_w = 2;
  p.pad_h = p.pad_w = 1;
  EXPECT_TRUE(testing::allclose(ops::conv2d_forward(x, w, Tensor(), p),
                                Tensor::from_vector({1, 1, 2, 2}, {4, 18, 36, 77})));
}

TEST(Conv2d, HandComputedBackward) {
  ops::CpuKernelsGuard reference(ops::CpuKernels::reference);
  const Tensor x = x_1_to_9();
  const Tensor w = Tensor::from_vector({1, 1, 2, 2}, {1, 2, 3, 4});
  const Tensor dy = Tensor::full({1, 1, 2, 2}, 1.0f);
  const ops::Conv2dGrads g = ops::conv2d_backward(dy, x, w, true, {});
  EXPECT_TRUE(testing::allclose(g.dw, Tensor::from_vector({1, 1, 2, 2}, {12, 16, 24, 28})));
  EXPECT_TRUE(testing::allclose(g.db, Tensor::from_vector({1}, {4})));
  EXPECT_TRUE(testing::allclose(
      g.dx, Tensor::from_vector({1, 1, 3, 3}, {1, 3, 2, 4, 10, 6, 3, 7, 4})));
  const ops::Conv2dGrads no_dx = ops::conv2d_backward(dy, x, w, false, {}, false);
  EXPECT_FALSE(no_dx.dx.defined());
  EXPECT_FALSE(no_dx.db.defined());
  EXPECT_TRUE(testing::allclose(no_dx.dw, g.dw));
}

TEST(Conv2d, OutputSize) {
  EXPECT_EQ(ops::conv_out_size(32, 3, 1, 1, 1), 32);
  EXPECT_EQ(ops::conv_out_size(32, 3, 2, 1, 1), 16);
  EXPECT_EQ(ops::conv_out_size(7, 3, 1, 0, 2), 3);
  EXPECT_EQ(ops::conv_out_size(227, 11, 4, 0, 1), 55);
  EXPECT_EQ(ops::conv_out_size(3, 3, 2, 0, 1), 1);
  EXPECT_THROW(ops::conv_out_size(2, 3, 1, 0, 1), InvalidArgument);
  EXPECT_THROW(ops::conv_out_size(4, 3, 1, 0, 2), InvalidArgument);  // extent 5 > 4
  EXPECT_THROW(ops::conv_out_size(4, 3, 0, 0, 1), InvalidArgument);
  EXPECT_THROW(ops::conv_out_size(4, 3, 1, -1, 1), InvalidArgument);
  EXPECT_THROW(ops::conv_out_size(4, 3, 1, 0, 0), InvalidArgument);
}

// (stride, pad, dilation, groups, bias)
class Conv2dGrid
    : public ::testing::TestWithParam<std::tuple<std::int64_t, std::int64_t, std::int64_t,
                                                 std::int64_t, bool>> {};

TEST_P(Conv2dGrid, MatchesDefinitionAndGradcheck) {
  ops::CpuKernelsGuard reference(ops::CpuKernels::reference);
  const auto [stride, pad, dilation, groups, bias] = GetParam();
  Conv2dParams p;
  p.stride_h = stride;
  p.stride_w = stride;
  p.pad_h = pad;
  p.pad_w = pad == 0 ? 1 : pad - 1;  // unequal padding per axis
  p.dilation_h = dilation;
  p.dilation_w = dilation;
  p.groups = groups;
  const std::uint64_t seed = static_cast<std::uint64_t>(stride * 1000 + pad * 100 +
                                                        dilation * 10 + groups + (bias ? 7 : 0));
  Tensor x = testing::random_tensor({2, 4, 6, 5}, seed).set_requires_grad(true);
  Tensor w = testing::random_tensor({4, 4 / groups, 3, 2}, seed + 1).set_requires_grad(true);
  Tensor b = bias ? testing::random_tensor({4}, seed + 2).set_requires_grad(true) : Tensor();
  EXPECT_TRUE(testing::allclose(ops::conv2d_forward(x.detach(), w.detach(),
                                                    bias ? b.detach() : Tensor(), p),
                                naive_conv(x, w, b, p)));
  std::vector<Tensor> inputs = {x, w};
  if (bias) inputs.push_back(b);
  EXPECT_TRUE(testing::gradcheck(
      [p](const std::vector<Tensor>& in) {
        return conv2d(in[0], in[1], in.size() > 2 ? in[2] : Tensor(), p);
      },
      inputs));
}

INSTANTIATE_TEST_SUITE_P(Configurations, Conv2dGrid,
                         ::testing::Combine(::testing::Values(1, 2), ::testing::Values(0, 1, 2),
                                            ::testing::Values(1, 2), ::testing::Values(1, 2),
                                            ::testing::Bool()));

TEST(Conv2d, ResultsDoNotDependOnThreadCount) {
  ops::CpuKernelsGuard reference(ops::CpuKernels::reference);
  Conv2dParams p;
  p.pad_h = p.pad_w = 1;
  const Tensor x = testing::random_tensor({3, 8, 20, 20}, 11);
  const Tensor w = testing::random_tensor({16, 8, 3, 3}, 12);
  const Tensor b = testing::random_tensor({16}, 13);
  const Tensor dy = testing::random_tensor({3, 16, 20, 20}, 14);
  const int threads = ops::num_threads();
  ops::set_num_threads(1);
  const Tensor y1 = ops::conv2d_forward(x, w, b, p);
  const ops::Conv2dGrads g1 = ops::conv2d_backward(dy, x, w, true, p);
  ops::set_num_threads(std::max(2, threads));
  const Tensor y2 = ops::conv2d_forward(x, w, b, p);
  const ops::Conv2dGrads g2 = ops::conv2d_backward(dy, x, w, true, p);
  ops::set_num_threads(threads);
  EXPECT_EQ(y1.to_vector(), y2.to_vector());
  EXPECT_EQ(g1.dx.to_vector(), g2.dx.to_vector());
  EXPECT_EQ(g1.dw.to_vector(), g2.dw.to_vector());
  EXPECT_EQ(g1.db.to_vector(), g2.db.to_vector());
  EXPECT_TRUE(testing::allclose(y1, naive_conv(x, w, b, p), 1e-4f, 1e-4f));
}

TEST(Conv2d, BadArgumentsThrow) {
  const Tensor x = testing::random_tensor({1, 4, 5, 5}, 1);
  const Tensor w = testing::random_tensor({6, 4, 3, 3}, 2);
  Conv2dParams groups3;
  groups3.groups = 3;
  EXPECT_THROW(ops::conv2d_forward(x, w, Tensor(), groups3), InvalidArgument);
  Conv2dParams groups2;
  groups2.groups = 2;  // w would need 2 input channels per group
  EXPECT_THROW(ops::conv2d_forward(x, w, Tensor(), groups2), InvalidArgument);
  EXPECT_THROW(ops::conv2d_forward(x, testing::random_tensor({6, 3, 3, 3}, 3), Tensor(), {}),
               InvalidArgument);
  EXPECT_THROW(ops::conv2d_forward(x.view({4, 5, 5}), w, Tensor(), {}), InvalidArgument);
  EXPECT_THROW(ops::conv2d_forward(x, w, testing::random_tensor({5}, 4), {}), InvalidArgument);
  EXPECT_THROW(ops::conv2d_forward(x, testing::random_tensor({6, 4, 7, 3}, 5), Tensor(), {}),
               InvalidArgument);
  Conv2dParams zero_stride;
  zero_stride.stride_h = 0;
  EXPECT_THROW(ops::conv2d_forward(x, w, Tensor(), zero_stride), InvalidArgument);
  EXPECT_THROW(ops::conv2d_forward(Tensor::zeros({1, 4, 5, 5}, DType::i32), w, Tensor(), {}),
               InvalidArgument);
  EXPECT_THROW(ops::conv2d_backward(testing::random_tensor({1, 6, 2, 3}, 6), x, w, false, {}),
               InvalidArgument);
}

}  // namespace
}  // namespace epoch
