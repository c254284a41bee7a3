// CUDA activations, clipping and softmax against the CPU reference on random inputs (kept
// away from the kinks), plus hand values and autograd through a CUDA tensor.
#include <gtest/gtest.h>

#include <cmath>
#include <initializer_list>
#include <vector>

#include "cuda/cuda_testing.h"
#include "epoch/autograd/functions.h"
#include "epoch/ops/activation.h"
#include "testing/testing.h"

namespace epoch {
namespace {

using testing::allclose;
using testing::on_cuda;
using testing::random_away_from_zero;
using testing::random_tensor;
using ActivationCuda = testing::CudaParityTest;

constexpr float kAtol = 1e-6f, kRtol = 1e-5f;

// x (a CPU tensor) with every value moved at least `gap` away from each kink, so that the
// two devices cannot fall on different sides of one.
Tensor away_from(Tensor x, std::initializer_list<float> kinks, float gap = 0.01f) {
  float* p = x.f32();
  for (std::int64_t i = 0; i < x.numel(); ++i)
    for (float k : kinks)
      if (std::fabs(p[i] - k) < gap) p[i] = p[i] < k ? k - gap : k + gap;
  return x;
}

TEST_F(ActivationCuda, ReluSigmoidTanhMatchCpu) {
  const Tensor x = random_away_from_zero({7, 33}, 600, 0.05f, 6.0f);
  const Tensor dy = random_tensor({7, 33}, 601);
  const Tensor xc = on_cuda(x), dyc = on_cuda(dy);
  EXPECT_TRUE(allclose(ops::relu_forward(xc), ops::relu_forward(x)));
  EXPECT_TRUE(allclose(ops::relu_backward(dyc, xc), ops::relu_backward(dy, x)));
  const Tensor s = ops::sigmoid_forward(x), t = ops::tanh_forward(x);
  EXPECT_TRUE(allclose(ops::sigmoid_forward(xc), s, kAtol, kRtol));
  EXPECT_TRUE(allclose(ops::sigmoid_backward(dyc, on_cuda(s)), ops::sigmoid_backward(dy, s),
                       kAtol, kRtol));
  EXPECT_TRUE(allclose(ops::tanh_forward(xc), t, kAtol, kRtol));
  EXPECT_TRUE(allclose(ops::tanh_backward(dyc, on_cuda(t)), ops::tanh_backward(dy, t), kAtol,
                       kRtol));
}

TEST_F(ActivationCuda, HardSigmoidAndClipMatchCpu) {
  // Kinks: 0.2x + 0.5 is 0 or 1 at x = -2.5, 2.5; 0.5x + 0.1 at -0.2, 1.8; the clip bounds.
  const Tensor x = away_from(random_tensor({5, 41}, 602, -4.0f, 4.0f),
                             {-2.5f, 2.5f, -0.2f, 1.8f, -1.5f, 2.0f});
  const Tensor dy = random_tensor({5, 41}, 603);
  const Tensor xc = on_cuda(x), dyc = on_cuda(dy);
  EXPECT_TRUE(allclose(ops::hard_sigmoid_forward(xc), ops::hard_sigmoid_forward(x), kAtol, kRtol));
  EXPECT_TRUE(allclose(ops::hard_sigmoid_backward(dyc, xc), ops::hard_sigmoid_backward(dy, x),
                       kAtol, kRtol));
  EXPECT_TRUE(allclose(ops::hard_sigmoid_forward(xc, 0.5f, 0.1f),
                       ops::hard_sigmoid_forward(x, 0.5f, 0.1f), kAtol, kRtol));
  EXPECT_TRUE(allclose(ops::clip_forward(xc, -1.5f, 2.0f), ops::clip_forward(x, -1.5f, 2.0f)));
  EXPECT_TRUE(allclose(ops::clip_backward(dyc, xc, -1.5f, 2.0f),
                       ops::clip_backward(dy, x, -1.5f, 2.0f)));
}

TEST_F(ActivationCuda, SoftmaxMatchesCpu) {
  // K below, at and above a warp's 32 lanes.
  for (std::int64_t K : {1, 10, 32, 1000}) {
    const Tensor x = random_tensor({9, K}, 604 + static_cast<std::uint64_t>(K), -8.0f, 8.0f);
    EXPECT_TRUE(allclose(ops::softmax_forward(on_cuda(x)), ops::softmax_forward(x), 1e-7f, 1e-5f))
        << "K " << K;
  }
}

TEST_F(ActivationCuda, HandValues) {
  const Tensor x = on_cuda(Tensor::from_vector({4}, {-2.0f, -0.5f, 0.5f, 3.0f}));
  EXPECT_TRUE(allclose(ops::relu_forward(x), Tensor::from_vector({4}, {0, 0, 0.5f, 3.0f})));
  EXPECT_TRUE(allclose(ops::clip_forward(x, -1.0f, 1.0f),
                       Tensor::from_vector({4}, {-1.0f, -0.5f, 0.5f, 1.0f})));
  EXPECT_TRUE(allclose(ops::hard_sigmoid_forward(x),
                       Tensor::from_vector({4}, {0.1f, 0.4f, 0.6f, 1.0f})));
  // Softmax of a large row stays finite: exp is taken of x - max only.
  const Tensor big = on_cuda(Tensor::from_vector({1, 2}, {1000.0f, 1000.0f}));
  EXPECT_TRUE(allclose(ops::softmax_forward(big), Tensor::from_vector({1, 2}, {0.5f, 0.5f})));
}

TEST_F(ActivationCuda, AutogradThroughCudaTensorsMatchesCpu) {
  const Tensor x0 = random_away_from_zero({6, 7}, 605), r = random_tensor({6, 7}, 606);
  auto run = [&](Device d) {
    Tensor x = x0.to(d).clone().set_requires_grad(true);
    sum(mul(tanh(sigmoid(relu(x))), r.to(d))).backward();
    return x.grad();
  };
  EXPECT_TRUE(allclose(run(Device::cuda()), run(Device::cpu()), kAtol, kRtol));
}

TEST_F(ActivationCuda, MixedDevicesAreRejected) {
  const Tensor x = random_tensor({3}, 607);
  EXPECT_THROW(ops::relu_backward(on_cuda(x), x), InvalidArgument);
}

}  // namespace
}  // namespace epoch
