// Batch norm (hand-computed training values, PyTorch's running-statistics update, eval mode,
// gradient checks in both modes) and LRN (hand values, PyTorch's window definition, gradient
// checks with window 5 and 9), plus bad arguments.
#include "epoch/ops/norm.h"

#include <gtest/gtest.h>

#include <cmath>

#include "epoch/autograd/functions.h"
#include "epoch/ops/backend.h"
#include "testing/testing.h"

namespace epoch {
namespace {

constexpr float kEps = 1e-5f;

// Batch norm by the definition, in double: y and the running statistics after one update.
struct NaiveBn {
  Tensor y, running_mean, running_var;
};
NaiveBn naive_batch_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                         const Tensor& rm, const Tensor& rv, bool training, float momentum) {
  const std::int64_t N = x.size(0), C = x.size(1), HW = x.numel() / (N * C);
  NaiveBn out{Tensor::empty(x.shape()), rm.clone(), rv.clone()};
  for (std::int64_t c = 0; c < C; ++c) {
    double mean = rm.f32()[c], var = rv.f32()[c];
    if (training) {
      double s = 0.0, ss = 0.0;
      for (std::int64_t n = 0; n < N; ++n)
        for (std::int64_t i = 0; i < HW; ++i) s += x.f32()[(n * C + c) * HW + i];
      mean = s / static_cast<double>(N * HW);
      for (std::int64_t n = 0; n < N; ++n)
        for (std::int64_t i = 0; i < HW; ++i) {
          const double d = x.f32()[(n * C + c) * HW + i] - mean;
          ss += d * d;
        }
      var = ss / static_cast<double>(N * HW);
      out.running_mean.f32()[c] =
          static_cast<float>((1 - momentum) * rm.f32()[c] + momentum * mean);
      out.running_var.f32()[c] = static_cast<float>(
          (1 - momentum) * rv.f32()[c] + momentum * ss / static_cast<double>(N * HW - 1));
    }
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t i = 0; i < HW; ++i) {
        const std::int64_t j = (n * C + c) * HW + i;
        out.y.f32()[j] = static_cast<float>((x.f32()[j] - mean) / std::sqrt(var + kEps) *
                                                gamma.f32()[c] + beta.f32()[c]);
      }
  }
  return out;
}

TEST(BatchNorm, TrainingValuesByHand) {
  ops::CpuKernelsGuard reference(ops::CpuKernels::reference);
  // Channel 0: 1 2 3 4 (mean 2.5, biased var 1.25, unbiased 5/3).
  // Channel 1: -2 0 2 8 (mean 2, biased var 14, unbiased 56/3).
  const Tensor x = Tensor::from_vector({4, 2}, {1, -2, 2, 0, 3, 2, 4, 8});
  const Tensor gamma = Tensor::from_vector({2}, {2.0f, 0.5f});
  const Tensor beta = Tensor::from_vector({2}, {0.5f, -1.0f});
  Tensor rm = Tensor::from_vector({2}, {0.0f, 1.0f});
  Tensor rv = Tensor::from_vector({2}, {1.0f, 2.0f});
  const ops::BatchNormResult r = ops::batch_norm_forward(x, gamma, beta, rm, rv, true, 0.1f, kEps);
  const float s0 = 1.0f / std::sqrt(1.25f + kEps), s1 = 1.0f / std::sqrt(14.0f + kEps);
  EXPECT_TRUE(testing::allclose(
      r.y, Tensor::from_vector({4, 2}, {-1.5f * s0 * 2 + 0.5f, -4 * s1 * 0.5f - 1,
                                        -0.5f * s0 * 2 + 0.5f, -2 * s1 * 0.5f - 1,
                                        0.5f * s0 * 2 + 0.5f, 0 * s1 * 0.5f - 1,
                                        1.5f * s0 * 2 + 0.5f, 6 * s1 * 0.5f - 1})));
  EXPECT_TRUE(testing::allclose(r.save_mean, Tensor::from_vector({2}, {2.5f, 2.0f})));
  EXPECT_TRUE(testing::allclose(r.save_invstd, Tensor::from_vector({2}, {s0, s1})));
  // running = 0.9 * running + 0.1 * batch, with the unbiased variance.
  EXPECT_TRUE(testing::allclose(rm, Tensor::from_vector({2}, {0.25f, 1.1f})));
  EXPECT_TRUE(testing::allclose(
      rv, Tensor::from_vector({2}, {0.9f + 0.1f * 5.0f / 3.0f, 1.8f + 0.1f * 56.0f / 3.0f})));
}

