// CUDA shape ops: upsampling hand values, sum_to_shape's determinism and hand values, autograd
// through CUDA tensors. (CUDA against the CPU, bit for bit where the additions are the same, is
// in the parity table.)
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "cuda/cuda_testing.h"
#include "epoch/autograd/functions.h"
#include "epoch/ops/elementwise.h"
#include "epoch/ops/shape_ops.h"
#include "testing/testing.h"

namespace epoch {
namespace {

using testing::allclose;
using testing::on_cuda;
using testing::random_tensor;
using ShapeOpsCuda = testing::CudaParityTest;

TEST_F(ShapeOpsCuda, UpsampleHandValues) {
  const Tensor x = on_cuda(Tensor::from_vector({1, 1, 1, 2}, {1.0f, 2.0f}));
  EXPECT_TRUE(allclose(ops::upsample_nearest2x_forward(x),
                       Tensor::from_vector({1, 1, 2, 4}, {1, 1, 2, 2, 1, 1, 2, 2})));
  const Tensor dy = on_cuda(Tensor::from_vector({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_TRUE(allclose(ops::upsample_nearest2x_backward(dy),
                       Tensor::from_vector({1, 1, 1, 2}, {14.0f, 22.0f})));
}

TEST_F(ShapeOpsCuda, SumToShapeIsDeterministicAndHandChecked) {
  const Tensor x = on_cuda(random_tensor({8, 4, 32, 32}, 1740));
  EXPECT_EQ(ops::sum_to_shape(x, {4, 1, 1}).to_vector(),
            ops::sum_to_shape(x, {4, 1, 1}).to_vector());
  const Tensor m = on_cuda(Tensor::from_vector({2, 3}, {1, 2, 3, 4, 5, 6}));
  EXPECT_TRUE(allclose(ops::sum_to_shape(m, {3}), Tensor::from_vector({3}, {5, 7, 9})));
  EXPECT_TRUE(allclose(ops::sum_to_shape(m, {2, 1}), Tensor::from_vector({2, 1}, {6, 15})));
  EXPECT_THROW(ops::sum_to_shape(m, {2}), InvalidArgument);
}

TEST_F(ShapeOpsCuda, AutogradThroughCudaTensorsMatchesCpu) {
  // Broadcasting add and mul (their backward reduces with sum_to_shape), concat, slice and
  // upsampling, all on CUDA tensors.
  const Tensor x0 = random_tensor({2, 3, 4, 4}, 1750), b0 = random_tensor({1, 3, 1, 1}, 1751);
  const Tensor r = random_tensor({2, 5, 8, 8}, 1752);
  auto run = [&](Device d) {
    Tensor x = x0.to(d).clone().set_requires_grad(true);
    Tensor b = b0.to(d).clone().set_requires_grad(true);
    const Tensor h = mul(add(x, b), b);
    const Tensor c = concat({h, slice(x, 1, 1, 2)}, 1);
    sum(mul(upsample_nearest2x(c), r.to(d))).backward();
    return std::vector<Tensor>{x.grad(), b.grad()};
  };
  const std::vector<Tensor> a = run(Device::cuda()), e = run(Device::cpu());
  for (std::size_t i = 0; i < a.size(); ++i)
    EXPECT_TRUE(allclose(a[i], e[i], 1e-6f, 1e-5f)) << "gradient " << i;
}

}  // namespace
}  // namespace epoch
