// CUDA pooling: average-pooling hand values and the rejection of foreign max-pool indices.
// (CUDA against the CPU reference, argmax indices bit for bit, is in the parity table.)
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
