// The statistics of configuration comparisons (see stats.h).
#include "epoch/study/stats.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <vector>

#include "epoch/tensor/error.h"
#include "epoch/tensor/random.h"

namespace epoch::study {
namespace {

double mean_of(std::span<const double> x) {
  return std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(x.size());
}

/// The sample variance (n - 1), from the mean (two passes: no cancellation).
double variance_of(std::span<const double> x, double mean) {
  double s = 0.0;
  for (const double v : x) s += (v - mean) * (v - mean);
  return s / static_cast<double>(x.size() - 1);
}

/// The p-th quantile (0..1) of sorted values, interpolating linearly (numpy's "linear").
double quantile_sorted(const std::vector<double>& sorted, double p) {
  const double at = p * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(at));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (at - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

/// The continued fraction of the incomplete beta function (modified Lentz), for x below
/// (a + 1) / (a + b + 2), where it converges fast.
double beta_fraction(double x, double a, double b) {
  constexpr double kTiny = 1e-300, kEps = 1e-16;
  double c = 1.0, d = 1.0 - (a + b) * x / (a + 1.0);
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1.0 / d;
  double f = d;
  for (int m = 1; m <= 10000; ++m) {
    const double dm = m;
    // The even term, then the odd one.
    double num = dm * (b - dm) * x / ((a + 2.0 * dm - 1.0) * (a + 2.0 * dm));
    d = 1.0 + num * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1.0 + num / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    f *= d * c;
    num = -(a + dm) * (a + b + dm) * x / ((a + 2.0 * dm) * (a + 2.0 * dm + 1.0));
    d = 1.0 + num * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1.0 + num / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    const double step = d * c;
    f *= step;
    if (std::fabs(step - 1.0) < kEps) break;
  }
  return f;
}

/// I_x(a, b) with y = 1 - x given as well (computed without cancellation by the caller).
double incomplete_beta_of(double x, double y, double a, double b) {
  if (x <= 0.0) return 0.0;
  if (y <= 0.0) return 1.0;
  const double log_front =
      std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log(y);
  if (x < (a + 1.0) / (a + b + 2.0)) return std::exp(log_front) * beta_fraction(x, a, b) / a;
  return 1.0 - std::exp(log_front) * beta_fraction(y, b, a) / b;
}

/// The upper tail P(T > |t|) of Student's t with df degrees of freedom, 0.5 I_x(df/2, 1/2) at
/// x = df / (df + t^2), its complement 1 - x = t^2 / (df + t^2) computed directly so that
/// neither end loses digits.
double t_tail(double t, double df) {
  if (std::isinf(t)) return 0.0;
  const double t2 = t * t;
  return 0.5 * incomplete_beta_of(df / (df + t2), t2 / (df + t2), 0.5 * df, 0.5);
}

/// Inverts an increasing distribution function by bisection over [lo, hi].
template <typename Cdf>
double invert(const Cdf& cdf, double p, double lo, double hi) {
  for (int i = 0; i < 400 && hi - lo > 1e-15 * std::max(1.0, std::fabs(lo) + std::fabs(hi)); ++i) {
    const double mid = 0.5 * (lo + hi);
    (cdf(mid) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

void require_two(std::span<const double> a, std::span<const double> b, const char* what) {
  if (a.size() < 2 || b.size() < 2)
    EPOCH_THROW(InvalidArgument, what, " needs at least 2 values in each sample, got ", a.size(),
                " and ", b.size());
}

/// Mid-ranks (1-based) of the values of a then b, and the sum over groups of tied values of
/// t^3 - t.
std::vector<double> midranks(std::span<const double> a, std::span<const double> b,
                             double& tie_term) {
  const std::size_t n = a.size() + b.size();
  std::vector<std::pair<double, std::size_t>> all;
  all.reserve(n);
  for (std::size_t i = 0; i < a.size(); ++i) all.emplace_back(a[i], i);
  for (std::size_t i = 0; i < b.size(); ++i) all.emplace_back(b[i], a.size() + i);
  std::sort(all.begin(), all.end());
  std::vector<double> rank(n);
  tie_term = 0.0;
  for (std::size_t i = 0; i < n;) {
    std::size_t j = i;
    while (j + 1 < n && all[j + 1].first == all[i].first) ++j;
    const double mid = 0.5 * static_cast<double>(i + j) + 1.0;
    for (std::size_t k = i; k <= j; ++k) rank[all[k].second] = mid;
    const auto t = static_cast<double>(j - i + 1);
    tie_term += t * t * t - t;
    i = j + 1;
  }
  return rank;
}

/// P(U >= u) for the Mann-Whitney statistic of samples of m and n values without ties: the
/// number of arrangements of each U, counted over n by c(m, n, u) = c(m - 1, n, u - n) +
/// c(m, n - 1, u), kept for every m up to the smaller size.
double exact_upper_tail(std::int64_t m, std::int64_t n, double u) {
  if (m > n) std::swap(m, n);  // U's distribution is the same either way round
  const std::int64_t top = m * n;
  // counts[k][v]: arrangements of k values of the first sample among the current j of the
  // second with U = v.
  std::vector<std::vector<double>> counts(static_cast<std::size_t>(m + 1),
                                          std::vector<double>(static_cast<std::size_t>(top + 1)));
  for (auto& row : counts) row[0] = 1.0;  // j = 0: one arrangement, U = 0
  for (std::int64_t j = 1; j <= n; ++j)
    for (std::int64_t k = 1; k <= m; ++k)  // c(k, j, v) += c(k - 1, j, v - j), k ascending
      for (std::int64_t v = top; v >= j; --v)
        counts[static_cast<std::size_t>(k)][static_cast<std::size_t>(v)] +=
            counts[static_cast<std::size_t>(k - 1)][static_cast<std::size_t>(v - j)];
  const std::vector<double>& dist = counts[static_cast<std::size_t>(m)];
  const double total = std::accumulate(dist.begin(), dist.end(), 0.0);
  double tail = 0.0;
  for (std::int64_t v = top; v >= 0 && static_cast<double>(v) >= u - 1e-9; --v)
    tail += dist[static_cast<std::size_t>(v)];
  return tail / total;
}

std::string format(const char* pattern, double a, double b = 0.0, double c = 0.0, double d = 0.0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, pattern, a, b, c, d);
  return buf;
}

}  // namespace

Summary summarize(std::span<const double> x) {
  if (x.empty()) EPOCH_THROW(InvalidArgument, "summarize: no values");
  Summary s;
  s.n = static_cast<std::int64_t>(x.size());
  s.mean = mean_of(x);
  s.sd = x.size() > 1 ? std::sqrt(variance_of(x, s.mean)) : 0.0;
  std::vector<double> sorted(x.begin(), x.end());
  std::sort(sorted.begin(), sorted.end());
  s.min = sorted.front();
  s.max = sorted.back();
  s.q1 = quantile_sorted(sorted, 0.25);
  s.median = quantile_sorted(sorted, 0.5);
  s.q3 = quantile_sorted(sorted, 0.75);
  return s;
}

double incomplete_beta(double x, double a, double b) {
  EPOCH_CHECK(a > 0 && b > 0, "incomplete_beta: a and b must be positive, got ", a, " and ", b);
  return incomplete_beta_of(x, 1.0 - x, a, b);
}

double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

double normal_quantile(double p) {
  EPOCH_CHECK(p > 0 && p < 1, "normal_quantile: p must be in (0, 1), got ", p);
  return invert(normal_cdf, p, -40.0, 40.0);
}

double student_t_cdf(double t, double df) {
  EPOCH_CHECK(df > 0, "student_t_cdf: df must be positive, got ", df);
  const double tail = t_tail(t, df);
  return t > 0 ? 1.0 - tail : tail;
}

double student_t_quantile(double p, double df) {
  EPOCH_CHECK(p > 0 && p < 1, "student_t_quantile: p must be in (0, 1), got ", p);
  double hi = 1.0;
  while (student_t_cdf(hi, df) < std::max(p, 1.0 - p) && hi < 1e12) hi *= 2.0;
  return invert([df](double t) { return student_t_cdf(t, df); }, p, -hi, hi);
}

WelchResult welch_t_test(std::span<const double> a, std::span<const double> b, double confidence) {
  require_two(a, b, "Welch's t-test");
  EPOCH_CHECK(confidence > 0 && confidence < 1, "confidence must be in (0, 1), got ", confidence);
  const double ma = mean_of(a), mb = mean_of(b);
  const double va = variance_of(a, ma) / static_cast<double>(a.size());
  const double vb = variance_of(b, mb) / static_cast<double>(b.size());
  WelchResult r;
  r.difference = ma - mb;
  r.standard_error = std::sqrt(va + vb);
  if (va + vb == 0.0) {  // no spread: the difference is exact
    r.df = static_cast<double>(a.size() + b.size() - 2);
    r.t = r.difference == 0.0 ? 0.0 : std::copysign(HUGE_VAL, r.difference);
    r.p = r.difference == 0.0 ? 1.0 : 0.0;
    r.ci_low = r.ci_high = r.difference;
    return r;
  }
  r.df =
      (va + vb) * (va + vb) /
      (va * va / static_cast<double>(a.size() - 1) + vb * vb / static_cast<double>(b.size() - 1));
  r.t = r.difference / r.standard_error;
  r.p = std::min(1.0, 2.0 * t_tail(r.t, r.df));
  const double q = student_t_quantile(0.5 + 0.5 * confidence, r.df);
  r.ci_low = r.difference - q * r.standard_error;
  r.ci_high = r.difference + q * r.standard_error;
  return r;
}

WelchResult paired_t_test(std::span<const double> a, std::span<const double> b, double confidence) {
  require_two(a, b, "the paired t-test");
  if (a.size() != b.size())
    EPOCH_THROW(InvalidArgument, "the paired t-test needs pairs, got ", a.size(), " and ", b.size(),
                " values");
  EPOCH_CHECK(confidence > 0 && confidence < 1, "confidence must be in (0, 1), got ", confidence);
  std::vector<double> d(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) d[i] = a[i] - b[i];
  const double md = mean_of(d);
  const double var = variance_of(d, md) / static_cast<double>(d.size());
  WelchResult r;
  r.difference = md;
  r.standard_error = std::sqrt(var);
  r.df = static_cast<double>(d.size() - 1);
  if (var == 0.0) {
    r.t = md == 0.0 ? 0.0 : std::copysign(HUGE_VAL, md);
    r.p = md == 0.0 ? 1.0 : 0.0;
    r.ci_low = r.ci_high = md;
    return r;
  }
  r.t = md / r.standard_error;
  r.p = std::min(1.0, 2.0 * t_tail(r.t, r.df));
  const double q = student_t_quantile(0.5 + 0.5 * confidence, r.df);
  r.ci_low = md - q * r.standard_error;
  r.ci_high = md + q * r.standard_error;
  return r;
}

namespace {

/// TOST from a test of the difference (Welch's or the paired one).
TostResult tost_of(const WelchResult& w, double margin, double alpha) {
  EPOCH_CHECK(margin > 0 && std::isfinite(margin), "TOST: the margin must be positive, got ",
              margin);
  EPOCH_CHECK(alpha > 0 && alpha < 1, "TOST: alpha must be in (0, 1), got ", alpha);
  TostResult r;
  r.margin = margin;
  if (w.standard_error == 0.0) {
    r.p_lower = w.difference > -margin ? 0.0 : 1.0;
    r.p_upper = w.difference < margin ? 0.0 : 1.0;
  } else {
    // H0: difference <= -margin, rejected for large (difference + margin) / se; and the mirror.
    r.p_lower = 1.0 - student_t_cdf((w.difference + margin) / w.standard_error, w.df);
    r.p_upper = student_t_cdf((w.difference - margin) / w.standard_error, w.df);
  }
  r.p = std::max(r.p_lower, r.p_upper);
  r.equivalent = r.p < alpha;
  return r;
}

}  // namespace

TostResult tost_welch(std::span<const double> a, std::span<const double> b, double margin,
                      double alpha) {
  return tost_of(welch_t_test(a, b), margin, alpha);
}

TostResult tost_paired(std::span<const double> a, std::span<const double> b, double margin,
                       double alpha) {
  return tost_of(paired_t_test(a, b), margin, alpha);
}

MannWhitneyResult mann_whitney_u(std::span<const double> a, std::span<const double> b) {
  if (a.empty() || b.empty())
    EPOCH_THROW(InvalidArgument, "Mann-Whitney U needs values in both samples, got ", a.size(),
                " and ", b.size());
  double tie_term = 0.0;
  const std::vector<double> rank = midranks(a, b, tie_term);
  const auto n1 = static_cast<double>(a.size()), n2 = static_cast<double>(b.size());
  const double r1 =
      std::accumulate(rank.begin(), rank.begin() + static_cast<std::ptrdiff_t>(a.size()), 0.0);
  MannWhitneyResult r;
  r.u = r1 - n1 * (n1 + 1.0) / 2.0;
  const double u_big = std::max(r.u, n1 * n2 - r.u);
  r.exact = std::min(a.size(), b.size()) <= 8 && tie_term == 0.0;
  if (r.exact) {
    r.p = std::min(1.0, 2.0 * exact_upper_tail(static_cast<std::int64_t>(a.size()),
                                               static_cast<std::int64_t>(b.size()), u_big));
    return r;
  }
  const double n = n1 + n2;
  const double var = n1 * n2 / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
  if (var <= 0.0) {  // every value tied: no evidence either way
    r.p = 1.0;
    return r;
  }
  const double z = (u_big - n1 * n2 / 2.0 - 0.5) / std::sqrt(var);
  r.p = std::clamp(2.0 * (1.0 - normal_cdf(z)), 0.0, 1.0);
  return r;
}

Interval bootstrap_mean_difference(std::span<const double> a, std::span<const double> b,
                                   double confidence, std::int64_t resamples, std::uint64_t seed) {
  EPOCH_CHECK(!a.empty() && !b.empty(), "bootstrap: both samples need values");
  EPOCH_CHECK(resamples >= 10, "bootstrap: at least 10 resamples, got ", resamples);
  EPOCH_CHECK(confidence > 0 && confidence < 1, "confidence must be in (0, 1), got ", confidence);
  RandomStream rng(seed, 0xb007);
  std::vector<double> diffs(static_cast<std::size_t>(resamples));
  for (double& d : diffs) {
    double sa = 0.0, sb = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) sa += a[rng.below(a.size())];
    for (std::size_t i = 0; i < b.size(); ++i) sb += b[rng.below(b.size())];
    d = sa / static_cast<double>(a.size()) - sb / static_cast<double>(b.size());
  }
  std::sort(diffs.begin(), diffs.end());
  return {quantile_sorted(diffs, 0.5 - 0.5 * confidence),
          quantile_sorted(diffs, 0.5 + 0.5 * confidence)};
}

std::int64_t repeats_for_power(double difference, double sd, double alpha, double power) {
  EPOCH_CHECK(alpha > 0 && alpha < 1 && power > 0 && power < 1,
              "repeats_for_power: alpha and power must be in (0, 1)");
  if (difference == 0.0) return -1;
  if (sd == 0.0) return 2;
  const double z = normal_quantile(1.0 - alpha / 2.0) + normal_quantile(power);
  const double n = 2.0 * (z * sd / difference) * (z * sd / difference);
  return std::max<std::int64_t>(2, static_cast<std::int64_t>(std::ceil(n - 1e-9)));
}

Comparison compare(std::span<const double> a, std::span<const double> b, double margin,
                   const std::string& name_a, const std::string& name_b, double alpha,
                   std::uint64_t seed, std::int64_t resamples, bool paired) {
  Comparison c;
  c.a = summarize(a);
  c.b = summarize(b);
  const double confidence = 1.0 - alpha;
  c.welch = welch_t_test(a, b, confidence);
  c.tost = tost_welch(a, b, margin, alpha);
  c.mann_whitney = mann_whitney_u(a, b);
  c.bootstrap = bootstrap_mean_difference(a, b, confidence, resamples, seed);
  c.paired = paired;
  if (paired) {
    c.paired_test = paired_t_test(a, b, confidence);
    c.paired_tost = tost_paired(a, b, margin, alpha);
  }
  const WelchResult& test = paired ? c.paired_test : c.welch;
  const TostResult& tost = paired ? c.paired_tost : c.tost;
  const std::string test_name = paired ? "paired t p" : "Welch p";
  const double d = test.difference;
  const std::string ci =
      format("%.3g%% CI [%.4g, %.4g]", 100.0 * confidence, test.ci_low, test.ci_high) +
      (paired ? " (paired)" : "");
  // Different only when the whole interval lies beyond the margin: a difference that matters,
  // shown at the test's level, so identical configurations are not called different by chance.
  if (test.ci_low > margin || test.ci_high < -margin) {
    c.verdict = Verdict::different;
    const bool a_lower = d < 0;
    const double base = a_lower ? c.b.mean : c.a.mean;
    c.words = "different: " + (a_lower ? name_a : name_b) + " lower by " +
              format("%.4g", std::fabs(d)) +
              (base != 0.0 ? format(" (%.2f%%)", 100.0 * std::fabs(d) / std::fabs(base)) : "") +
              ", " + ci + ", " + test_name + format(" = %.3g", test.p);
  } else if (tost.equivalent) {
    c.verdict = Verdict::equivalent;
    c.words = "equivalent within margin " + format("+-%.4g", margin) + ": difference " +
              format("%.4g", d) + ", " + ci + format(", TOST p = %.3g", tost.p);
  } else {
    c.verdict = Verdict::inconclusive;
    // The spread the test sees: of the paired differences, or of each sample. A paired test
    // of n differences of that spread needs about half the repeats two samples of it would.
    const double sd = paired ? test.standard_error * std::sqrt(static_cast<double>(a.size()))
                             : std::sqrt(0.5 * (c.a.sd * c.a.sd + c.b.sd * c.b.sd));
    const std::int64_t n = repeats_for_power(margin, sd, alpha, 0.8);
    c.repeats_needed = paired && n > 0 ? std::max<std::int64_t>(2, (n + 1) / 2) : n;
    c.words = "inconclusive: more repeats needed (about " + std::to_string(c.repeats_needed) +
              " per configuration to tell a difference of " + format("%.4g", margin) +
              " apart), difference " + format("%.4g", d) + ", " + ci;
  }
  return c;
}

}  // namespace epoch::study