// Keras's running variance averages the biased variance (Keras 3.15's BatchNormalization,
// momentum 0.9, on this x from a moving variance of 1: 1.025 and 2.3); every CPU kernel (the
// reference, oneDNN's and strict's fixed-order one) and an NCHW input as well as (N, C) take it so.
TEST(BatchNorm, BiasedRunningVarianceAsKeras) {
  for (const ops::CpuKernels kernels :
       {ops::CpuKernels::reference, ops::CpuKernels::fast, ops::CpuKernels::strict}) {
    ops::CpuKernelsGuard guard(kernels);
    // Channel 0: 1 2 3 4 (biased var 1.25); channel 1: -2 0 2 8 (biased var 14).
    const Tensor x = Tensor::from_vector({4, 2}, {1, -2, 2, 0, 3, 2, 4, 8});
    Tensor rm = Tensor::from_vector({2}, {0.0f, 1.0f});
    Tensor rv = Tensor::from_vector({2}, {1.0f, 2.0f});
    const ops::BatchNormResult r = ops::batch_norm_forward(
        x, Tensor::full({2}, 1.0f), Tensor::zeros({2}), rm, rv, true, 0.1f, kEps, false);
    EXPECT_TRUE(testing::allclose(rv, Tensor::from_vector({2}, {0.9f + 0.125f, 1.8f + 1.4f})))
        << static_cast<int>(kernels);
    EXPECT_TRUE(testing::allclose(rm, Tensor::from_vector({2}, {0.25f, 1.1f})));
    // The same values as (N, C, H, W) = (2, 2, 1, 2): channel 0 holds 1 2 | 3 4.
    const Tensor x4 = Tensor::from_vector({2, 2, 1, 2}, {1, 2, -2, 0, 3, 4, 2, 8});
    Tensor rv4 = Tensor::from_vector({2}, {1.0f, 2.0f}), rm4 = Tensor::zeros({2});
    ops::batch_norm_forward(x4, Tensor::full({2}, 1.0f), Tensor::zeros({2}), rm4, rv4, true, 0.1f,
                            kEps, false);
    EXPECT_TRUE(testing::allclose(rv4, Tensor::from_vector({2}, {0.9f + 0.125f, 1.8f + 1.4f})))
        << static_cast<int>(kernels);
  }
}

TEST(BatchNorm, FourDimensionalTrainingAndEvalMatchDefinition) {
  ops::CpuKernelsGuard reference(ops::CpuKernels::reference);
  const Tensor x = testing::random_tensor({3, 4, 5, 2}, 80, -2.0f, 3.0f);
  const Tensor gamma = testing::random_tensor({4}, 81, 0.5f, 1.5f);
  const Tensor beta = testing::random_tensor({4}, 82);
  const Tensor rm0 = testing::random_tensor({4}, 83);
  const Tensor rv0 = testing::random_tensor({4}, 84, 0.5f, 2.0f);
  for (const bool training : {true, false}) {
    Tensor rm = rm0.clone(), rv = rv0.clone();
    const NaiveBn want = naive_batch_norm(x, gamma, beta, rm0, rv0, training, 0.3f);
    const ops::BatchNormResult r =
        ops::batch_norm_forward(x, gamma, beta, rm, rv, training, 0.3f, kEps);
    EXPECT_TRUE(testing::allclose(r.y, want.y)) << "training=" << training;
    EXPECT_TRUE(testing::allclose(rm, want.running_mean)) << "training=" << training;
    EXPECT_TRUE(testing::allclose(rv, want.running_var)) << "training=" << training;
  }
  // Eval leaves the running statistics as they were.
  Tensor rm = rm0.clone(), rv = rv0.clone();
  ops::batch_norm_forward(x, gamma, beta, rm, rv, false, 0.3f, kEps);
  EXPECT_EQ(rm.to_vector(), rm0.to_vector());
  EXPECT_EQ(rv.to_vector(), rv0.to_vector());
}

