// Device memory for CUDA tensors: a caching allocator over cudaMalloc (free lists per rounded
// size and device, like the CPU allocator) and copies through the CUDA runtime. Built into the
// tensor layer only when EPOCH_WITH_CUDA is 1; otherwise allocations and copies throw
// BackendUnavailable. Plain C++ so that .cu files may include it.
#pragma once

#include <cstddef>

namespace epoch::cuda_memory {

/// A block of at least nbytes on `device`, reused from the cache when one of the same rounded
/// size is free. All work runs on the legacy default stream, so a block freed by one op and
/// handed to the next is ordered after the kernels that used it.
void* allocate(std::size_t nbytes, int device);
/// Returns a block from allocate(nbytes, device) to the cache (no cudaFree).
void release(void* ptr, std::size_t nbytes, int device);
/// Bytes held from cudaMalloc (live + cached), over every device.
std::size_t bytes_reserved();
/// Number of cudaMalloc calls so far (for tests and memory reports).
std::size_t malloc_count();
/// cudaFree of every cached, unused block.
void release_cached();

enum class CopyKind { host_to_device, device_to_host, device_to_device };
void copy(void* dst, const void* src, std::size_t nbytes, CopyKind kind);
int device_count();

}  // namespace epoch::cuda_memory
