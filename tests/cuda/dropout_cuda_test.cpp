// CUDA dropout draws the same mask as the CPU for the same (seed, key, index), so a model
// trained on either device drops the same units.
#include <gtest/gtest.h>

#include <vector>

#include "cuda/cuda_testing.h"
#include "epoch/ops/dropout.h"
#include "testing/testing.h"

namespace epoch {
namespace {

using testing::on_cuda;
using testing::random_tensor;
using DropoutCuda = testing::CudaParityTest;

TEST_F(DropoutCuda, MaskAndOutputEqualTheCpuExactly) {
  // 1003 elements: the last Philox group of four is incomplete.
  const Tensor x = random_tensor({17, 59}, 800);
  for (float p : {0.0f, 0.25f, 0.5f, 0.9f}) {
    SCOPED_TRACE(p);
    const ops::DropoutResult e = ops::dropout_forward(x, p, 42, 7);
    const ops::DropoutResult a = ops::dropout_forward(on_cuda(x), p, 42, 7);
    ASSERT_TRUE(a.y.device().is_cuda());
    EXPECT_EQ(a.mask.to_vector(), e.mask.to_vector());
    EXPECT_EQ(a.y.to_vector(), e.y.to_vector());
    const Tensor dy = random_tensor(x.shape(), 801);
    EXPECT_EQ(ops::dropout_backward(on_cuda(dy), a.mask).to_vector(),
              ops::dropout_backward(dy, e.mask).to_vector());
  }
}

TEST_F(DropoutCuda, KeyChangesTheMask) {
  const Tensor x = on_cuda(random_tensor({4096}, 802));
  EXPECT_NE(ops::dropout_forward(x, 0.5f, 42, 1).mask.to_vector(),
            ops::dropout_forward(x, 0.5f, 42, 2).mask.to_vector());
}

}  // namespace
}  // namespace epoch