TEST(BatchNorm, BackwardByHand) {
  ops::CpuKernelsGuard reference(ops::CpuKernels::reference);
  const Tensor x = Tensor::from_vector({4, 1}, {1, 2, 3, 4});
  const Tensor gamma = Tensor::from_vector({1}, {2.0f});
  const Tensor beta = Tensor::from_vector({1}, {0.0f});
  const Tensor dy = Tensor::from_vector({4, 1}, {1, 0, 0, 0});
  Tensor rm = Tensor::from_vector({1}, {1.0f}), rv = Tensor::from_vector({1}, {3.0f});
  // Eval: statistics are constants, dx = gamma / sqrt(var + eps) * dy.
  const ops::BatchNormResult ev = ops::batch_norm_forward(x, gamma, beta, rm, rv, false, 0.1f, 0);
  const ops::BatchNormGrads ge = ops::batch_norm_backward(dy, x, gamma, ev, false);
  const float s = 1.0f / std::sqrt(3.0f);
  EXPECT_TRUE(testing::allclose(ge.dx, Tensor::from_vector({4, 1}, {2 * s, 0, 0, 0})));
  EXPECT_TRUE(testing::allclose(ge.dgamma, Tensor::from_vector({1}, {0.0f})));  // x0 = mean
  EXPECT_TRUE(testing::allclose(ge.dbeta, Tensor::from_vector({1}, {1.0f})));
  // Training: xhat = (x - 2.5) / sqrt(1.25);
  // dx = gamma invstd (dy - mean(dy) - xhat mean(dy xhat)).
  const ops::BatchNormResult tr = ops::batch_norm_forward(x, gamma, beta, rm, rv, true, 0.1f, 0);
  const ops::BatchNormGrads gt = ops::batch_norm_backward(dy, x, gamma, tr, true);
  const float inv = 1.0f / std::sqrt(1.25f);
  const float xh[4] = {-1.5f * inv, -0.5f * inv, 0.5f * inv, 1.5f * inv};
  std::vector<float> dx(4);
  for (int i = 0; i < 4; ++i) dx[i] = 2 * inv * ((i == 0 ? 1 : 0) - 0.25f - xh[i] * xh[0] / 4);
  EXPECT_TRUE(testing::allclose(gt.dx, Tensor::from_vector({4, 1}, dx)));
  EXPECT_TRUE(testing::allclose(gt.dgamma, Tensor::from_vector({1}, {xh[0]})));
  EXPECT_TRUE(testing::allclose(gt.dbeta, Tensor::from_vector({1}, {1.0f})));
}

TEST(BatchNorm, GradchecksInBothModes) {
  ops::CpuKernelsGuard reference(ops::CpuKernels::reference);
  for (const Shape& shape : {Shape{6, 3}, Shape{3, 2, 3, 2}}) {
    const std::int64_t C = shape[1];
    for (const bool training : {true, false}) {
      Tensor x = testing::random_tensor(shape, 90, -1.0f, 2.0f).set_requires_grad(true);
      Tensor gamma = testing::random_tensor({C}, 91, 0.5f, 1.5f).set_requires_grad(true);
      Tensor beta = testing::random_tensor({C}, 92).set_requires_grad(true);
      const Tensor rm = testing::random_tensor({C}, 93);
      const Tensor rv = testing::random_tensor({C}, 94, 0.5f, 1.5f);
      EXPECT_TRUE(testing::gradcheck(
          [&](const std::vector<Tensor>& in) {
            Tensor m = rm.clone(), v = rv.clone();
            return batch_norm(in[0], in[1], in[2], m, v, training, 0.1f, kEps);
          },
          {x, gamma, beta}))
          << shape_str(shape) << " training=" << training;
    }
  }
}

