// Partitions that depend on the problem's size alone, never on the thread count: how
// CpuKernels::strict runs a kernel whose reductions oneDNN splits by thread. fixed_parts cuts
// a batch (the convolution's weight gradient): each part runs on one thread as its own small
// batch, and the parts' partial sums are added in a fixed order (or a seeded one, for
// --perturb order). fixed_tiles cuts a product's output (the dense layers): each tile runs on
// one thread and nothing is added across tiles. Either way the bits are the same at every
// thread count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace epoch::cpu {

/// The most parts a batch splits into: enough for 4 threads, few enough that each part keeps a
/// batch large enough for oneDNN's kernels and the partial sums stay small.
inline constexpr std::int64_t kMaxFixedParts = 4;

struct Part {
  std::int64_t begin = 0;  // the first sample
  std::int64_t count = 0;  // the samples
};

/// n samples in min(n, kMaxFixedParts) runs of consecutive samples, as equal as possible (the
/// first ones a sample longer). requires: n >= 1.
std::vector<Part> fixed_parts(std::int64_t n);

/// The most tiles a product's output splits into (fixed_tiles): 1, 2, 4 and 8 threads share
/// them evenly, 3 nearly so.
inline constexpr std::int64_t kMaxFixedTiles = 8;

/// n output rows (or columns) of a product in tiles that depend on n alone: at most
/// kMaxFixedTiles runs, each at least 32 long, of a multiple of 16 (whole vectors) but the
/// last. Every output element is one tile's whole sum, so nothing is added across tiles.
/// requires: n >= 1.
std::vector<Part> fixed_tiles(std::int64_t n);

/// Runs body(i) for every part i in [0, parts), parallel over the calling thread's OpenMP
/// threads, each part on one thread with OpenMP's thread count set to 1 inside (so oneDNN
/// builds and runs single-threaded primitives). Part 0 runs on the calling thread, the only
/// part whose kernels.note_impl() names reach an active kernel trace. The first exception a
/// part throws is rethrown once every part has ended; the calling thread's thread count is
/// restored.
void for_each_part(std::size_t parts, const std::function<void(std::size_t)>& body);

/// Sets the calling thread's OpenMP thread count to 1 for a scope (a query that must see the
/// single-threaded primitives for_each_part's parts will build) and restores it.
class OneThread {
 public:
  OneThread();
  ~OneThread();
  OneThread(const OneThread&) = delete;
  OneThread& operator=(const OneThread&) = delete;

 private:
  int previous_;
};

/// out[i] = the sum of partials[p][i] over the parts p, added in `order` (a permutation of the
/// parts; empty: 0, 1, 2, ...), for i in [0, n), parallel over i. out may be partials[0].
void sum_parts(std::span<const float* const> partials, std::span<const std::size_t> order,
               float* out, std::int64_t n);

/// A permutation of [0, parts) drawn from key (a splitmix64 stream): --perturb order's
/// summation order for one call.
std::vector<std::size_t> shuffled_order(std::size_t parts, std::uint64_t key);

}  // namespace epoch::cpu
