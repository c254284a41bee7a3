// Helpers for the CUDA tests: skip without a device, and put a tensor on CUDA. (CUDA against
// the CPU reference, op by op, is the parity table: testing/parity.h.)
#pragma once

#include <gtest/gtest.h>

#include "epoch/ops/backend.h"
#include "epoch/tensor/storage.h"
#include "epoch/tensor/tensor.h"

/// Skips the current test (reporting why) when no CUDA device is visible.
#define EPOCH_REQUIRE_CUDA()                                                  \
  do {                                                                        \
    if (!::epoch::memory::cuda_available()) GTEST_SKIP() << "no CUDA device"; \
  } while (0)

namespace epoch::testing {

/// The tensor on cuda:0 (a copy).
inline Tensor on_cuda(const Tensor& t) { return t.to(Device::cuda()); }

/// Fixture for the CUDA tests: skips without a device, and makes any CPU side use the plain
/// reference kernels (the oracle) rather than oneDNN.
class CudaParityTest : public ::testing::Test {
 protected:
  void SetUp() override { EPOCH_REQUIRE_CUDA(); }

 private:
  ops::CpuKernelsGuard reference_{ops::CpuKernels::reference};
};

}  // namespace epoch::testing
