// CUDA runtime allocation and copies (see cuda_memory.h); stubs that throw without CUDA.
#include "tensor/cuda_memory.h"

#include "epoch/tensor/error.h"

#if EPOCH_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace epoch::cuda_memory {

#if EPOCH_WITH_CUDA

namespace {
void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) EPOCH_THROW(BackendError, what, ": ", cudaGetErrorString(status));
}
}  // namespace

void* allocate(std::size_t nbytes, int device) {
  check(cudaSetDevice(device), "cudaSetDevice");
  void* p = nullptr;
  check(cudaMalloc(&p, nbytes == 0 ? 1 : nbytes), "cudaMalloc");
  return p;
}

void release(void* ptr, int device) {
  if (ptr == nullptr) return;
  cudaSetDevice(device);
  cudaFree(ptr);
}

void copy(void* dst, const void* src, std::size_t nbytes, CopyKind kind) {
  const cudaMemcpyKind k = kind == CopyKind::host_to_device   ? cudaMemcpyHostToDevice
                           : kind == CopyKind::device_to_host ? cudaMemcpyDeviceToHost
                                                              : cudaMemcpyDeviceToDevice;
  check(cudaMemcpy(dst, src, nbytes, k), "cudaMemcpy");
}

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" error
    return 0;
  }
  return n;
}

#else

void* allocate(std::size_t, int) {
  EPOCH_THROW(BackendUnavailable, "this build of epoch has no CUDA support");
}
void release(void*, int) {}
void copy(void*, const void*, std::size_t, CopyKind) {
  EPOCH_THROW(BackendUnavailable, "this build of epoch has no CUDA support");
}
int device_count() { return 0; }

#endif

}  // namespace epoch::cuda_memory
