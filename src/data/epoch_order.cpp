// The per-epoch sample order: a seeded Fisher-Yates shuffle that depends only on the seed and
// the epoch number.
#include <algorithm>
#include <numeric>

#include "epoch/data/dataset.h"
#include "epoch/tensor/random.h"

namespace epoch::data {
namespace {

constexpr std::uint64_t kShuffleStreamTag = 0x5348554646ull;  // "SHUFF"

}  // namespace

std::vector<std::int64_t> epoch_order(std::int64_t n, std::uint64_t seed, std::int64_t epoch,
                                      bool shuffle) {
  EPOCH_CHECK(n >= 0, "epoch_order: negative sample count ", n);
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), std::int64_t{0});
  if (!shuffle) return order;
  RandomStream rs(seed, mix64(kShuffleStreamTag, static_cast<std::uint64_t>(epoch)));
  for (std::int64_t i = n - 1; i > 0; --i) {
    const auto j = static_cast<std::int64_t>(rs.below(static_cast<std::uint64_t>(i + 1)));
    std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(j)]);
  }
  return order;
}

ShardSlice shard_slice(std::int64_t count, int rank, int world) {
  EPOCH_CHECK(world >= 1 && rank >= 0 && rank < world && count >= 0, "shard_slice: rank ", rank,
              " of ", world, ", count ", count);
  const std::int64_t base = count / world, extra = count % world;
  ShardSlice s;
  s.count = base + (rank < extra ? 1 : 0);
  s.offset = rank * base + std::min<std::int64_t>(rank, extra);
  return s;
}

std::int64_t global_batches(std::int64_t n, std::int64_t batch, int world) {
  EPOCH_CHECK(batch >= 1 && world >= 1 && n >= 0, "global_batches: batch ", batch, ", world ",
              world);
  const std::int64_t g = batch * world;
  return n / g + (n % g >= world ? 1 : 0);
}

std::vector<std::int64_t> shard_order(const std::vector<std::int64_t>& order, std::int64_t batch,
                                      int rank, int world) {
  const auto n = static_cast<std::int64_t>(order.size());
  const std::int64_t g = batch * world, steps = global_batches(n, batch, world);
  std::vector<std::int64_t> mine;
  mine.reserve(static_cast<std::size_t>(steps * batch));
  for (std::int64_t k = 0; k < steps; ++k) {
    const ShardSlice s = shard_slice(std::min(g, n - k * g), rank, world);
    const auto first = order.begin() + k * g + s.offset;
    mine.insert(mine.end(), first, first + s.count);
  }
  return mine;
}

}  // namespace epoch::data
