// CUDA shape ops against the CPU: 2x nearest upsampling forward and backward (bit for bit: the
// same additions in the same order), concat/slice/slice_backward through strided device
// copies, and sum_to_shape's device reduction over every kind of reduced dimension.
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

TEST_F(ShapeOpsCuda, UpsampleMatchesCpuExactly) {
  for (const Shape& shape : std::vector<Shape>{{1, 1, 1, 1}, {2, 3, 5, 7}, {3, 4, 16, 33}}) {
    SCOPED_TRACE(shape_str(shape));
    const Tensor x = random_tensor(shape, 1700);
    const Tensor y = ops::upsample_nearest2x_forward(on_cuda(x));
    ASSERT_TRUE(y.device().is_cuda());
    EXPECT_EQ(y.to_vector(), ops::upsample_nearest2x_forward(x).to_vector());
    const Tensor dy = random_tensor(y.shape(), 1701);
    EXPECT_EQ(ops::upsample_nearest2x_backward(on_cuda(dy)).to_vector(),
              ops::upsample_nearest2x_backward(dy).to_vector());
  }
}

TEST_F(ShapeOpsCuda, UpsampleHandValues) {
  const Tensor x = on_cuda(Tensor::from_vector({1, 1, 1, 2}, {1.0f, 2.0f}));
  EXPECT_TRUE(allclose(ops::upsample_nearest2x_forward(x),
                       Tensor::from_vector({1, 1, 2, 4}, {1, 1, 2, 2, 1, 1, 2, 2})));
  const Tensor dy = on_cuda(Tensor::from_vector({1, 1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_TRUE(allclose(ops::upsample_nearest2x_backward(dy),
                       Tensor::from_vector({1, 1, 1, 2}, {14.0f, 22.0f})));
}

TEST_F(ShapeOpsCuda, ConcatAndSliceMatchCpuExactly) {
  const Tensor a = random_tensor({3, 2, 4, 5}, 1710), b = random_tensor({3, 5, 4, 5}, 1711);
  for (std::int64_t dim : {0, 1, 3}) {
    SCOPED_TRACE(dim);
    const Tensor a2 = dim == 0 ? random_tensor({1, 2, 4, 5}, 1712)
                      : dim == 3 ? random_tensor({3, 2, 4, 2}, 1713)
                                 : a;
    const Tensor b2 = dim == 1 ? b : a;
    const Tensor c = ops::concat({a2, b2}, dim);
    const Tensor cd = ops::concat({on_cuda(a2), on_cuda(b2)}, dim);
    ASSERT_TRUE(cd.device().is_cuda());
    EXPECT_EQ(cd.to_vector(), c.to_vector());
    const std::int64_t start = 1, length = c.size(dim) - 2;
    const Tensor s = ops::slice(c, dim, start, length);
    const Tensor sd = ops::slice(cd, dim, start, length);
    EXPECT_EQ(sd.to_vector(), s.to_vector());
    const Tensor dy = random_tensor(s.shape(), 1714);
    EXPECT_EQ(ops::slice_backward(on_cuda(dy), c.shape(), dim, start).to_vector(),
              ops::slice_backward(dy, c.shape(), dim, start).to_vector());
  }
}

struct SumToCase {
  Shape x, target;
};

TEST_F(ShapeOpsCuda, SumToShapeMatchesCpu) {
  const std::vector<SumToCase> cases = {
      {{4, 5}, {}},                   // everything, few values: a thread per output
      {{16, 10}, {10}},               // a bias over the batch
      {{16, 10}, {16, 1}},            // over the last dimension
      {{6, 3, 20, 20}, {1, 3, 1, 1}},  // per channel over N, H, W: a block per output
      {{6, 3, 20, 20}, {3, 1, 1}},    // the same, target with fewer dimensions
      {{6, 3, 20, 20}, {6, 1, 20, 1}},
      {{2, 300, 2}, {300, 1}},        // many outputs, few inputs each
      {{70000, 2}, {70000, 1}},       // more outputs than the block kernel takes
      {{300, 1, 4}, {1, 4}},          // a size-1 dimension between reduced and kept ones
      {{3, 0, 4}, {1, 0, 4}},         // empty
  };
  std::uint64_t seed = 1720;
  for (const SumToCase& c : cases) {
    SCOPED_TRACE(shape_str(c.x) + " -> " + shape_str(c.target));
    const Tensor x = random_tensor(c.x, seed++);
    const Tensor e = ops::sum_to_shape(x, c.target);
    const Tensor a = ops::sum_to_shape(on_cuda(x), c.target);
    ASSERT_TRUE(a.device().is_cuda());
    EXPECT_TRUE(allclose(a, e, 1e-6f, 1e-6f));
  }
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
