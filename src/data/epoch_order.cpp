// The per-epoch sample order: a seeded Fisher-Yates shuffle that depends only on the seed and
// the epoch number.
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

}  // namespace epoch::data
