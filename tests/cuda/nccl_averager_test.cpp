// NCCL gradient averaging on a GPU: in one process (NCCL needs a GPU per rank, and a lent
// machine has one) the weighted sum over a single rank is each bucket times its weight, exactly,
// step after step; the times are measured.
#include "epoch/dist/nccl_averager.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "cuda/cuda_testing.h"
#include "testing/testing.h"

namespace epoch::dist {
namespace {

TEST(NcclAverager, WeightsEachBucketAndSumsOverTheRanks) {
  EPOCH_REQUIRE_CUDA();
  if (!nccl_available()) GTEST_SKIP() << "built without NCCL";
  ProcessGroup& group = ProcessGroup::world();
  if (group.size() > memory::cuda_device_count()) GTEST_SKIP() << "fewer GPUs than ranks";
  const Tensor host = testing::random_tensor({3 << 18}, 5);  // 3 MiB of gradients
  const std::int64_t n = host.numel(), half = n / 3;
  NcclAverager averager(group, 0);
  EXPECT_NE(nccl_version().find("NCCL 2."), std::string::npos) << nccl_version();
  for (int step = 0; step < 3; ++step) {
    Tensor d = testing::on_cuda(host);
    averager.add(d.f32(), half, 0.25f);
    averager.add(d.f32() + half, n - half, 0.5f);
    const CommTimes t = averager.finish();
    EXPECT_EQ(t.bytes, n * 4);
    EXPECT_GT(t.busy_s, 0.0);
    EXPECT_GE(t.exposed_s, 0.0);
    const std::vector<float> got = d.to(Device::cpu()).to_vector();
    const float* want = host.f32();
    const float size = static_cast<float>(group.size());  // every rank holds the same values
    for (std::int64_t i = 0; i < n; ++i)
      ASSERT_EQ(got[static_cast<std::size_t>(i)], want[i] * (i < half ? 0.25f : 0.5f) * size)
          << "element " << i << ", step " << step;
  }
  EXPECT_EQ(averager.finish().bytes, 0);  // nothing queued: nothing to wait for
}

}  // namespace
}  // namespace epoch::dist
