// Size-bucketed free lists over aligned_alloc; see cpu_allocator.h.
#include "tensor/cpu_allocator.h"

#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

namespace epoch::cpu_allocator {
namespace {

constexpr std::size_t kAlignment = 64;

struct Cache {
  std::mutex mutex;
  std::unordered_map<std::size_t, std::vector<void*>> free_blocks;
  std::size_t reserved = 0;

  ~Cache() {
    for (auto& [size, blocks] : free_blocks)
      for (void* p : blocks) std::free(p);
  }
};

Cache& cache() {
  static Cache* instance = new Cache();  // never destroyed: tensors may outlive statics
  return *instance;
}

// Rounds up so that nearly equal sizes share a bucket: 64 B granules below 64 KiB, 4 KiB above.
std::size_t bucket_size(std::size_t nbytes) {
  const std::size_t granule = nbytes < (64u << 10) ? kAlignment : 4096u;
  const std::size_t n = nbytes == 0 ? 1 : nbytes;
  return (n + granule - 1) / granule * granule;
}

}  // namespace

void* allocate(std::size_t nbytes) {
  const std::size_t size = bucket_size(nbytes);
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    auto it = c.free_blocks.find(size);
    if (it != c.free_blocks.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      return p;
    }
  }
  void* p = std::aligned_alloc(kAlignment, size);
  if (p == nullptr) {
    release_cached();
    p = std::aligned_alloc(kAlignment, size);
    if (p == nullptr) throw std::bad_alloc();
  }
  std::lock_guard<std::mutex> lock(c.mutex);
  c.reserved += size;
  return p;
}

void release(void* ptr, std::size_t nbytes) {
  if (ptr == nullptr) return;
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  c.free_blocks[bucket_size(nbytes)].push_back(ptr);
}

std::size_t bytes_reserved() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.reserved;
}

void release_cached() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  for (auto& [size, blocks] : c.free_blocks) {
    for (void* p : blocks) std::free(p);
    c.reserved -= size * blocks.size();
    blocks.clear();
  }
}

}  // namespace epoch::cpu_allocator
