// The fixed partition of a batch (fixed_parts.h).
#include "cpu/fixed_parts.h"

#include <omp.h>

#include <algorithm>
#include <exception>
#include <numeric>

#include "epoch/tensor/error.h"
#include "kernels/impl_note.h"

namespace epoch::cpu {

std::vector<Part> fixed_parts(std::int64_t n) {
  EPOCH_CHECK(n >= 1, "fixed_parts: a batch of ", n, " samples");
  const std::int64_t parts = std::min(n, kMaxFixedParts);
  std::vector<Part> out(static_cast<std::size_t>(parts));
  std::int64_t begin = 0;
  for (std::int64_t p = 0; p < parts; ++p) {
    const std::int64_t count = n / parts + (p < n % parts ? 1 : 0);
    out[static_cast<std::size_t>(p)] = {begin, count};
    begin += count;
  }
  return out;
}

std::vector<Part> fixed_tiles(std::int64_t n) {
  EPOCH_CHECK(n >= 1, "fixed_tiles: ", n, " rows");
  constexpr std::int64_t kMinTile = 32, kAlign = 16;
  const std::int64_t wanted = std::clamp<std::int64_t>(n / kMinTile, 1, kMaxFixedTiles);
  const std::int64_t size = (n + wanted - 1) / wanted;
  const std::int64_t tile = wanted == 1 ? n : (size + kAlign - 1) / kAlign * kAlign;
  std::vector<Part> out;
  for (std::int64_t begin = 0; begin < n; begin += tile)
    out.push_back({begin, std::min(tile, n - begin)});
  return out;
}

void for_each_part(std::size_t parts, const std::function<void(std::size_t)>& body) {
  const int threads = omp_get_max_threads();
  std::string* const sink = kernels::t_impl_sink;
  std::exception_ptr failure;
  const auto run = [&](std::size_t i) {
    try {
      body(i);
    } catch (...) {
#pragma omp critical(epoch_fixed_parts_failure)
      if (!failure) failure = std::current_exception();
    }
  };
  const int team =
      static_cast<int>(std::min<std::size_t>(parts, static_cast<std::size_t>(threads)));
#pragma omp parallel num_threads(team)
  {
    omp_set_num_threads(1);
    const bool calling_thread = omp_get_thread_num() == 0;
    // Static schedule: the first chunk, part 0, goes to the calling thread.
#pragma omp for schedule(static)
    for (std::size_t i = 0; i < parts; ++i) {
      if (calling_thread) kernels::t_impl_sink = i == 0 ? sink : nullptr;
      run(i);
    }
  }
  kernels::t_impl_sink = sink;
  omp_set_num_threads(threads);
  if (failure) std::rethrow_exception(failure);
}

OneThread::OneThread() : previous_(omp_get_max_threads()) { omp_set_num_threads(1); }
OneThread::~OneThread() { omp_set_num_threads(previous_); }

void sum_parts(std::span<const float* const> partials, std::span<const std::size_t> order,
               float* out, std::int64_t n) {
  std::vector<std::size_t> in_order(partials.size());
  if (order.empty())
    std::iota(in_order.begin(), in_order.end(), std::size_t{0});
  else
    in_order.assign(order.begin(), order.end());
  EPOCH_CHECK(in_order.size() == partials.size(), "sum_parts: an order of ", in_order.size(),
              " parts for ", partials.size());
  if (partials.empty()) return;
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    float acc = partials[in_order[0]][i];
    for (std::size_t p = 1; p < in_order.size(); ++p) acc += partials[in_order[p]][i];
    out[i] = acc;
  }
}

std::vector<std::size_t> shuffled_order(std::size_t parts, std::uint64_t key) {
  std::vector<std::size_t> order(parts);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::uint64_t state = key;
  const auto next = [&] {  // splitmix64
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  for (std::size_t i = parts; i > 1; --i) std::swap(order[i - 1], order[next() % i]);
  return order;
}

}  // namespace epoch::cpu
