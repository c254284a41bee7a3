// The statistics `epoch study` compares configurations with: per-sample summaries, Welch's
// t-test and its confidence interval, the two one-sided tests (TOST) of equivalence within a
// margin, the Mann-Whitney U test, a bootstrap interval of the difference of means, the repeats
// a power estimate asks for, and a verdict in words. Two-sided tests throughout; every p-value
// is computed here (the incomplete beta and normal functions included), and matches scipy's on
// fixed inputs (tests/study/reference, made by bench/reference/stats_reference.py).
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace epoch::study {

/// A sample's figures (a box plot's included). sd is the sample standard deviation (n - 1);
/// quartiles interpolate linearly between order statistics (numpy's default).
struct Summary {
  std::int64_t n = 0;
  double mean = 0.0, sd = 0.0;
  double min = 0.0, q1 = 0.0, median = 0.0, q3 = 0.0, max = 0.0;
};
/// requires: at least one value (InvalidArgument otherwise).
Summary summarize(std::span<const double> x);

/// Welch's t-test of mean(a) - mean(b): the statistic, Welch-Satterthwaite degrees of freedom,
/// two-sided p, and the confidence interval of the difference. When both samples have no
/// spread the difference is exact: p is 1 for equal means and 0 otherwise, the interval the
/// difference itself.
struct WelchResult {
  double difference = 0.0;  // mean(a) - mean(b)
  double standard_error = 0.0;
  double t = 0.0, df = 0.0, p = 1.0;
  double ci_low = 0.0, ci_high = 0.0;
};
/// requires: at least 2 values in each sample, 0 < confidence < 1.
WelchResult welch_t_test(std::span<const double> a, std::span<const double> b,
                         double confidence = 0.95);

/// Equivalence within +-margin by two one-sided Welch tests: H0 difference <= -margin (p_lower)
/// and H0 difference >= margin (p_upper); p = max of the two; equivalent when p < alpha.
struct TostResult {
  double margin = 0.0;
  double p_lower = 1.0, p_upper = 1.0, p = 1.0;
  bool equivalent = false;
};
/// requires: margin > 0, 0 < alpha < 1, at least 2 values in each sample.
TostResult tost_welch(std::span<const double> a, std::span<const double> b, double margin,
                      double alpha = 0.05);

/// The paired t-test of mean(a - b) over pairs (a[i], b[i]) (the same seed under two
/// configurations): the statistic, n - 1 degrees of freedom, two-sided p and the interval, in
/// a WelchResult. No spread in the differences: exact, as welch_t_test.
/// requires: equal sizes, at least 2 pairs.
WelchResult paired_t_test(std::span<const double> a, std::span<const double> b,
                          double confidence = 0.95);
/// TOST on the paired differences.
TostResult tost_paired(std::span<const double> a, std::span<const double> b, double margin,
                       double alpha = 0.05);

/// The Mann-Whitney U test (two-sided): u is a's statistic (its rank sum minus n_a(n_a+1)/2,
/// ties at mid-ranks); the exact distribution when one sample has at most 8 values and there
/// are no ties, else the normal approximation with the tie correction and a continuity
/// correction of 0.5 (scipy's method "auto").
struct MannWhitneyResult {
  double u = 0.0, p = 1.0;
  bool exact = false;
};
/// requires: at least 1 value in each sample.
MannWhitneyResult mann_whitney_u(std::span<const double> a, std::span<const double> b);

/// The percentile bootstrap interval of mean(a) - mean(b): each sample resampled with
/// replacement `resamples` times from a seeded stream (the same interval for the same seed).
struct Interval {
  double low = 0.0, high = 0.0;
};
Interval bootstrap_mean_difference(std::span<const double> a, std::span<const double> b,
                                   double confidence = 0.95, std::int64_t resamples = 10000,
                                   std::uint64_t seed = 0);

/// Repeats per configuration for a two-sided test at `alpha` to detect a true difference of
/// `difference` with probability `power`, for samples of standard deviation `sd` (the normal
/// approximation, rounded up, at least 2). Zero difference: -1 (no number of repeats does).
std::int64_t repeats_for_power(double difference, double sd, double alpha = 0.05,
                               double power = 0.8);

/// The standard normal distribution function and its inverse; the Student t distribution
/// function and its inverse (df > 0); the regularized incomplete beta function I_x(a, b).
double normal_cdf(double z);
double normal_quantile(double p);
double student_t_cdf(double t, double df);
double student_t_quantile(double p, double df);
double incomplete_beta(double x, double a, double b);

/// What a comparison of configurations A and B concluded.
enum class Verdict { equivalent, different, inconclusive };
struct Comparison {
  Summary a, b;
  WelchResult welch;
  TostResult tost;
  /// The same on the pairs (a[i], b[i]) when the samples are paired (each seed under both
  /// configurations: the same initial weights and data order), which the verdict then uses.
  bool paired = false;
  WelchResult paired_test;
  TostResult paired_tost;
  MannWhitneyResult mann_whitney;
  Interval bootstrap;
  Verdict verdict = Verdict::inconclusive;
  std::int64_t repeats_needed = 0;  // inconclusive: what a power estimate asks for (-1: none)
  std::string words;                // the verdict as a sentence
};

/// Compares final figures of two configurations (lower is better, a loss): Welch's test and
/// its (1 - alpha) interval, TOST at +-`margin`, Mann-Whitney, the bootstrap interval
/// (`resamples`, from `seed`). The verdict: different when the whole Welch interval lies beyond
/// the margin (a difference that matters, shown at the test's level, so identical
/// configurations are not called different by chance); else equivalent when TOST says so;
/// else inconclusive, with the repeats a power estimate asks for to tell a difference of
/// `margin` apart. `name_a` and `name_b` name them in the words. With `paired` (equal sizes,
/// a[i] and b[i] from the same seed) the verdict uses the paired test and TOST, which remove
/// the seed-to-seed spread both configurations share.
Comparison compare(std::span<const double> a, std::span<const double> b, double margin,
                   const std::string& name_a, const std::string& name_b, double alpha = 0.05,
                   std::uint64_t seed = 0, std::int64_t resamples = 10000, bool paired = false);

}  // namespace epoch::study
