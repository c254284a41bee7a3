// CUDA batch norm and LRN: determinism, hand values, autograd through CUDA tensors, mixed
// devices rejected. (CUDA against the CPU reference, training and eval, is in the parity
// table.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "cuda/cuda_testing.h"
#include "epoch/autograd/functions.h"
#include "epoch/ops/norm.h"
#include "testing/testing.h"

namespace epoch {
namespace {

using testing::allclose;
using testing::on_cuda;
using testing::random_tensor;
using NormCuda = testing::CudaParityTest;

constexpr float kAtol = 1e-5f, kRtol = 1e-5f;
constexpr float kMomentum = 0.1f, kEps = 1e-5f;

TEST_F(NormCuda, BatchNormIsDeterministic) {
  const Tensor x = on_cuda(random_tensor({10, 2, 30, 30}, 1300));
  const Tensor gamma = on_cuda(Tensor::full({2}, 1.0f)), beta = on_cuda(Tensor::zeros({2}));
  auto run = [&] {
    Tensor rm = on_cuda(Tensor::zeros({2})), rv = on_cuda(Tensor::full({2}, 1.0f));
    const ops::BatchNormResult r =
        ops::batch_norm_forward(x, gamma, beta, rm, rv, true, kMomentum, kEps);
    const ops::BatchNormGrads g = ops::batch_norm_backward(x, x, gamma, r, true);
    return std::vector<std::vector<float>>{r.y.to_vector(), rv.to_vector(), g.dx.to_vector(),
                                           g.dgamma.to_vector()};
  };
  EXPECT_EQ(run(), run());
}

TEST_F(NormCuda, BatchNormHandValues) {
  // Channel 0: 1 2 3 4 (mean 2.5, biased var 1.25, unbiased 5/3); gamma 1, beta 0.
  const Tensor x = on_cuda(Tensor::from_vector({4, 1}, {1, 2, 3, 4}));
  Tensor rm = on_cuda(Tensor::zeros({1})), rv = on_cuda(Tensor::full({1}, 1.0f));
  const ops::BatchNormResult r = ops::batch_norm_forward(
      x, on_cuda(Tensor::full({1}, 1.0f)), on_cuda(Tensor::zeros({1})), rm, rv, true, 0.1f, 0.0f);
  const float s = 1.0f / std::sqrt(1.25f);
  EXPECT_TRUE(
      allclose(r.y, Tensor::from_vector({4, 1}, {-1.5f * s, -0.5f * s, 0.5f * s, 1.5f * s})));
  EXPECT_TRUE(allclose(rm, Tensor::from_vector({1}, {0.25f})));
  EXPECT_TRUE(allclose(rv, Tensor::from_vector({1}, {0.9f + 0.1f * 5.0f / 3.0f})));
}

TEST_F(NormCuda, LrnHandValue) {
  // Two channels, size 2: channel 0's window is {0} (c - 1 is outside), channel 1's {0, 1}.
  ops::LrnParams p;
  p.size = 2;
  p.alpha = 2.0f;  // alpha / size = 1
  p.beta = 1.0f;
  p.k = 1.0f;
  const Tensor x = on_cuda(Tensor::from_vector({1, 2, 1, 1}, {1.0f, 2.0f}));
  // y0 = 1 / (1 + 1) = 0.5; y1 = 2 / (1 + 1 + 4) = 1/3.
  EXPECT_TRUE(
      allclose(ops::lrn_forward(x, p), Tensor::from_vector({1, 2, 1, 1}, {0.5f, 1.0f / 3.0f})));
}

TEST_F(NormCuda, AutogradThroughCudaTensorsMatchesCpu) {
  const Tensor x0 = random_tensor({4, 3, 6, 6}, 1500), r = random_tensor({4, 3, 6, 6}, 1501);
  const Tensor g0 = random_tensor({3}, 1502, 0.5f, 1.5f), b0 = random_tensor({3}, 1503);
  ops::LrnParams p;
  p.alpha = 0.3f;
  auto run = [&](Device d) {
    Tensor x = x0.to(d).clone().set_requires_grad(true);
    Tensor gamma = g0.to(d).clone().set_requires_grad(true);
    Tensor beta = b0.to(d).clone().set_requires_grad(true);
    Tensor rm = Tensor::zeros({3}, DType::f32, d), rv = Tensor::full({3}, 1.0f, d);
    sum(mul(lrn(batch_norm(x, gamma, beta, rm, rv, true, kMomentum, kEps), p), r.to(d))).backward();
    return std::vector<Tensor>{x.grad(), gamma.grad(), beta.grad(), rm, rv};
  };
  const std::vector<Tensor> a = run(Device::cuda()), e = run(Device::cpu());
  for (std::size_t i = 0; i < a.size(); ++i)
    EXPECT_TRUE(allclose(a[i], e[i], kAtol, 1e-4f)) << "output " << i;
}

TEST_F(NormCuda, MixedDevicesAreRejected) {
  const Tensor x = random_tensor({4, 2}, 1600);
  Tensor rm = on_cuda(Tensor::zeros({2})), rv = on_cuda(Tensor::full({2}, 1.0f));
  EXPECT_THROW(ops::batch_norm_forward(x, on_cuda(Tensor::full({2}, 1.0f)),
                                       on_cuda(Tensor::zeros({2})), rm, rv, true, 0.1f, kEps),
               InvalidArgument);
  const Tensor x4 = random_tensor({1, 2, 2, 2}, 1601);
  EXPECT_THROW(ops::lrn_backward(on_cuda(x4), x4, x4, ops::LrnParams{}), InvalidArgument);
}

}  // namespace
}  // namespace epoch
