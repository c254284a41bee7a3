// Data-parallel shards of an epoch's order (data::shard_order): disjoint, covering the global
// batches, and rank by rank the slices one process of the global batch would see.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "epoch/data/dataset.h"

namespace epoch::data {
namespace {

TEST(ShardSlice, SplitsAsEvenlyAsPossible) {
  EXPECT_EQ(shard_slice(8, 0, 2).offset, 0);
  EXPECT_EQ(shard_slice(8, 1, 2).offset, 4);
  EXPECT_EQ(shard_slice(8, 1, 2).count, 4);
  // 7 over 3: 3, 2, 2
  EXPECT_EQ(shard_slice(7, 0, 3).count, 3);
  EXPECT_EQ(shard_slice(7, 1, 3).offset, 3);
  EXPECT_EQ(shard_slice(7, 1, 3).count, 2);
  EXPECT_EQ(shard_slice(7, 2, 3).offset, 5);
  EXPECT_EQ(shard_slice(7, 2, 3).count, 2);
  EXPECT_THROW(shard_slice(7, 3, 3), Error);
}

TEST(GlobalBatches, CountsAShortLastBatchOnlyWhenEveryRankGetsASample) {
  EXPECT_EQ(global_batches(100, 32, 1), 4);  // ceil(100 / 32), as one process
  EXPECT_EQ(global_batches(64, 16, 2), 2);
  EXPECT_EQ(global_batches(65, 16, 2), 2);  // one left over for two ranks: dropped
  EXPECT_EQ(global_batches(66, 16, 2), 3);
  EXPECT_EQ(global_batches(3, 16, 4), 0);
}

TEST(ShardOrder, ShardsAreDisjointCoverTheGlobalBatchesAndFollowThem) {
  const std::vector<std::int64_t> order = epoch_order(103, 5, 2, true);
  for (const int world : {1, 2, 3, 4}) {
    const std::int64_t batch = 8, g = batch * world;
    const std::int64_t steps = global_batches(103, batch, world);
    std::vector<std::vector<std::int64_t>> shards;
    for (int r = 0; r < world; ++r) shards.push_back(shard_order(order, batch, r, world));
    std::multiset<std::int64_t> seen;
    for (const auto& s : shards) seen.insert(s.begin(), s.end());
    const std::int64_t covered = std::min<std::int64_t>(103, steps * g);
    EXPECT_EQ(static_cast<std::int64_t>(seen.size()), covered) << world;
    for (std::int64_t i = 0; i < covered; ++i)
      EXPECT_EQ(seen.count(order[static_cast<std::size_t>(i)]), 1u) << "world " << world;
    // Step k of rank r is slice r of global batch k: concatenated over ranks, the global batch.
    for (std::int64_t k = 0; k < steps; ++k) {
      std::vector<std::int64_t> joined;
      for (int r = 0; r < world; ++r) {
        const auto& s = shards[static_cast<std::size_t>(r)];
        const std::int64_t from = k * batch;
        const std::int64_t to =
            std::min<std::int64_t>(static_cast<std::int64_t>(s.size()), from + batch);
        joined.insert(joined.end(), s.begin() + from, s.begin() + to);
      }
      const std::int64_t count = std::min(g, 103 - k * g);
      ASSERT_EQ(static_cast<std::int64_t>(joined.size()), count);
      EXPECT_TRUE(std::equal(joined.begin(), joined.end(), order.begin() + k * g))
          << "world " << world << " step " << k;
    }
  }
}

TEST(ShardOrder, DependsOnlyOnTheOrder) {
  const std::vector<std::int64_t> a = epoch_order(50, 1, 0, true), b = epoch_order(50, 1, 0, true);
  EXPECT_EQ(shard_order(a, 4, 1, 3), shard_order(b, 4, 1, 3));
  EXPECT_NE(shard_order(a, 4, 1, 3), shard_order(epoch_order(50, 1, 1, true), 4, 1, 3));
}

}  // namespace
}  // namespace epoch::data
