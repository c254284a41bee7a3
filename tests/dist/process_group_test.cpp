// The process group and gradient averaging: in one process (a group of one, no MPI) and, run
// under `mpirun -np N` (CTest's mpi-labelled dist_tests_np2 and dist_tests_np4), across ranks:
// every test calls the same collectives in the same order on every rank.
#include "epoch/dist/process_group.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "epoch/dist/gradient_averager.h"
#include "epoch/tensor/error.h"

namespace epoch::dist {
namespace {

ProcessGroup& group() { return ProcessGroup::world(); }

TEST(ProcessGroup, KnowsItsRankAndSize) {
  EXPECT_GE(group().rank(), 0);
  EXPECT_LT(group().rank(), group().size());
  EXPECT_EQ(group().distributed(), group().size() > 1);
  if (!launched_by_mpi()) {
    EXPECT_EQ(group().size(), 1);
    EXPECT_EQ(group().describe(), "a single process");
    EXPECT_EQ(group().library(), "");
  } else {
    EXPECT_NE(group().library(), "");
  }
}

TEST(ProcessGroup, BroadcastsRankZerosBytes) {
  std::vector<std::int64_t> v(1000, group().rank() + 7);
  group().broadcast(v.data(), static_cast<std::int64_t>(v.size() * sizeof(std::int64_t)), 0);
  for (std::int64_t x : v) ASSERT_EQ(x, 7);
}

TEST(ProcessGroup, SumsOverRanksTheSameBitsEverywhere) {
  const int n = group().size(), r = group().rank();
  std::vector<float> f(3001);
  for (std::size_t i = 0; i < f.size(); ++i) f[i] = 0.1f * static_cast<float>(r + 1) * i;
  group().all_reduce_sum(f.data(), static_cast<std::int64_t>(f.size()));
  double expected_scale = 0.0;
  for (int k = 1; k <= n; ++k) expected_scale += k;
  for (std::size_t i = 0; i < f.size(); ++i)
    ASSERT_NEAR(f[i], 0.1 * expected_scale * static_cast<double>(i), 1e-3 * (1.0 + i)) << i;
  // the same bits on every rank
  const std::vector<std::uint64_t> sums =
      group().all_gather(checksum(f.data(), static_cast<std::int64_t>(f.size() * sizeof(float))));
  for (std::uint64_t s : sums) EXPECT_EQ(s, sums[0]);
  double d = 0.5 * (r + 1);
  group().all_reduce_sum(&d, 1);
  EXPECT_DOUBLE_EQ(d, 0.5 * expected_scale);
}

TEST(ProcessGroup, GathersOneValuePerRankInRankOrder) {
  const std::vector<std::uint64_t> all = group().all_gather(100 + group().rank());
  ASSERT_EQ(static_cast<int>(all.size()), group().size());
  for (int k = 0; k < group().size(); ++k) EXPECT_EQ(all[static_cast<std::size_t>(k)], 100u + k);
}

TEST(Checksum, SeesEveryByteAndItsPosition) {
  std::vector<float> a(257, 1.0f), b = a;
  const auto bytes = static_cast<std::int64_t>(a.size() * sizeof(float));
  EXPECT_EQ(checksum(a.data(), bytes), checksum(b.data(), bytes));
  b[256] = 1.0000001f;  // the last element: past the 8-byte words
  EXPECT_NE(checksum(a.data(), bytes), checksum(b.data(), bytes));
  b = a;
  b[3] = -1.0f;
  EXPECT_NE(checksum(a.data(), bytes), checksum(b.data(), bytes));
  std::vector<float> c = {1.0f, 2.0f}, d = {2.0f, 1.0f};
  EXPECT_NE(checksum(c.data(), 8), checksum(d.data(), 8)) << "order matters";
}

TEST(ProcessGroup, SameValuesPassAndDifferentOnesNameTheRanks) {
  EXPECT_NO_THROW(expect_same_on_every_rank(group(), 42, "the test value"));
  if (!group().distributed()) return;
  const std::uint64_t mine = group().rank() == group().size() - 1 ? 43 : 42;
  try {
    expect_same_on_every_rank(group(), mine, "the parameters after step 7");
    FAIL() << "no error";
  } catch (const NumericalError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("after step 7"), std::string::npos) << what;
    EXPECT_NE(what.find("rank " + std::to_string(group().size() - 1)), std::string::npos) << what;
  }
}

TEST(ProcessGroup, GathersTextsOfDifferentLengths) {
  const std::string mine(static_cast<std::size_t>(group().rank()) * 3, 'a' + group().rank());
  const std::vector<std::string> all = group().all_gather(mine);
  ASSERT_EQ(static_cast<int>(all.size()), group().size());
  for (int k = 0; k < group().size(); ++k)
    EXPECT_EQ(all[static_cast<std::size_t>(k)],
              std::string(static_cast<std::size_t>(k) * 3, static_cast<char>('a' + k)));
}

// Every rank gets the same verdict, so no rank goes on into a collective the others left.
TEST(ProcessGroup, SettingsThatDifferAreNamedOnEveryRank) {
  const std::vector<Setting> same{{"--model", "autoencoder"}, {"--batch-size", "32"}};
  EXPECT_NO_THROW(expect_same_settings(group(), same, "a test"));
  if (!group().distributed()) return;
  const int last = group().size() - 1;
  std::vector<Setting> mine = same;
  if (group().rank() == last) mine[1].value = "64";
  try {
    expect_same_settings(group(), mine, "a test");
    FAIL() << "no error on rank " << group().rank();
  } catch (const RanksDisagree& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("ranks disagree on --batch-size: rank 0 has 32, rank " +
                        std::to_string(last) + " has 64"),
              std::string::npos)
        << what;
  }
  // A setting one rank lacks, and values with separators of every kind in them.
  std::vector<Setting> odd{{"a:b", "1:2"}, {"x", std::string("\0:9", 3)}};
  if (group().rank() == last) odd.push_back({"extra", "yes"});
  try {
    expect_same_settings(group(), odd, "a test");
    FAIL() << "no error on rank " << group().rank();
  } catch (const RanksDisagree& e) {
    EXPECT_NE(std::string(e.what()).find("ranks disagree on extra: rank 0 has (not set)"),
              std::string::npos)
        << e.what();
  }
  // A broadcast whose sizes differ is refused on every rank before any byte moves.
  std::vector<char> buffer(group().rank() == last ? 16 : 8);
  EXPECT_THROW(group().broadcast(buffer.data(), static_cast<std::int64_t>(buffer.size()), 0,
                                 "the test buffer"),
               RanksDisagree);
}

