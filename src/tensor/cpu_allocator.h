// The CPU caching allocator: 64-byte aligned blocks kept in per-size free lists, so the
// same-shaped buffers of every training step are recycled instead of returned to the system.
#pragma once

#include <cstddef>

namespace epoch::cpu_allocator {
void* allocate(std::size_t nbytes);
void release(void* ptr, std::size_t nbytes);
std::size_t bytes_reserved();
void release_cached();
}  // namespace epoch::cpu_allocator
