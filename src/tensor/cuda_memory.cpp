// The CUDA caching allocator, copies and device queries (see cuda_memory.h); stubs that throw
// (or report no device) without CUDA.
#include "tensor/cuda_memory.h"

#include <vector>

#include "epoch/tensor/error.h"
#include "epoch/tensor/storage.h"

#if EPOCH_WITH_CUDA
#include <cuda_runtime.h>

#include <mutex>
#include <unordered_map>
#include <utility>
#endif

namespace epoch::cuda_memory {

#if EPOCH_WITH_CUDA

namespace {

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) EPOCH_THROW(BackendError, what, ": ", cudaGetErrorString(status));
}

struct Cache {
  std::mutex mutex;
  // free_blocks[device][rounded size] = cached blocks of that size.
  std::vector<std::unordered_map<std::size_t, std::vector<void*>>> free_blocks;
  std::size_t reserved = 0;
  std::size_t mallocs = 0;

  std::unordered_map<std::size_t, std::vector<void*>>& lists(int device) {
    if (static_cast<std::size_t>(device) >= free_blocks.size())
      free_blocks.resize(static_cast<std::size_t>(device) + 1);
    return free_blocks[static_cast<std::size_t>(device)];
  }
};

Cache& cache() {
  // Never destroyed: tensors may outlive statics, and cudaFree after the runtime has shut down
  // at exit would fail. The driver reclaims everything when the process ends.
  static Cache* instance = new Cache();
  return *instance;
}

// Rounds up so that nearly equal sizes share a list: 512 B granules below 1 MiB, 128 KiB above
// (at most 1/8 wasted on a 1 MiB block, less on larger ones).
std::size_t bucket_size(std::size_t nbytes) {
  const std::size_t granule = nbytes < (std::size_t{1} << 20) ? 512u : (std::size_t{128} << 10);
  const std::size_t n = nbytes == 0 ? 1 : nbytes;
  return (n + granule - 1) / granule * granule;
}

// cudaFree of every cached block on `device` (all devices when device < 0); caller holds the lock.
void free_cached_locked(Cache& c, int device) {
  int current = 0;
  cudaGetDevice(&current);
  for (std::size_t d = 0; d < c.free_blocks.size(); ++d) {
    if (device >= 0 && static_cast<int>(d) != device) continue;
    bool switched = false;
    for (auto& [size, blocks] : c.free_blocks[d]) {
      if (blocks.empty()) continue;
      if (!switched) {
        cudaSetDevice(static_cast<int>(d));
        switched = true;
      }
      for (void* p : blocks) cudaFree(p);
      c.reserved -= size * blocks.size();
      blocks.clear();
    }
  }
  cudaSetDevice(current);
}

}  // namespace

void* allocate(std::size_t nbytes, int device) {
  check(cudaSetDevice(device), "cudaSetDevice");
  const std::size_t size = bucket_size(nbytes);
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  auto& lists = c.lists(device);
  auto it = lists.find(size);
  if (it != lists.end() && !it->second.empty()) {
    void* p = it->second.back();
    it->second.pop_back();
    return p;
  }
  void* p = nullptr;
  cudaError_t status = cudaMalloc(&p, size);
  if (status == cudaErrorMemoryAllocation) {
    // Out of memory: give the cached blocks of this device back and try once more.
    cudaGetLastError();
    free_cached_locked(c, device);
    status = cudaMalloc(&p, size);
  }
  if (status != cudaSuccess) {
    cudaGetLastError();
    EPOCH_THROW(BackendError, "cudaMalloc of ", size, " bytes on cuda:", device, " failed: ",
                cudaGetErrorString(status), " (", c.reserved, " bytes already reserved)");
  }
  c.reserved += size;
  ++c.mallocs;
  return p;
}

void release(void* ptr, std::size_t nbytes, int device) {
  if (ptr == nullptr) return;
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.lists(device)[bucket_size(nbytes)].push_back(ptr);
}

std::size_t bytes_reserved() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.reserved;
}

std::size_t malloc_count() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.mallocs;
}

void release_cached() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  free_cached_locked(c, -1);
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
void release(void*, std::size_t, int) {}
std::size_t bytes_reserved() { return 0; }
std::size_t malloc_count() { return 0; }
void release_cached() {}
void copy(void*, const void*, std::size_t, CopyKind) {
  EPOCH_THROW(BackendUnavailable, "this build of epoch has no CUDA support");
}
int device_count() { return 0; }

#endif

}  // namespace epoch::cuda_memory

namespace epoch::memory {

std::vector<CudaDeviceInfo> cuda_devices() {
  std::vector<CudaDeviceInfo> out;
#if EPOCH_WITH_CUDA
  const int n = cuda_memory::device_count();
  for (int i = 0; i < n; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) {
      cudaGetLastError();
      continue;
    }
    CudaDeviceInfo info;
    info.name = prop.name;
    info.total_bytes = prop.totalGlobalMem;
    info.cc_major = prop.major;
    info.cc_minor = prop.minor;
    info.multiprocessors = prop.multiProcessorCount;
    int driver = 0, runtime = 0;
    if (cudaDriverGetVersion(&driver) != cudaSuccess) cudaGetLastError();
    if (cudaRuntimeGetVersion(&runtime) != cudaSuccess) cudaGetLastError();
    const auto version = [](int v) {
      return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
    };
    info.driver = version(driver);
    info.runtime = version(runtime);
    out.push_back(std::move(info));
  }
#endif
  return out;
}

}  // namespace epoch::memory
