// Device memory for CUDA tensors: allocation and copies through the CUDA runtime. Built into
// the tensor layer only when EPOCH_WITH_CUDA is 1; otherwise every call throws
// BackendUnavailable.
#pragma once

#include <cstddef>

namespace epoch::cuda_memory {
void* allocate(std::size_t nbytes, int device);
void release(void* ptr, int device);
enum class CopyKind { host_to_device, device_to_host, device_to_device };
void copy(void* dst, const void* src, std::size_t nbytes, CopyKind kind);
int device_count();
}  // namespace epoch::cuda_memory