// Weighted shares sum to the global mean: rank r holds the mean gradient of its share.
TEST(GradientAverager, GivesTheWeightedSumOfEveryRanksBuckets) {
  const int n = group().size(), r = group().rank();
  GradientAverager averager(group());
  std::vector<float> first(1000), second(37);
  for (std::size_t i = 0; i < first.size(); ++i) first[i] = static_cast<float>(r + 1);
  for (std::size_t i = 0; i < second.size(); ++i) second[i] = static_cast<float>(i);
  const float weight = 1.0f / static_cast<float>(n);
  averager.add(first.data(), static_cast<std::int64_t>(first.size()), weight);
  averager.add(second.data(), static_cast<std::int64_t>(second.size()), weight);
  const CommTimes t = averager.finish();
  const float mean_rank = static_cast<float>(n + 1) / 2.0f;
  for (float v : first) ASSERT_NEAR(v, mean_rank, 1e-5f);
  for (std::size_t i = 0; i < second.size(); ++i)
    ASSERT_NEAR(second[i], static_cast<float>(i), 1e-4f * (1.0f + i));
  EXPECT_GE(t.busy_s, 0.0);
  EXPECT_GE(t.hidden_fraction(), 0.0);
  EXPECT_LE(t.hidden_fraction(), 1.0);
  if (group().distributed()) {
    EXPECT_EQ(t.bytes, static_cast<std::int64_t>((first.size() + second.size()) * sizeof(float)));
  }
  // a second step reuses the thread
  averager.add(first.data(), static_cast<std::int64_t>(first.size()), 1.0f);
  averager.finish();
  for (float v : first) ASSERT_NEAR(v, mean_rank * static_cast<float>(n), 1e-4f);
}

// Buckets of different sizes handed over at different paces on each rank, so that sometimes the
// communication thread and sometimes finish() reduces a bucket: every rank still issues them in
// the same order (a mismatch would pair buckets of different sizes), and each sum is exact.
TEST(GradientAverager, ReducesBucketsInOrderWhicheverThreadRunsThem) {
  const int n = group().size(), r = group().rank();
  GradientAverager averager(group());
  const std::vector<std::int64_t> sizes{1, 4099, 17, 70000, 3, 256, 9000, 5};
  std::vector<std::vector<float>> buckets(sizes.size());
  for (int step = 0; step < 12; ++step) {
    for (std::size_t b = 0; b < sizes.size(); ++b) {
      buckets[b].assign(static_cast<std::size_t>(sizes[b]), static_cast<float>(r + 1 + b));
      averager.add(buckets[b].data(), sizes[b], 1.0f);
      if ((step + static_cast<int>(b) + r) % 3 == 0)
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    averager.finish();
    for (std::size_t b = 0; b < sizes.size(); ++b) {
      // sum over ranks of (rank + 1 + b): small integers, exact in float
      const float want = static_cast<float>(n * (n + 1) / 2 + n * static_cast<int>(b));
      for (float v : buckets[b]) ASSERT_EQ(v, want) << "step " << step << " bucket " << b;
    }
  }
}

}  // namespace
}  // namespace epoch::dist
