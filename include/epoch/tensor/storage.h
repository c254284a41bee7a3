// Storage: a reference-counted block of bytes on one device. CPU blocks are 64-byte aligned
// and come from a caching allocator, so a training step reuses last step's activation buffers
// instead of mapping and faulting fresh pages; CUDA blocks come from a caching allocator too,
// so a step makes no cudaMalloc/cudaFree calls.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "epoch/tensor/device.h"

namespace epoch {

/// A block of bytes owned by its allocator; freed (returned to the cache) with the last owner.
class Storage {
 public:
  Storage(std::size_t nbytes, Device device);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  std::size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

 private:
  void* data_ = nullptr;
  std::size_t nbytes_ = 0;
  Device device_;
};

/// One visible CUDA device, as `epoch info` prints it.
struct CudaDeviceInfo {
  std::string name;
  std::size_t total_bytes = 0;
  int cc_major = 0, cc_minor = 0;  // compute capability
  int multiprocessors = 0;
  std::string driver;   // the CUDA driver's version, "13.0"
  std::string runtime;  // the CUDA runtime epoch was built with, "13.0"
};

namespace memory {
/// Copies nbytes between any two devices (host<->device copies synchronize).
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device,
                std::size_t nbytes);
/// Bytes held by the CPU caching allocator (live + cached), for memory reports.
std::size_t cpu_bytes_reserved();
/// Returns every cached, unused CPU block to the system.
void cpu_release_cached();
/// True when this build has CUDA and at least one device is visible.
bool cuda_available();
/// Number of visible CUDA devices (0 without CUDA).
int cuda_device_count();
/// Every visible CUDA device (empty without CUDA or without a device).
std::vector<CudaDeviceInfo> cuda_devices();
/// Bytes held by the CUDA caching allocator (live + cached, all devices); 0 without CUDA.
std::size_t cuda_bytes_reserved();
/// cudaMalloc calls made so far by the caching allocator (a training step should add none).
std::size_t cuda_malloc_count();
/// Returns every cached, unused CUDA block to the driver.
void cuda_release_cached();
}  // namespace memory

}  // namespace epoch
