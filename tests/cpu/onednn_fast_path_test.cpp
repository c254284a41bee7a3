// The oneDNN fast path through the public ops beyond parity (testing/parity_cases.cpp): hand
// values, gradchecks, argument errors, max-pool workspaces, reproducibility, the primitive cache.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "epoch/autograd/functions.h"
#include "epoch/ops/backend.h"
#include "epoch/ops/conv2d.h"
#include "epoch/ops/linear.h"
#include "epoch/ops/norm.h"
#include "epoch/ops/pool.h"
#include "testing/testing.h"

#if EPOCH_WITH_ONEDNN
#include "cpu/onednn_context.h"
#endif

namespace epoch {
namespace {

#if EPOCH_WITH_ONEDNN

using ops::CpuKernels;
using ops::CpuKernelsGuard;

ops::Conv2dParams conv_params(std::int64_t stride, std::int64_t pad, std::int64_t dilation,
                              std::int64_t groups) {
  ops::Conv2dParams p;
  p.stride_h = p.stride_w = stride;
  p.pad_h = p.pad_w = pad;
  p.dilation_h = p.dilation_w = dilation;
  p.groups = groups;
  return p;
}

ops::Pool2dParams pool_params(std::int64_t k, std::int64_t s, std::int64_t pad_begin,
                              std::int64_t pad_end, bool include_pad) {
  ops::Pool2dParams p;
  p.kernel_h = p.kernel_w = k;
  p.stride_h = p.stride_w = s;
  p.pad_top = p.pad_left = pad_begin;
  p.pad_bottom = p.pad_right = pad_end;
  p.count_include_pad = include_pad;
  return p;
}

TEST(OnednnFastPath, FastPathIsOnednnHere) {
  CpuKernelsGuard fast(CpuKernels::fast);
  EXPECT_TRUE(ops::onednn_available());
  EXPECT_TRUE(ops::use_onednn());
  CpuKernelsGuard reference(CpuKernels::reference);
  EXPECT_FALSE(ops::use_onednn());
}

TEST(OnednnFastPath, Conv2dHandComputed) {
  CpuKernelsGuard fast(CpuKernels::fast);
  const Tensor x = Tensor::from_vector({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  const Tensor w = Tensor::from_vector({1, 1, 2, 2}, {1, 2, 3, 4});
  const Tensor b = Tensor::from_vector({1}, {0.5f});
  EXPECT_TRUE(testing::allclose(ops::conv2d_forward(x, w, b, {}),
                                Tensor::from_vector({1, 1, 2, 2}, {37.5f, 47.5f, 67.5f, 77.5f})));
  const ops::Conv2dGrads g = ops::conv2d_backward(Tensor::full({1, 1, 2, 2}, 1.0f), x, w, true, {});
  EXPECT_TRUE(testing::allclose(g.dw, Tensor::from_vector({1, 1, 2, 2}, {12, 16, 24, 28})));
  EXPECT_TRUE(testing::allclose(g.db, Tensor::from_vector({1}, {4})));
  EXPECT_TRUE(
      testing::allclose(g.dx, Tensor::from_vector({1, 1, 3, 3}, {1, 3, 2, 4, 10, 6, 3, 7, 4})));
}

TEST(OnednnFastPath, Conv2dGradcheck) {
  CpuKernelsGuard fast(CpuKernels::fast);
  const ops::Conv2dParams p = conv_params(2, 1, 1, 2);
  Tensor x = testing::random_tensor({2, 4, 7, 6}, 65).set_requires_grad(true);
  Tensor w = testing::random_tensor({6, 2, 3, 3}, 66).set_requires_grad(true);
  Tensor b = testing::random_tensor({6}, 67).set_requires_grad(true);
  EXPECT_TRUE(testing::gradcheck(
      [&](const std::vector<Tensor>& in) { return conv2d(in[0], in[1], in[2], p); }, {x, w, b}));
}

TEST(OnednnFastPath, MaxPoolWorkspaceAndIndicesCrossPaths) {
  const Tensor x = testing::random_tensor({2, 3, 6, 6}, 73);
  const Tensor dy = testing::random_tensor({2, 3, 3, 3}, 74);
  const ops::Pool2dParams p = pool_params(2, 2, 0, 0, true);
  ops::MaxPoolResult fast_fwd, ref_fwd;
  {
    CpuKernelsGuard guard(CpuKernels::fast);
    fast_fwd = ops::max_pool2d_forward(x, p);
    EXPECT_EQ(fast_fwd.indices.dtype(), DType::u8);  // the oneDNN workspace
  }
  {
    CpuKernelsGuard guard(CpuKernels::reference);
    ref_fwd = ops::max_pool2d_forward(x, p);
    // A oneDNN workspace is read by oneDNN even when the reference kernels are selected.
    EXPECT_TRUE(testing::allclose(ops::max_pool2d_backward(dy, x, fast_fwd, p),
                                  ops::max_pool2d_backward(dy, x, ref_fwd, p), 0.0f, 0.0f));
  }
  CpuKernelsGuard guard(CpuKernels::fast);
  EXPECT_TRUE(testing::allclose(ops::max_pool2d_backward(dy, x, ref_fwd, p),
                                ops::max_pool2d_backward(dy, x, fast_fwd, p), 0.0f, 0.0f));
  ops::MaxPoolResult bad = fast_fwd;
  bad.indices = Tensor::zeros({5}, DType::u8);
  EXPECT_THROW(ops::max_pool2d_backward(dy, x, bad, p), InvalidArgument);
}

TEST(OnednnFastPath, PoolingHandComputedAndGradcheck) {
  CpuKernelsGuard fast(CpuKernels::fast);
  std::vector<float> v(16);
  for (int i = 0; i < 16; ++i) v[i] = static_cast<float>(i + 1);
  const Tensor x = Tensor::from_vector({1, 1, 4, 4}, v);
  const ops::Pool2dParams p = pool_params(2, 2, 0, 0, true);
  const ops::MaxPoolResult r = ops::max_pool2d_forward(x, p);
  EXPECT_TRUE(testing::allclose(r.y, Tensor::from_vector({1, 1, 2, 2}, {6, 8, 14, 16})));
  EXPECT_TRUE(testing::allclose(
      ops::max_pool2d_backward(Tensor::from_vector({1, 1, 2, 2}, {1, 2, 3, 4}), x, r, p),
      Tensor::from_vector({1, 1, 4, 4}, {0, 0, 0, 0, 0, 1, 0, 2, 0, 0, 0, 0, 0, 3, 0, 4})));
  EXPECT_TRUE(testing::allclose(ops::avg_pool2d_forward(x, p),
                                Tensor::from_vector({1, 1, 2, 2}, {3.5f, 5.5f, 11.5f, 13.5f})));
  // TensorFlow "same" 3x3/2 on 3x3: padding excluded from the divisor.
  const Tensor x3 = Tensor::from_vector({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  EXPECT_TRUE(testing::allclose(ops::avg_pool2d_forward(x3, pool_params(3, 2, 1, 1, false)),
                                Tensor::from_vector({1, 1, 2, 2}, {3, 4, 6, 7})));

  // Inputs away from ties: distinct values spaced 0.1 apart, shuffled.
  std::vector<float> distinct(2 * 3 * 6 * 6);
  for (std::size_t i = 0; i < distinct.size(); ++i)
    distinct[i] = 0.1f * static_cast<float>((i * 37) % distinct.size()) - 10.0f;
  Tensor xg = Tensor::from_vector({2, 3, 6, 6}, distinct).set_requires_grad(true);
  EXPECT_TRUE(testing::gradcheck(
      [](const std::vector<Tensor>& in) {
        return max_pool2d(in[0], pool_params(3, 2, 1, 1, true));
      },
      {xg}, {.eps = 1e-2f}));
  Tensor xa = testing::random_tensor({2, 3, 7, 5}, 75).set_requires_grad(true);
  EXPECT_TRUE(testing::gradcheck(
      [](const std::vector<Tensor>& in) {
        return avg_pool2d(in[0], pool_params(3, 2, 1, 1, false));
      },
      {xa}));
}

TEST(OnednnFastPath, LinearHandComputedAndGradcheck) {
  CpuKernelsGuard fast(CpuKernels::fast);
  const Tensor x1 = Tensor::from_vector({1, 2}, {1, 2});
  const Tensor w1 = Tensor::from_vector({2, 2}, {1, 1, 3, -1});
  EXPECT_TRUE(testing::allclose(ops::linear_forward(x1, w1, Tensor::from_vector({2}, {0.5f, 0})),
                                Tensor::from_vector({1, 2}, {3.5f, 1})));
  Tensor xg = testing::random_tensor({3, 6}, 85).set_requires_grad(true);
  Tensor wg = testing::random_tensor({4, 6}, 86).set_requires_grad(true);
  Tensor bg = testing::random_tensor({4}, 87).set_requires_grad(true);
  EXPECT_TRUE(testing::gradcheck(
      [](const std::vector<Tensor>& in) { return linear(in[0], in[1], in[2]); }, {xg, wg, bg}));
  EXPECT_TRUE(testing::gradcheck([](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); },
                                 {xg, testing::random_tensor({6, 2}, 88).set_requires_grad(true)}));
}

TEST(OnednnFastPath, NormOpsHandComputedAndGradcheck) {
  CpuKernelsGuard fast(CpuKernels::fast);
  const ops::LrnParams lp{5, 0.5f, 0.75f, 2.0f};
  // Two values per channel: y = -1, 1 whatever they are; LRN of a lone channel by hand.
  Tensor rm = Tensor::zeros({1}), rv = Tensor::full({1}, 1.0f);
  EXPECT_TRUE(testing::allclose(
      ops::batch_norm_forward(Tensor::from_vector({2, 1}, {3, 7}), Tensor::full({1}, 1.0f),
                              Tensor::zeros({1}), rm, rv, true, 0.5f, 0.0f)
          .y,
      Tensor::from_vector({2, 1}, {-1, 1})));
  EXPECT_TRUE(testing::allclose(rm, Tensor::from_vector({1}, {2.5f})));  // 0.5 * 5
  EXPECT_TRUE(testing::allclose(rv, Tensor::from_vector({1}, {4.5f})));  // 0.5 + 0.5 * 8
  const Tensor one = Tensor::from_vector({1, 1, 1, 1}, {2});
  // 2 / (1 + 1/1 * 4)^0.5 = 2 / sqrt(5)
  EXPECT_TRUE(testing::allclose(ops::lrn_forward(one, {1, 1.0f, 0.5f, 1.0f}),
                                Tensor::from_vector({1, 1, 1, 1}, {0.894427191f})));

  Tensor xg = testing::random_tensor({3, 2, 3, 3}, 95, -1.0f, 2.0f).set_requires_grad(true);
  Tensor gg = testing::random_tensor({2}, 96, 0.5f, 1.5f).set_requires_grad(true);
  Tensor bg = testing::random_tensor({2}, 97).set_requires_grad(true);
  for (bool training : {true, false}) {
    EXPECT_TRUE(testing::gradcheck(
        [training](const std::vector<Tensor>& in) {
          Tensor rm = Tensor::zeros({2}), rv = Tensor::full({2}, 1.0f);
          return batch_norm(in[0], in[1], in[2], rm, rv, training, 0.1f, 1e-5f);
        },
        {xg, gg, bg}));
  }
  Tensor xl = testing::random_tensor({2, 6, 2, 3}, 98, -2.0f, 2.0f).set_requires_grad(true);
  EXPECT_TRUE(
      testing::gradcheck([lp](const std::vector<Tensor>& in) { return lrn(in[0], lp); }, {xl}));
}

TEST(OnednnFastPath, BadArgumentsThrow) {
  CpuKernelsGuard fast(CpuKernels::fast);
  const Tensor x = testing::random_tensor({1, 4, 5, 5}, 99);
  EXPECT_THROW(ops::conv2d_forward(x, testing::random_tensor({2, 3, 3, 3}, 1), Tensor(), {}),
               InvalidArgument);
  EXPECT_THROW(ops::max_pool2d_forward(x, pool_params(7, 1, 0, 0, true)), InvalidArgument);
  EXPECT_THROW(ops::linear_forward(testing::random_tensor({2, 3}, 2),
                                   testing::random_tensor({4, 5}, 3), Tensor()),
               InvalidArgument);
  Tensor rm = Tensor::zeros({3}), rv = Tensor::full({3}, 1.0f);
  EXPECT_THROW(ops::batch_norm_forward(x, Tensor::full({3}, 1.0f), Tensor::zeros({3}), rm, rv, true,
                                       0.1f, 1e-5f),
               InvalidArgument);
}

TEST(OnednnFastPath, ResultsAreReproducibleCallToCall) {
  CpuKernelsGuard fast(CpuKernels::fast);
  const Tensor x = testing::random_tensor({4, 8, 12, 12}, 101);
  const Tensor w = testing::random_tensor({16, 8, 3, 3}, 102);
  const ops::Conv2dParams p = conv_params(1, 1, 1, 1);
  const Tensor dy = testing::random_tensor({4, 16, 12, 12}, 103);
  const ops::Conv2dGrads a = ops::conv2d_backward(dy, x, w, true, p);
  const ops::Conv2dGrads b = ops::conv2d_backward(dy, x, w, true, p);
  EXPECT_TRUE(testing::allclose(a.dw, b.dw, 0.0f, 0.0f));
  EXPECT_TRUE(testing::allclose(a.dx, b.dx, 0.0f, 0.0f));
}

TEST(OnednnPrimitiveCache, RepeatedShapesHitAndTheLruEvicts) {
  CpuKernelsGuard fast(CpuKernels::fast);
  auto& cache = cpu::onednn::PrimitiveCache::instance();
  const Tensor x = testing::random_tensor({2, 3, 8, 8}, 111);
  const Tensor w = testing::random_tensor({4, 3, 3, 3}, 112);
  ops::conv2d_forward(x, w, Tensor(), {});
  const std::int64_t hits = cache.hits(), misses = cache.misses();
  ops::conv2d_forward(x, w, Tensor(), {});
  EXPECT_EQ(cache.hits(), hits + 1);
  EXPECT_EQ(cache.misses(), misses);

  cache.set_capacity(2);
  EXPECT_LE(cache.size(), 2u);
  for (std::int64_t n = 1; n <= 3; ++n)
    ops::conv2d_forward(testing::random_tensor({n, 3, 8, 8}, 113), w, Tensor(), {});
  EXPECT_EQ(cache.size(), 2u);
  const std::int64_t before = cache.misses();
  ops::conv2d_forward(testing::random_tensor({1, 3, 8, 8}, 114), w, Tensor(), {});  // evicted
  EXPECT_EQ(cache.misses(), before + 1);
  cache.set_capacity(512);
}

#else

TEST(OnednnFastPath, SkippedWithoutOnednn) { GTEST_SKIP() << "this build has no oneDNN"; }

#endif

}  // namespace
}  // namespace epoch
