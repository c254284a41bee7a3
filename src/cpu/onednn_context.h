// Shared oneDNN state for the CPU fast path: the engine (one per process), a stream per thread,
// and an LRU cache of primitives keyed by op kind + shapes + parameters (creating a primitive
// costs far more than running a small one). Included only by *_onednn.cpp files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "epoch/tensor/error.h"
#include "epoch/tensor/storage.h"
#include "kernels/impl_note.h"

namespace epoch::cpu::onednn {

/// The process-wide CPU engine.
dnnl::engine& engine();
/// The calling thread's stream on engine() (streams are not meant to be shared by threads).
dnnl::stream& stream();

/// Runs a small problem on one thread: below kSerialWork multiply-adds (or element visits) a
/// parallel region costs more than it saves, and far more when the cores are oversubscribed.
/// Construct it before building a Key (the thread count is part of the key). Restores the
/// calling thread's OpenMP thread count when it goes out of scope.
class SerialIfSmall {
 public:
  static constexpr std::int64_t kSerialWork = 1 << 16;
  explicit SerialIfSmall(std::int64_t work);
  ~SerialIfSmall();
  SerialIfSmall(const SerialIfSmall&) = delete;
  SerialIfSmall& operator=(const SerialIfSmall&) = delete;

 private:
  int previous_ = 0;
};

/// A cache key: the op kind, then integers (shapes, parameters) appended in a fixed order.
/// The thread count is part of every key, since primitives size their work to it.
class Key {
 public:
  explicit Key(const char* op);
  Key& add(std::int64_t v);
  Key& add(std::initializer_list<std::int64_t> vs);
  const std::string& str() const { return s_; }

 private:
  std::string s_;
};

/// Type-erased LRU cache of primitive bundles. Thread-safe; entries are immutable once built.
class PrimitiveCache {
 public:
  static PrimitiveCache& instance();
  /// The entry for key, built with make() on a miss (the oldest entry is evicted when full).
  std::shared_ptr<const void> get(const std::string& key,
                                  const std::function<std::shared_ptr<const void>()>& make);
  void set_capacity(std::size_t capacity);
  std::size_t size() const;
  void clear();
  std::int64_t hits() const;
  std::int64_t misses() const;

 private:
  PrimitiveCache();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The cached bundle of type T for key, built by make() (returning T by value) on a miss.
template <typename T, typename Make>
std::shared_ptr<const T> cached(const Key& key, Make&& make) {
  std::shared_ptr<const void> p = PrimitiveCache::instance().get(
      key.str(), [&]() -> std::shared_ptr<const void> { return std::make_shared<T>(make()); });
  return std::static_pointer_cast<const T>(p);
}

/// A plain (row-major) f32 memory descriptor of the given dims.
dnnl::memory::desc plain_md(const dnnl::memory::dims& dims);
/// An f32 memory descriptor with format `any` (the primitive chooses its layout).
dnnl::memory::desc any_md(const dnnl::memory::dims& dims);
/// An (N, C, H, W) f32 descriptor: row-major for block 0, else channel-blocked nChw8c or
/// nChw16c (Tensor::channel_block).
dnnl::memory::desc nchw_md(const dnnl::memory::dims& dims, std::int64_t block);
/// The channel block (8 or 16) when md is exactly nchw_md(its dims, block), else 0.
std::int64_t channel_block_of(const dnnl::memory::desc& md);

/// Wraps a caller's buffer (no copy) as oneDNN memory of the given descriptor.
inline dnnl::memory wrap(const dnnl::memory::desc& md, const void* p) {
  return dnnl::memory(md, engine(), const_cast<void*>(p));
}

/// A temporary buffer from the caching CPU allocator, for blocked-layout copies.
class Scratch {
 public:
  explicit Scratch(std::size_t nbytes) : storage_(nbytes > 0 ? nbytes : 64, Device::cpu()) {}
  void* data() const { return storage_.data(); }

 private:
  Storage storage_;
};

/// "onednn:" and the name of the implementation oneDNN chose for pd (e.g. "onednn:jit:avx2",
/// "onednn:lrn_ref:any"): what kernels::note_impl() reports and what the no-reference check
/// reads. Bundles keep it, built once with the primitive.
std::string impl_name(const dnnl::primitive_desc_base& pd);

/// A reorder between the caller's layout and a primitive's, or nothing when they agree.
struct Relayout {
  bool needed = false;
  dnnl::memory::desc from, to;
  dnnl::reorder prim;
  std::string impl;  // "onednn:reorder:<implementation>" when needed

  Relayout() = default;
  Relayout(const dnnl::memory::desc& f, const dnnl::memory::desc& t);
};

/// The attributes every epoch primitive is built from: its scratchpad in user mode, so that
/// each call passes one of the calling thread's (run() below). In oneDNN's default mode some
/// kernels (its Winograd convolutions among them) keep their scratchpad in a buffer of the thread
/// that built the primitive; the cache is shared by all threads, and such a primitive run on
/// another thread wrote through that thread's buffer, missing or too small.
dnnl::primitive_attr primitive_attr();

/// Keeps the temporary reordered copies of one call alive until the call returns.
class CallScratch {
 public:
  void* get(std::size_t nbytes);

 private:
  std::vector<std::unique_ptr<Scratch>> buffers_;
};

/// Runs prim on the calling thread's stream with args, plus the scratchpad it asks for (built
/// with primitive_attr()): one buffer per thread, grown to the largest any primitive asked for
/// and reused by each, as oneDNN's own default mode does, so it stays in cache (a buffer per
/// primitive put the several MiB of each Winograd pass's scratchpad through the cache cold).
/// CPU primitives finish before execute() returns, so the buffer is free again then.
void run(const dnnl::primitive& prim, std::unordered_map<int, dnnl::memory> args);

/// The caller's buffer p as the memory a primitive reads: p itself, or a reordered copy.
dnnl::memory input(const Relayout& r, const void* p, CallScratch& scratch);
/// The memory a primitive writes for the caller's buffer p: p itself, or a temporary in the
/// primitive's layout that output_done() then reorders into p.
dnnl::memory output(const Relayout& r, void* p, CallScratch& scratch);
void output_done(const Relayout& r, dnnl::memory& produced, void* p);

/// Runs f, turning a dnnl::error into epoch::BackendError naming the op.
template <typename F>
auto guarded(const char* op, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const dnnl::error& e) {
    EPOCH_THROW(BackendError, op, ": oneDNN error ", static_cast<int>(e.status), ": ", e.what());
  }
}

}  // namespace epoch::cpu::onednn
