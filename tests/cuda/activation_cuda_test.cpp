// CUDA activations, clipping and softmax: hand values, autograd through a CUDA tensor, mixed
// devices rejected. (CUDA against the CPU reference is in the parity table.)
#include <gtest/gtest.h>

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

TEST_F(ActivationCuda, HandValues) {
  const Tensor x = on_cuda(Tensor::from_vector({4}, {-2.0f, -0.5f, 0.5f, 3.0f}));
  EXPECT_TRUE(allclose(ops::relu_forward(x), Tensor::from_vector({4}, {0, 0, 0.5f, 3.0f})));
  EXPECT_TRUE(allclose(ops::clip_forward(x, -1.0f, 1.0f),
                       Tensor::from_vector({4}, {-1.0f, -0.5f, 0.5f, 1.0f})));
  EXPECT_TRUE(
      allclose(ops::hard_sigmoid_forward(x), Tensor::from_vector({4}, {0.1f, 0.4f, 0.6f, 1.0f})));
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
