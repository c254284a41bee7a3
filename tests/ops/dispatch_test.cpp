// ops::dispatch: which slot of a Kernels table runs for each device and CPU kernel choice, and
// the BackendUnavailable error for a device without a kernel.
#include "ops/dispatch.h"

#include <gtest/gtest.h>

#include <string>

#include "epoch/ops/backend.h"

namespace epoch {
namespace {

// Runs a table whose slots record their names and returns the name that ran.
std::string ran(Device d, bool with_fast, bool fast_if, bool with_cuda) {
  std::string name;
  auto cpu = [&] { name = "cpu"; };
  auto fast = [&] { name = "fast"; };
  auto cuda = [&] { name = "cuda"; };
  ops::Kernels k{.cpu = cpu};
  if (with_fast) k.fast = fast;
  k.fast_if = fast_if;
  if (with_cuda) k.cuda = cuda;
  ops::dispatch("test_op", d, k);
  return name;
}

TEST(Dispatch, CpuTakesTheFastPathOnlyWhenSelectedAndItsConditionHolds) {
  {
    ops::CpuKernelsGuard guard(ops::CpuKernels::fast);
    EXPECT_EQ(ran(Device::cpu(), true, true, true), "fast");
    EXPECT_EQ(ran(Device::cpu(), true, false, true), "cpu");
    EXPECT_EQ(ran(Device::cpu(), false, true, true), "cpu");
  }
  ops::CpuKernelsGuard guard(ops::CpuKernels::reference);
  EXPECT_EQ(ran(Device::cpu(), true, true, true), "cpu");
}

TEST(Dispatch, CudaRunsItsSlot) { EXPECT_EQ(ran(Device::cuda(), true, true, true), "cuda"); }

TEST(Dispatch, DeviceWithoutKernelThrowsBackendUnavailable) {
  try {
    ran(Device::cuda(), true, true, false);
    FAIL() << "no exception";
  } catch (const BackendUnavailable& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "test_op: no implementation for device cuda:0 (this build has no CUDA backend)"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace epoch