TEST(BatchNorm, BadArgumentsThrow) {
  const Tensor x = testing::random_tensor({4, 3, 2, 2}, 1);
  const Tensor g = Tensor::full({3}, 1.0f), b = Tensor::zeros({3});
  Tensor rm = Tensor::zeros({3}), rv = Tensor::full({3}, 1.0f);
  EXPECT_THROW(ops::batch_norm_forward(x.view({4, 3, 4}), g, b, rm, rv, true, 0.1f, kEps),
               InvalidArgument);
  EXPECT_THROW(ops::batch_norm_forward(x, Tensor::full({4}, 1.0f), b, rm, rv, true, 0.1f, kEps),
               InvalidArgument);
  Tensor rm4 = Tensor::zeros({4});
  EXPECT_THROW(ops::batch_norm_forward(x, g, b, rm4, rv, false, 0.1f, kEps), InvalidArgument);
  EXPECT_THROW(ops::batch_norm_forward(x, g, b, rm, rv, true, 1.5f, kEps), InvalidArgument);
  // One value per channel: the batch variance is undefined.
  EXPECT_THROW(ops::batch_norm_forward(testing::random_tensor({1, 3}, 2), g, b, rm, rv, true,
                                       0.1f, kEps),
               InvalidArgument);
  const ops::BatchNormResult r = ops::batch_norm_forward(x, g, b, rm, rv, true, 0.1f, kEps);
  EXPECT_THROW(ops::batch_norm_backward(x.view({4, 12}), x, g, r, true), InvalidArgument);
  ops::BatchNormResult missing = r;
  missing.save_invstd = Tensor();
  EXPECT_THROW(ops::batch_norm_backward(x, x, g, missing, true), InvalidArgument);
}

// LRN by PyTorch's definition, in double.
Tensor naive_lrn(const Tensor& x, const ops::LrnParams& p) {
  const std::int64_t N = x.size(0), C = x.size(1), HW = x.size(2) * x.size(3);
  Tensor y = Tensor::empty(x.shape());
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t c = 0; c < C; ++c)
      for (std::int64_t i = 0; i < HW; ++i) {
        double s = 0.0;
        for (std::int64_t cc = c - p.size / 2; cc <= c + (p.size - 1) / 2; ++cc)
          if (cc >= 0 && cc < C) {
            const double v = x.f32()[(n * C + cc) * HW + i];
            s += v * v;
          }
        const double v = x.f32()[(n * C + c) * HW + i];
        y.f32()[(n * C + c) * HW + i] =
            static_cast<float>(v / std::pow(p.k + p.alpha / static_cast<double>(p.size) * s,
                                            static_cast<double>(p.beta)));
      }
  return y;
}

TEST(Lrn, ValuesByHand) {
  ops::CpuKernelsGuard reference(ops::CpuKernels::reference);
  ops::LrnParams p;
  p.size = 3;
  p.alpha = 3.0f;  // alpha / size = 1
  p.beta = 1.0f;
  p.k = 1.0f;
  // Windows: {0,1}: 1+4 -> 6; {0,1,2}: 14 -> 15; {1,2}: 13 -> 14.
  const Tensor x = Tensor::from_vector({1, 3, 1, 1}, {1, 2, 3});
  EXPECT_TRUE(testing::allclose(
      ops::lrn_forward(x, p), Tensor::from_vector({1, 3, 1, 1}, {1.0f / 6, 2.0f / 15, 3.0f / 14})));
}

TEST(Lrn, MatchesDefinitionAndGradcheck) {
  ops::CpuKernelsGuard reference(ops::CpuKernels::reference);
  for (const std::int64_t size : {5, 9, 4, 1}) {
    ops::LrnParams p;
    p.size = size;
    p.alpha = 1.5f;
    p.beta = 0.75f;
    p.k = 2.0f;
    Tensor x = testing::random_tensor({2, 11, 2, 3}, 100 + static_cast<std::uint64_t>(size))
                   .set_requires_grad(true);
    EXPECT_TRUE(testing::allclose(ops::lrn_forward(x.detach(), p), naive_lrn(x, p)))
        << "size " << size;
    EXPECT_TRUE(testing::gradcheck(
        [p](const std::vector<Tensor>& in) { return lrn(in[0], p); }, {x}))
        << "size " << size;
  }
}

TEST(Lrn, BadArgumentsThrow) {
  const Tensor x = testing::random_tensor({2, 4, 3, 3}, 1);
  ops::LrnParams p;
  EXPECT_THROW(ops::lrn_forward(x.view({2, 36}), p), InvalidArgument);
  ops::LrnParams empty_window;
  empty_window.size = 0;
  EXPECT_THROW(ops::lrn_forward(x, empty_window), InvalidArgument);
  const Tensor y = ops::lrn_forward(x, p);
  EXPECT_THROW(ops::lrn_backward(y.view({2, 4, 9, 1}), x, y, p), InvalidArgument);
}

}  // namespace
}  // namespace epoch
