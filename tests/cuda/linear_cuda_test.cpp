// CUDA matmul, dense layer and bias add (cuBLAS and own kernels): hand values, determinism of
// the bias reduction, autograd through CUDA tensors, mixed devices rejected. (CUDA against the
// CPU reference is in the parity table.)
#include <gtest/gtest.h>

#include "cuda/cuda_testing.h"
#include "epoch/autograd/functions.h"
#include "epoch/ops/linear.h"
#include "testing/testing.h"

namespace epoch {
namespace {

using testing::allclose;
using testing::on_cuda;
using testing::random_tensor;
using LinearCuda = testing::CudaParityTest;

TEST_F(LinearCuda, MatmulHandValues) {
  // (2, 3) x (3, 2) = [[1*1+2*3+3*5, 1*2+2*4+3*6], [4*1+5*3+6*5, 4*2+5*4+6*6]].
  const Tensor a = Tensor::from_vector({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor b = Tensor::from_vector({3, 2}, {1, 2, 3, 4, 5, 6});
  EXPECT_TRUE(
      allclose(ops::matmul(on_cuda(a), on_cuda(b)), Tensor::from_vector({2, 2}, {22, 28, 49, 64})));
}

TEST_F(LinearCuda, BiasGradientIsIdenticalRunToRun) {
  const Tensor dy = on_cuda(random_tensor({64, 16, 9, 9}, 13));
  const std::vector<float> first = ops::bias_add_backward(dy).to_vector();
  for (int run = 0; run < 3; ++run) EXPECT_EQ(ops::bias_add_backward(dy).to_vector(), first);
}

TEST_F(LinearCuda, AutogradThroughCudaTensorsMatchesCpu) {
  const Tensor x0 = random_tensor({8, 10}, 14), w0 = random_tensor({4, 10}, 15);
  const Tensor b0 = random_tensor({4}, 16), r = random_tensor({8, 4}, 17);
  auto run = [&](Device d) {
    Tensor x = x0.to(d).clone().set_requires_grad(true);
    Tensor w = w0.to(d).clone().set_requires_grad(true);
    Tensor b = b0.to(d).clone().set_requires_grad(true);
    sum(mul(linear(x, w, b), r.to(d))).backward();
    return std::vector<Tensor>{x.grad(), w.grad(), b.grad()};
  };
  const std::vector<Tensor> e = run(Device::cpu()), a = run(Device::cuda());
  for (std::size_t i = 0; i < e.size(); ++i) {
    ASSERT_TRUE(a[i].defined());
    EXPECT_TRUE(a[i].device().is_cuda());
    EXPECT_TRUE(allclose(a[i], e[i], 1e-4f, 1e-4f)) << "gradient " << i;
  }
}

TEST_F(LinearCuda, MixedDevicesAreRejected) {
  const Tensor a = random_tensor({3, 4}, 18), b = random_tensor({4, 5}, 19);
  EXPECT_THROW(ops::matmul(on_cuda(a), b), InvalidArgument);
  EXPECT_THROW(ops::linear_forward(on_cuda(a), random_tensor({2, 4}, 20), Tensor()),
               InvalidArgument);
  EXPECT_THROW(ops::matmul(on_cuda(a), on_cuda(a)), InvalidArgument);  // (3, 4) x (3, 4)
}

}  // namespace
}  // namespace epoch
