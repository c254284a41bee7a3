// CUDA dropout: the stream key changes the mask. (That it draws the same mask as the CPU for
// the same (seed, key, index) is in the parity table.)
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

TEST_F(DropoutCuda, KeyChangesTheMask) {
  const Tensor x = on_cuda(random_tensor({4096}, 802));
  EXPECT_NE(ops::dropout_forward(x, 0.5f, 42, 1).mask.to_vector(),
            ops::dropout_forward(x, 0.5f, 42, 2).mask.to_vector());
}

}  // namespace
}  // namespace epoch
