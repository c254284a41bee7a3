// CUDA storage: host/device round trips, the caching allocator's reuse of freed blocks, and
// the device list. Device tests skip themselves without a GPU; the rest run everywhere.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "cuda/cuda_testing.h"
#include "testing/testing.h"

namespace epoch {
namespace {

TEST(CudaMemory, DeviceListMatchesDeviceCount) {
  const std::vector<CudaDeviceInfo> devices = memory::cuda_devices();
  EXPECT_EQ(static_cast<int>(devices.size()), memory::cuda_device_count());
  for (const CudaDeviceInfo& d : devices) {
    EXPECT_FALSE(d.name.empty());
    EXPECT_GT(d.total_bytes, 0u);
    EXPECT_GE(d.cc_major, 1);
    EXPECT_GT(d.multiprocessors, 0);
  }
}

TEST(CudaMemory, AllocatingWithoutADeviceThrows) {
  if (memory::cuda_available()) GTEST_SKIP() << "a CUDA device is present";
  EXPECT_THROW(Tensor::empty({4}, DType::f32, Device::cuda()), Error);
  EXPECT_EQ(memory::cuda_bytes_reserved(), 0u);
}

TEST(CudaMemory, F32RoundTripIsExact) {
  EPOCH_REQUIRE_CUDA();
  const Tensor x = testing::random_tensor({3, 5, 7}, 11);
  const Tensor d = testing::on_cuda(x);
  EXPECT_TRUE(d.device().is_cuda());
  EXPECT_EQ(d.shape(), x.shape());
  const Tensor back = d.to(Device::cpu());
  EXPECT_EQ(back.to_vector(), x.to_vector());
  // A device-to-device clone and a strided narrow0 view travel too.
  EXPECT_EQ(d.clone().to_vector(), x.to_vector());
  EXPECT_EQ(d.narrow0(1, 2).to_vector(), x.narrow0(1, 2).to_vector());
}

TEST(CudaMemory, I32RoundTripAndCopyFrom) {
  EPOCH_REQUIRE_CUDA();
  const std::vector<std::int32_t> v = {3, -1, 7, 2147483647};
  const Tensor x = Tensor::from_ints({4}, v);
  Tensor d = Tensor::zeros({4}, DType::i32, Device::cuda());
  EXPECT_EQ(d.to_vector(), std::vector<float>(4, 0.0f));
  d.copy_from(x);
  const Tensor back = d.to(Device::cpu());
  for (std::size_t i = 0; i < v.size(); ++i) EXPECT_EQ(back.data<std::int32_t>()[i], v[i]);
}

TEST(CudaMemory, FillAndFullOnDevice) {
  EPOCH_REQUIRE_CUDA();
  const Tensor t = Tensor::full({2, 3}, 1.5f, Device::cuda());
  EXPECT_EQ(t.to_vector(), std::vector<float>(6, 1.5f));
}

TEST(CudaMemory, FreedBlocksAreReusedWithoutCudaMalloc) {
  EPOCH_REQUIRE_CUDA();
  const void* first = nullptr;
  {
    const Tensor a = Tensor::empty({1000}, DType::f32, Device::cuda());
    first = a.raw();
  }
  const std::size_t mallocs = memory::cuda_malloc_count();
  const std::size_t reserved = memory::cuda_bytes_reserved();
  for (int step = 0; step < 5; ++step) {
    // A "training step": the same shapes as before, so every block comes from the cache.
    const Tensor a = Tensor::empty({1000}, DType::f32, Device::cuda());
    const Tensor b = Tensor::empty({998}, DType::f32, Device::cuda());  // same rounded size
    EXPECT_EQ(a.raw(), first);
    EXPECT_NE(b.raw(), first);
  }
  EXPECT_EQ(memory::cuda_malloc_count(), mallocs + 1);  // only b's first block was new
  EXPECT_GE(memory::cuda_bytes_reserved(), reserved);
  memory::cuda_release_cached();
  EXPECT_LE(memory::cuda_bytes_reserved() + 4096, reserved);  // at least a's cached block went
  // After releasing, a new block needs a fresh cudaMalloc.
  const Tensor c = Tensor::empty({1000}, DType::f32, Device::cuda());
  EXPECT_EQ(memory::cuda_malloc_count(), mallocs + 2);
}

TEST(CudaMemory, DifferentSizesDoNotShareBlocks) {
  EPOCH_REQUIRE_CUDA();
  const Tensor big = Tensor::empty({1 << 20}, DType::f32, Device::cuda());
  const void* p = big.raw();
  const Tensor small = Tensor::empty({16}, DType::f32, Device::cuda());
  EXPECT_NE(small.raw(), p);
}

}  // namespace
}  // namespace epoch
