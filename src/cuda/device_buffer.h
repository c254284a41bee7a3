// A scratch block of device memory for one call (reduction partials, cuDNN workspaces), taken
// from and returned to the caching allocator, so it costs no cudaMalloc in a training step.
#pragma once

#include <cstddef>

#include "cuda/check_cuda.h"
#include "tensor/cuda_memory.h"

namespace epoch::cuda {

/// Owns nbytes on the current device until destruction. Kernels queued on the default stream
/// before the destructor runs still see the block: a later allocation is ordered after them.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t nbytes) : nbytes_(nbytes) {
    EPOCH_CUDA_CHECK(cudaGetDevice(&device_));
    ptr_ = cuda_memory::allocate(nbytes, device_);
  }
  ~DeviceBuffer() { cuda_memory::release(ptr_, nbytes_, device_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return ptr_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  std::size_t size() const { return nbytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t nbytes_ = 0;
  int device_ = 0;
};

}  // namespace epoch::cuda
