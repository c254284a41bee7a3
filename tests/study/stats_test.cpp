// The study's statistics against scipy on fixed inputs (tests/study/reference/stats_scipy.json,
// made by bench/reference/stats_reference.py), against hand values, and in use: two truly
// different configurations are called different, identical ones never are.
#include "epoch/study/stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "epoch/tensor/error.h"
#include "epoch/tensor/random.h"

namespace epoch::study {
namespace {

nlohmann::json scipy_reference() {
  std::ifstream in(std::string(EPOCH_SOURCE_DIR) + "/tests/study/reference/stats_scipy.json");
  EXPECT_TRUE(in.good());
  return nlohmann::json::parse(in);
}

std::vector<double> values(const nlohmann::json& j) { return j.get<std::vector<double>>(); }

/// Relative closeness for p-values and statistics of very different sizes (absolutely within
/// 1e-14 near zero).
void expect_close(double got, double want, double rel, const std::string& what) {
  EXPECT_NEAR(got, want, rel * std::fabs(want) + 1e-14) << what;
}

TEST(Stats, FunctionsMatchScipy) {
  const nlohmann::json f = scipy_reference()["functions"];
  for (const auto& r : f["normal_cdf"])
    expect_close(normal_cdf(r[0]), r[1], 1e-12, "normal_cdf " + r.dump());
  for (const auto& r : f["normal_quantile"])
    expect_close(normal_quantile(r[0]), r[1], 1e-10, "normal_quantile " + r.dump());
  for (const auto& r : f["t_cdf"])
    expect_close(student_t_cdf(r[0], r[1]), r[2], 1e-10, "t_cdf " + r.dump());
  for (const auto& r : f["t_quantile"])
    expect_close(student_t_quantile(r[0], r[1]), r[2], 1e-9, "t_quantile " + r.dump());
  for (const auto& r : f["incomplete_beta"])
    expect_close(incomplete_beta(r[0], r[1], r[2]), r[3], 1e-11, "incomplete_beta " + r.dump());
}

TEST(Stats, TestsMatchScipyOnFixedSamples) {
  const nlohmann::json pairs = scipy_reference()["pairs"];
  ASSERT_GE(pairs.size(), 6u);
  for (const auto& [name, p] : pairs.items()) {
    const std::vector<double> a = values(p["a"]), b = values(p["b"]);
    const WelchResult w = welch_t_test(a, b);
    expect_close(w.t, p["welch"]["t"], 1e-10, name + " t");
    expect_close(w.df, p["welch"]["df"], 1e-10, name + " df");
    expect_close(w.p, p["welch"]["p"], 1e-8, name + " p");
    expect_close(w.ci_low, p["welch"]["ci_low"], 1e-8, name + " ci_low");
    expect_close(w.ci_high, p["welch"]["ci_high"], 1e-8, name + " ci_high");
    const TostResult t = tost_welch(a, b, p["margin"]);
    expect_close(t.p_lower, p["tost"]["p_lower"], 1e-8, name + " tost lower");
    expect_close(t.p_upper, p["tost"]["p_upper"], 1e-8, name + " tost upper");
    if (!p["paired"].is_null()) {
      const WelchResult pt = paired_t_test(a, b);
      expect_close(pt.t, p["paired"]["t"], 1e-10, name + " paired t");
      expect_close(pt.p, p["paired"]["p"], 1e-8, name + " paired p");
      expect_close(pt.ci_low, p["paired"]["ci_low"], 1e-8, name + " paired ci_low");
      expect_close(pt.ci_high, p["paired"]["ci_high"], 1e-8, name + " paired ci_high");
      const TostResult pto = tost_paired(a, b, p["margin"]);
      expect_close(pto.p_lower, p["paired"]["tost_p_lower"], 1e-8, name + " paired tost lower");
      expect_close(pto.p_upper, p["paired"]["tost_p_upper"], 1e-8, name + " paired tost upper");
    }
    const MannWhitneyResult m = mann_whitney_u(a, b);
    expect_close(m.u, p["mann_whitney"]["u"], 1e-12, name + " U");
    expect_close(m.p, p["mann_whitney"]["p"], 1e-9, name + " U p");
    // The bootstrap draws other resamples than scipy's: the same interval within its noise.
    const Interval boot = bootstrap_mean_difference(a, b, 0.95, 20000, 3);
    const double width = p["bootstrap"]["high"].get<double>() - p["bootstrap"]["low"].get<double>();
    EXPECT_NEAR(boot.low, p["bootstrap"]["low"].get<double>(), 0.05 * width) << name;
    EXPECT_NEAR(boot.high, p["bootstrap"]["high"].get<double>(), 0.05 * width) << name;
    const Summary s = summarize(a);
    const std::vector<double> q = values(p["quartiles_a"]);
    EXPECT_DOUBLE_EQ(s.min, q[0]) << name;
    expect_close(s.q1, q[1], 1e-14, name + " q1");
    expect_close(s.median, q[2], 1e-14, name + " median");
    expect_close(s.q3, q[3], 1e-14, name + " q3");
    EXPECT_DOUBLE_EQ(s.max, q[4]) << name;
    expect_close(s.sd, p["sd_a"], 1e-12, name + " sd");
  }
}

TEST(Stats, HandValuesAndDegenerateSamples) {
  // Exact Mann-Whitney for 3 vs 3 with a fully separated ordering: P = 2 / C(6, 3) = 0.1.
  const std::vector<double> lo{1, 2, 3}, hi{4, 5, 6};
  const MannWhitneyResult m = mann_whitney_u(lo, hi);
  EXPECT_TRUE(m.exact);
  EXPECT_EQ(m.u, 0.0);
  EXPECT_NEAR(m.p, 0.1, 1e-15);
  // No spread: identical samples are equal exactly, different ones different exactly.
  const std::vector<double> same{0.25, 0.25, 0.25};
  const WelchResult w = welch_t_test(same, same);
  EXPECT_EQ(w.p, 1.0);
  EXPECT_EQ(w.ci_low, 0.0);
  EXPECT_TRUE(tost_welch(same, same, 1e-3).equivalent);
  const std::vector<double> other{0.5, 0.5, 0.5};
  EXPECT_EQ(welch_t_test(same, other).p, 0.0);
  EXPECT_FALSE(tost_welch(same, other, 1e-3).equivalent);
  EXPECT_EQ(mann_whitney_u(same, same).p, 1.0);
  // Bad arguments.
  const std::vector<double> one{1.0};
  EXPECT_THROW(welch_t_test(one, same), InvalidArgument);
  EXPECT_THROW(summarize(std::vector<double>{}), InvalidArgument);
  EXPECT_THROW(tost_welch(same, same, 0.0), InvalidArgument);
  // Power: a difference of one standard deviation needs 16 repeats at 80% (the textbook
  // 2 (1.96 + 0.84)^2 = 15.7), none detects a zero difference.
  EXPECT_EQ(repeats_for_power(1.0, 1.0), 16);
  EXPECT_EQ(repeats_for_power(0.0, 1.0), -1);
  // The bootstrap is a pure function of its seed.
  const std::vector<double> x{1, 2, 4, 8}, y{2, 3, 5};
  EXPECT_EQ(bootstrap_mean_difference(x, y, 0.95, 1000, 5).low,
            bootstrap_mean_difference(x, y, 0.95, 1000, 5).low);
}

/// `n` draws of a normal(mean, sd) from a seeded stream (Box-Muller).
std::vector<double> normal_sample(std::uint64_t seed, std::uint64_t key, std::int64_t n,
                                  double mean, double sd) {
  RandomStream rng(seed, key);
  std::vector<double> v;
  for (std::int64_t i = 0; i < n; ++i) {
    const double u1 = (static_cast<double>(rng.next_bits()) + 1.0) / 4294967297.0;
    const double u2 = static_cast<double>(rng.next_bits()) / 4294967296.0;
    v.push_back(mean + sd * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
  }
  return v;
}

TEST(Stats, CallsRealDifferencesDifferentAndNeverIdenticalOnes) {
  // Five repeats of a loss near 0.3 with 0.5% run-to-run noise; the margin is 1% of the mean.
  const double mean = 0.3, sd = 0.0015, margin = 0.003;
  int identical_called_different = 0, identical_equivalent = 0, shifted_called_different = 0;
  constexpr int kTrials = 400;
  for (int trial = 0; trial < kTrials; ++trial) {
    const auto seed = static_cast<std::uint64_t>(trial);
    const std::vector<double> a = normal_sample(seed, 1, 5, mean, sd);
    const std::vector<double> same = normal_sample(seed, 2, 5, mean, sd);
    // A different learning rate: the final loss 5% higher.
    const std::vector<double> shifted = normal_sample(seed, 3, 5, 1.05 * mean, sd);
    const Comparison c = compare(a, same, margin, "A", "B", 0.05, seed, 500);
    identical_called_different += c.verdict == Verdict::different;
    identical_equivalent += c.verdict == Verdict::equivalent;
    const Comparison d = compare(a, shifted, margin, "A", "C", 0.05, seed, 500);
    shifted_called_different += d.verdict == Verdict::different;
    if (trial == 0) {
      EXPECT_NE(d.words.find("different: A lower by"), std::string::npos) << d.words;
      EXPECT_NE(c.words.find(c.verdict == Verdict::equivalent ? "equivalent within margin"
                                                              : "inconclusive"),
                std::string::npos)
          << c.words;
    }
  }
  EXPECT_EQ(identical_called_different, 0);
  EXPECT_GT(identical_equivalent,
            kTrials * 8 / 10);  // mostly shown equivalent, not just "not different"
  EXPECT_EQ(shifted_called_different, kTrials);
  // Paired, as a study's seeds are: a large spread from seed to seed that both configurations
  // share, a small one of their own. The paired test sees through the shared part.
  int paired_identical_different = 0, paired_identical_equivalent = 0, paired_shifted = 0;
  for (int trial = 0; trial < kTrials; ++trial) {
    const auto seed = static_cast<std::uint64_t>(trial);
    const std::vector<double> shared = normal_sample(seed, 4, 5, 0.0, 4 * sd);
    std::vector<double> a = normal_sample(seed, 5, 5, mean, sd / 3);
    std::vector<double> same = normal_sample(seed, 6, 5, mean, sd / 3);
    std::vector<double> shifted = normal_sample(seed, 7, 5, 1.05 * mean, sd / 3);
    for (std::size_t i = 0; i < shared.size(); ++i) {
      a[i] += shared[i];
      same[i] += shared[i];
      shifted[i] += shared[i];
    }
    const Comparison c = compare(a, same, margin, "A", "B", 0.05, seed, 200, true);
    paired_identical_different += c.verdict == Verdict::different;
    paired_identical_equivalent += c.verdict == Verdict::equivalent;
    paired_shifted +=
        compare(a, shifted, margin, "A", "C", 0.05, seed, 200, true).verdict == Verdict::different;
  }
  EXPECT_EQ(paired_identical_different, 0);
  EXPECT_GT(paired_identical_equivalent, kTrials * 9 / 10);
  EXPECT_EQ(paired_shifted, kTrials);

  // Too few repeats for the noise: inconclusive, with the repeats a power estimate asks for.
  const std::vector<double> noisy_a = normal_sample(9, 1, 3, mean, 10 * sd);
  const std::vector<double> noisy_b = normal_sample(9, 2, 3, mean, 10 * sd);
  const Comparison n = compare(noisy_a, noisy_b, margin, "A", "B");
  EXPECT_EQ(n.verdict, Verdict::inconclusive) << n.words;
  EXPECT_GT(n.repeats_needed, 5);
  EXPECT_NE(n.words.find("more repeats needed"), std::string::npos) << n.words;
}

}  // namespace
}  // namespace epoch::study
