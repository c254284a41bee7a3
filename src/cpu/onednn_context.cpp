// The oneDNN engine, per-thread streams and the LRU primitive cache (see onednn_context.h).
#include "cpu/onednn_context.h"

#include <omp.h>

#include <cstdlib>
#include <list>
#include <mutex>
#include <unordered_map>

#include "cpu/isa_onednn.h"

namespace epoch::cpu::onednn {

dnnl::engine& engine() {
  static dnnl::engine e = [] {
    apply_cpu_isa_cap();
    return dnnl::engine(dnnl::engine::kind::cpu, 0);
  }();
  return e;
}

dnnl::stream& stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

SerialIfSmall::SerialIfSmall(std::int64_t work) {
  if (work < kSerialWork && omp_get_max_threads() > 1) {
    previous_ = omp_get_max_threads();
    omp_set_num_threads(1);
  }
}

SerialIfSmall::~SerialIfSmall() {
  if (previous_ > 0) omp_set_num_threads(previous_);
}

Key::Key(const char* op) : s_(op) { add(omp_get_max_threads()); }

Key& Key::add(std::int64_t v) {
  s_ += ':';
  s_ += std::to_string(v);
  return *this;
}

Key& Key::add(std::initializer_list<std::int64_t> vs) {
  for (std::int64_t v : vs) add(v);
  return *this;
}

namespace {
std::size_t initial_capacity() {
  const char* env = std::getenv("EPOCH_ONEDNN_CACHE_CAPACITY");
  const long v = env != nullptr ? std::strtol(env, nullptr, 10) : 0;
  return v > 0 ? static_cast<std::size_t>(v) : 512;
}
}  // namespace

struct PrimitiveCache::Impl {
  using Order = std::list<std::pair<std::string, std::shared_ptr<const void>>>;
  mutable std::mutex mutex;
  Order order;  // most recently used first
  std::unordered_map<std::string, Order::iterator> index;
  std::size_t capacity = initial_capacity();
  std::int64_t hits = 0, misses = 0;

  void trim() {
    while (order.size() > capacity) {
      index.erase(order.back().first);
      order.pop_back();
    }
  }
};

PrimitiveCache::PrimitiveCache() : impl_(std::make_unique<Impl>()) {}

PrimitiveCache& PrimitiveCache::instance() {
  static PrimitiveCache cache;
  return cache;
}

std::shared_ptr<const void> PrimitiveCache::get(
    const std::string& key, const std::function<std::shared_ptr<const void>()>& make) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  auto it = impl_->index.find(key);
  if (it != impl_->index.end()) {
    ++impl_->hits;
    impl_->order.splice(impl_->order.begin(), impl_->order, it->second);
    return it->second->second;
  }
  ++impl_->misses;
  std::shared_ptr<const void> entry = make();
  impl_->order.emplace_front(key, entry);
  impl_->index[key] = impl_->order.begin();
  impl_->trim();
  return entry;
}

void PrimitiveCache::set_capacity(std::size_t capacity) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->capacity = capacity > 0 ? capacity : 1;
  impl_->trim();
}

std::size_t PrimitiveCache::size() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->order.size();
}

void PrimitiveCache::clear() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->order.clear();
  impl_->index.clear();
}

std::int64_t PrimitiveCache::hits() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->hits;
}

std::int64_t PrimitiveCache::misses() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->misses;
}

std::string impl_name(const dnnl::primitive_desc_base& pd) {
  return std::string("onednn:") + pd.impl_info_str();
}

Relayout::Relayout(const dnnl::memory::desc& f, const dnnl::memory::desc& t)
    : needed(f != t), from(f), to(t) {
  if (!needed) return;
  const dnnl::reorder::primitive_desc pd(engine(), f, engine(), t, primitive_attr());
  prim = dnnl::reorder(pd);
  impl = std::string("onednn:reorder:") + pd.impl_info_str();
}

void* CallScratch::get(std::size_t nbytes) {
  buffers_.push_back(std::make_unique<Scratch>(nbytes));
  return buffers_.back()->data();
}

dnnl::primitive_attr primitive_attr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

namespace {
void* thread_scratchpad(std::size_t nbytes) {
  thread_local std::unique_ptr<Scratch> buffer;
  thread_local std::size_t capacity = 0;
  if (nbytes > capacity) {
    buffer.reset();  // back to the allocator before the larger one is taken
    buffer = std::make_unique<Scratch>(nbytes);
    capacity = nbytes;
  }
  return buffer->data();
}
}  // namespace

void run(const dnnl::primitive& prim, std::unordered_map<int, dnnl::memory> args) {
  const dnnl_memory_desc_t* md =
      dnnl_primitive_desc_query_md(prim.get_primitive_desc(), dnnl_query_scratchpad_md, 0);
  if (md != nullptr) {
    const dnnl::memory::desc scratchpad(*md);
    if (scratchpad.get_size() > 0)
      args.emplace(DNNL_ARG_SCRATCHPAD,
                   dnnl::memory(scratchpad, engine(), thread_scratchpad(scratchpad.get_size())));
  }
  prim.execute(stream(), args);
}

dnnl::memory input(const Relayout& r, const void* p, CallScratch& scratch) {
  if (!r.needed) return wrap(r.from, p);
  dnnl::memory out(r.to, engine(), scratch.get(r.to.get_size()));
  dnnl::memory in = wrap(r.from, p);
  kernels::note_impl(r.impl);
  run(r.prim, {{DNNL_ARG_FROM, in}, {DNNL_ARG_TO, out}});
  return out;
}

dnnl::memory output(const Relayout& r, void* p, CallScratch& scratch) {
  if (!r.needed) return wrap(r.to, p);
  return dnnl::memory(r.from, engine(), scratch.get(r.from.get_size()));
}

void output_done(const Relayout& r, dnnl::memory& produced, void* p) {
  if (!r.needed) return;
  dnnl::memory user = wrap(r.to, p);
  kernels::note_impl(r.impl);
  run(r.prim, {{DNNL_ARG_FROM, produced}, {DNNL_ARG_TO, user}});
}

dnnl::memory::desc plain_md(const dnnl::memory::dims& dims) {
  dnnl::memory::dims strides(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * dims[i + 1];
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, strides);
}

dnnl::memory::desc any_md(const dnnl::memory::dims& dims) {
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, dnnl::memory::format_tag::any);
}

dnnl::memory::desc nchw_md(const dnnl::memory::dims& dims, std::int64_t block) {
  using tag = dnnl::memory::format_tag;
  if (block == 0) return plain_md(dims);
  EPOCH_CHECK(dims.size() == 4 && (block == 8 || block == 16) && dims[1] % block == 0,
              "oneDNN: channel block ", block, " for ", dims.size(), "-d dims");
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32,
                            block == 8 ? tag::nChw8c : tag::nChw16c);
}

std::int64_t channel_block_of(const dnnl::memory::desc& md) {
  const dnnl::memory::dims dims = md.dims();
  if (dims.size() != 4 || md.data_type() != dnnl::memory::data_type::f32) return 0;
  for (std::int64_t block : {8, 16})
    if (dims[1] % block == 0 && md == nchw_md(dims, block)) return block;
  return 0;
}

}  // namespace epoch::cpu::onednn
