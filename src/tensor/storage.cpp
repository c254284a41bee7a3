// Storage lifetime and cross-device copies.
#include "epoch/tensor/storage.h"

#include <cstring>

#include "tensor/cpu_allocator.h"
#include "tensor/cuda_memory.h"

namespace epoch {

Storage::Storage(std::size_t nbytes, Device device) : nbytes_(nbytes), device_(device) {
  data_ = device.is_cpu() ? cpu_allocator::allocate(nbytes)
                          : cuda_memory::allocate(nbytes, device.index);
}

Storage::~Storage() {
  if (device_.is_cpu())
    cpu_allocator::release(data_, nbytes_);
  else
    cuda_memory::release(data_, nbytes_, device_.index);
}

namespace memory {

void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device,
                std::size_t nbytes) {
  if (nbytes == 0) return;
  if (dst_device.is_cpu() && src_device.is_cpu()) {
    std::memcpy(dst, src, nbytes);
    return;
  }
  using cuda_memory::CopyKind;
  const CopyKind kind = src_device.is_cpu()   ? CopyKind::host_to_device
                        : dst_device.is_cpu() ? CopyKind::device_to_host
                                              : CopyKind::device_to_device;
  cuda_memory::copy(dst, src, nbytes, kind);
}

std::size_t cpu_bytes_reserved() { return cpu_allocator::bytes_reserved(); }
void cpu_release_cached() { cpu_allocator::release_cached(); }
int cuda_device_count() { return cuda_memory::device_count(); }
bool cuda_available() { return cuda_device_count() > 0; }
std::size_t cuda_bytes_reserved() { return cuda_memory::bytes_reserved(); }
std::size_t cuda_malloc_count() { return cuda_memory::malloc_count(); }
void cuda_release_cached() { cuda_memory::release_cached(); }

}  // namespace memory
}  // namespace epoch
