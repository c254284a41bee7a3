// CUDA pooling against the CPU reference: max (with TensorFlow-style asymmetric padding; the
// argmax indices and the gradient must match bit for bit), average with and without padding
// in the divisor, global average; and the rejection of foreign max-pool indices.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "cuda/cuda_testing.h"
#include "epoch/ops/pool.h"
#include "testing/testing.h"

namespace epoch {
namespace {

using testing::allclose;
using testing::on_cuda;
using testing::random_tensor;
using PoolCuda = testing::CudaParityTest;

std::vector<ops::Pool2dParams> params() {
  ops::Pool2dParams plain;  // 2x2 stride 2
  ops::Pool2dParams same;   // TensorFlow "same" 3x3 stride 2 on an even size: pad 0 top, 1 bottom
  same.kernel_h = same.kernel_w = 3;
  same.pad_bottom = same.pad_right = 1;
  same.count_include_pad = false;
  ops::Pool2dParams overlapping;  // 3x3 stride 1, symmetric padding
  overlapping.kernel_h = overlapping.kernel_w = 3;
  overlapping.stride_h = overlapping.stride_w = 1;
  overlapping.pad_top = overlapping.pad_bottom = overlapping.pad_left = overlapping.pad_right = 1;
  return {plain, same, overlapping};
}

std::vector<std::int32_t> ints(const Tensor& t) {
  const Tensor c = t.to(Device::cpu());
  return {c.data<std::int32_t>(), c.data<std::int32_t>() + c.numel()};
}

TEST_F(PoolCuda, MaxPoolMatchesCpuExactly) {
  const Tensor x = random_tensor({2, 3, 10, 10}, 500);
  for (const ops::Pool2dParams& p : params()) {
    const ops::MaxPoolResult e = ops::max_pool2d_forward(x, p);
    const ops::MaxPoolResult a = ops::max_pool2d_forward(on_cuda(x), p);
    ASSERT_TRUE(a.y.device().is_cuda());
    EXPECT_EQ(a.y.to_vector(), e.y.to_vector());
    EXPECT_EQ(ints(a.indices), ints(e.indices));
    const Tensor dy = random_tensor(e.y.shape(), 501);
    const Tensor dx = ops::max_pool2d_backward(on_cuda(dy), on_cuda(x), a, p);
    EXPECT_EQ(dx.to_vector(), ops::max_pool2d_backward(dy, x, e, p).to_vector());
  }
}

TEST_F(PoolCuda, AvgPoolMatchesCpu) {
  const Tensor x = random_tensor({2, 3, 10, 10}, 502);
  for (ops::Pool2dParams p : params()) {
    for (bool include_pad : {true, false}) {
      p.count_include_pad = include_pad;
      const Tensor y = ops::avg_pool2d_forward(x, p);
      EXPECT_TRUE(allclose(ops::avg_pool2d_forward(on_cuda(x), p), y, 1e-6f, 1e-5f));
      const Tensor dy = random_tensor(y.shape(), 503);
      EXPECT_TRUE(allclose(ops::avg_pool2d_backward(on_cuda(dy), x.shape(), p),
                           ops::avg_pool2d_backward(dy, x.shape(), p), 1e-6f, 1e-5f));
    }
  }
}

TEST_F(PoolCuda, AvgPoolHandValues) {
  // 1x1x2x2 input, 2x2 window with one row of padding below: the divisor is 4 or 2.
  const Tensor x = Tensor::from_vector({1, 1, 2, 2}, {1, 2, 3, 4});
  ops::Pool2dParams p;
  p.stride_h = p.stride_w = 1;
  p.pad_bottom = 1;
  p.count_include_pad = true;
  EXPECT_TRUE(allclose(ops::avg_pool2d_forward(on_cuda(x), p),
                       Tensor::from_vector({1, 1, 2, 1}, {2.5f, 1.75f})));
  p.count_include_pad = false;
  EXPECT_TRUE(allclose(ops::avg_pool2d_forward(on_cuda(x), p),
                       Tensor::from_vector({1, 1, 2, 1}, {2.5f, 3.5f})));
}

TEST_F(PoolCuda, GlobalAvgPoolMatchesCpu) {
  const Tensor x = random_tensor({3, 5, 7, 9}, 504);
  EXPECT_TRUE(allclose(ops::global_avg_pool2d_forward(on_cuda(x)),
                       ops::global_avg_pool2d_forward(x), 1e-6f, 1e-5f));
  const Tensor dy = random_tensor({3, 5}, 505);
  EXPECT_TRUE(allclose(ops::global_avg_pool2d_backward(on_cuda(dy), x.shape()),
                       ops::global_avg_pool2d_backward(dy, x.shape())));
}

TEST_F(PoolCuda, ForeignMaxPoolIndicesAreRejected) {
  const Tensor x = on_cuda(random_tensor({1, 2, 4, 4}, 506));
  const ops::Pool2dParams p;
  ops::MaxPoolResult fwd = ops::max_pool2d_forward(x, p);
  const Tensor dy = on_cuda(random_tensor({1, 2, 2, 2}, 507));
  fwd.indices = Tensor::zeros({1, 2, 2, 2}, DType::f32, Device::cuda());  // not i32 positions
  EXPECT_THROW(ops::max_pool2d_backward(dy, x, fwd, p), InvalidArgument);
}

}  // namespace
}  // namespace epoch
