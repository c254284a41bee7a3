// ops::dispatch: which slot of a Kernels table runs for each device and CPU kernel choice, the
// BackendUnavailable error for a device without a kernel, and what a KernelTrace records.
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

// The impl a trace records for one dispatch of a table (the fast slot and the cpu slot may each
// name what they ran).
std::string traced(bool with_fast, bool fast_if, const char* fast_note, const char* cpu_note) {
  auto cpu = [&] {
    if (cpu_note != nullptr) kernels::note_impl(cpu_note);
  };
  auto fast = [&] {
    if (fast_note != nullptr) kernels::note_impl(fast_note);
  };
  ops::Kernels k{.cpu = cpu};
  if (with_fast) k.fast = fast;
  k.fast_if = fast_if;
  ops::KernelTrace trace;
  ops::dispatch("test_op", Device::cpu(), k);
  EXPECT_EQ(trace.records().size(), 1u);
  EXPECT_EQ(trace.records().at(0).op, "test_op");
  return trace.records().at(0).impl;
}

TEST(Dispatch, KernelTraceRecordsTheImplementationThatRan) {
  ops::CpuKernelsGuard guard(ops::CpuKernels::fast);
  EXPECT_EQ(traced(true, true, "onednn:jit:avx2", nullptr), "onednn:jit:avx2");
  EXPECT_EQ(traced(true, true, nullptr, nullptr), "epoch:fast");
  EXPECT_EQ(traced(true, false, "onednn:jit:avx2", nullptr), "reference");  // declined
  EXPECT_EQ(traced(false, true, nullptr, nullptr), "epoch:cpu");
  // A CPU kernel that picks its own implementation (max-pool backward) is recorded by name.
  EXPECT_EQ(traced(false, true, nullptr, "onednn:jit:uni"), "onednn:jit:uni");
  {
    ops::CpuKernelsGuard reference(ops::CpuKernels::reference);
    EXPECT_EQ(traced(true, true, "onednn:jit:avx2", nullptr), "reference");
  }
  // Several names in one call are joined; nothing is recorded without a trace.
  auto two = [] {
    kernels::note_impl("onednn:reorder:jit:uni");
    kernels::note_impl("onednn:brg:avx512_core");
  };
  {
    ops::KernelTrace trace;
    ops::dispatch("two", Device::cpu(), {.cpu = two, .fast = two});
    ASSERT_EQ(trace.records().size(), 1u);
    EXPECT_EQ(trace.records()[0].impl, "onednn:reorder:jit:uni + onednn:brg:avx512_core");
  }
  EXPECT_EQ(ops::KernelTrace::active(), nullptr);
  ops::dispatch("untraced", Device::cpu(), {.cpu = two, .fast = two});
}

TEST(Dispatch, AnInnerTraceTakesOverUntilItEnds) {
  auto none = [] {};
  ops::KernelTrace outer;
  ops::dispatch("a", Device::cpu(), {.cpu = none});
  {
    ops::KernelTrace inner;
    ops::dispatch("b", Device::cpu(), {.cpu = none});
    ASSERT_EQ(inner.records().size(), 1u);
    EXPECT_EQ(inner.records()[0].op, "b");
  }
  ops::dispatch("c", Device::cpu(), {.cpu = none});
  ASSERT_EQ(outer.records().size(), 2u);
  EXPECT_EQ(outer.records()[1].op, "c");
}

TEST(Dispatch, IsReferenceImplTellsTheSlowOnes) {
  for (const char* slow :
       {"reference", "onednn:ref:any", "onednn:lrn_ref:any", "onednn:simple_nchw:any",
        "onednn:reorder:simple:any", "onednn:jit:avx2 + onednn:reorder:simple:any"})
    EXPECT_TRUE(ops::is_reference_impl(slow)) << slow;
  for (const char* fast :
       {"epoch:cpu", "epoch:fast", "epoch:sigmoid_vexp", "epoch:bias_sum", "onednn:jit:avx512_core",
        "onednn:brg:avx512_core", "onednn:gemm:jit", "onednn:reorder:jit:uni + onednn:jit:avx2"})
    EXPECT_FALSE(ops::is_reference_impl(fast)) << fast;
}

}  // namespace
}  // namespace epoch
