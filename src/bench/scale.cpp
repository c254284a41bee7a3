// Scaling measurements and projections (see scale.h).
#include "epoch/bench/scale.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <utility>

#include "epoch/dist/gradient_averager.h"
#include "epoch/tensor/error.h"

namespace epoch::bench {

namespace {
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
}  // namespace

BucketedTiming time_bucketed_allreduce(dist::ProcessGroup& group,
                                       const std::vector<std::int64_t>& counts, int warmup,
                                       int reps) {
  EPOCH_CHECK(!counts.empty() && reps >= 1 && warmup >= 0,
              "time_bucketed_allreduce: ", counts.size(), " buckets, ", reps, " repetitions");
  std::int64_t total = 0;
  for (std::int64_t c : counts) total += c;
  std::vector<float> data(static_cast<std::size_t>(total), 1.0f);
  dist::GradientAverager averager(group);
  const auto bucketed = [&] {
    std::int64_t at = 0;
    for (std::int64_t c : counts) {
      averager.add(data.data() + at, c, 1.0f);
      at += c;
    }
    (void)averager.finish();
  };
  const auto plain = [&] { group.all_reduce_sum(data.data(), total); };
  std::vector<double> bucketed_s, plain_s;
  for (int i = 0; i < warmup + reps; ++i)
    for (int k = 0; k < 2; ++k) {
      const bool plain_now = (k == 0) == (i % 2 == 0);  // each goes first every other time
      group.barrier();
      const auto start = std::chrono::steady_clock::now();
      if (plain_now)
        plain();
      else
        bucketed();
      const double s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (i >= warmup) (plain_now ? plain_s : bucketed_s).push_back(s);
      std::fill(data.begin(), data.end(), 1.0f);  // keep the values finite
    }
  return {median(std::move(bucketed_s)), median(std::move(plain_s))};
}

double time_allreduce(dist::ProcessGroup& group, std::int64_t bytes, int warmup, int reps) {
  EPOCH_CHECK(bytes >= 4 && reps >= 1 && warmup >= 0, "time_allreduce: ", bytes, " bytes, ", reps,
              " repetitions");
  std::vector<float> data(static_cast<std::size_t>(bytes / 4), 1.0f);
  std::vector<double> times;
  for (int i = 0; i < warmup + reps; ++i) {
    group.barrier();
    const auto start = std::chrono::steady_clock::now();
    group.all_reduce_sum(data.data(), static_cast<std::int64_t>(data.size()));
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (i >= warmup) times.push_back(s);
    std::fill(data.begin(), data.end(), 1.0f);  // keep the values finite
  }
  return median(std::move(times));
}

double ring_allreduce_seconds(const AlphaBeta& m, int ranks, std::int64_t bytes) {
  if (ranks <= 1) return 0.0;
  const double p = ranks;
  return 2.0 * (p - 1.0) * m.alpha_s +
         2.0 * (p - 1.0) / p * static_cast<double>(bytes) * m.beta_s_per_byte;
}

AlphaBeta fit_ring_alpha_beta(const std::vector<AllReducePoint>& points) {
  // t = alpha * a + beta * b with a = 2 (p - 1), b = 2 (p - 1) / p * n: normal equations.
  double saa = 0, sab = 0, sbb = 0, sat = 0, sbt = 0;
  int used = 0;
  for (const AllReducePoint& q : points) {
    if (q.ranks < 2) continue;
    const double p = q.ranks, a = 2.0 * (p - 1.0), b = a / p * static_cast<double>(q.bytes);
    saa += a * a, sab += a * b, sbb += b * b, sat += a * q.seconds, sbt += b * q.seconds;
    ++used;
  }
  const double det = saa * sbb - sab * sab;
  if (used < 2 || !(std::fabs(det) > 1e-12 * saa * sbb))
    EPOCH_THROW(ConfigError,
                "fitting the all-reduce model needs timings of at least two sizes "
                "on two or more ranks (got ",
                used, " usable)");
  AlphaBeta m;
  m.alpha_s = std::max(0.0, (sat * sbb - sbt * sab) / det);
  m.beta_s_per_byte = std::max(0.0, (saa * sbt - sab * sat) / det);
  return m;
}

double bus_bandwidth(int ranks, std::int64_t bytes, double seconds) {
  if (ranks <= 1 || seconds <= 0) return 0.0;
  const double p = ranks;
  return 2.0 * (p - 1.0) / p * static_cast<double>(bytes) / seconds;
}

std::vector<ProjectionPoint> project_efficiency(double compute_s, std::int64_t gradient_bytes,
                                                double hidden_fraction, const AlphaBeta& network,
                                                const std::vector<int>& nodes) {
  EPOCH_CHECK(compute_s > 0, "project_efficiency: the step's compute time must be positive");
  const double hidden = std::clamp(hidden_fraction, 0.0, 1.0);
  std::vector<ProjectionPoint> out;
  for (int n : nodes) {
    ProjectionPoint q;
    q.nodes = n;
    q.comm_s = ring_allreduce_seconds(network, n, gradient_bytes);
    // What hides runs beside backward, about two thirds of a step's compute (backward is
    // about twice the forward's multiply-adds): no more than that can hide.
    const double hideable = std::min(hidden * q.comm_s, kBackwardShare * compute_s);
    q.exposed_s = q.comm_s - hideable;
    q.efficiency = compute_s / (compute_s + q.exposed_s);
    out.push_back(q);
  }
  return out;
}

namespace {
std::string num(double v, int digits = 1) {
  char b[32];
  std::snprintf(b, sizeof b, "%.*f", digits, v);
  return b;
}
}  // namespace

std::string scaling_svg(const std::string& title, const std::vector<ScalePlotPoint>& measured,
                        const std::vector<ProjectionPoint>& projection,
                        const ScalePlotPoint& reference, const std::string& reference_label) {
  const double W = 640, H = 400, L = 60, R = 20, T = 40, B = 50;
  int max_nodes = std::max(2, reference.nodes);
  for (const auto& q : projection) max_nodes = std::max(max_nodes, q.nodes);
  for (const auto& q : measured) max_nodes = std::max(max_nodes, q.nodes);
  const double lx = std::log2(static_cast<double>(max_nodes));
  const auto x = [&](int n) { return L + (W - L - R) * std::log2(std::max(1, n)) / lx; };
  const auto y = [&](double e) { return T + (H - T - B) * (1.0 - std::clamp(e, 0.0, 1.1) / 1.1); };
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
    << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    << "<text x=\"" << W / 2 << "\" y=\"20\" text-anchor=\"middle\" font-size=\"14\">" << title
    << "</text>\n";
  for (double e = 0.0; e <= 1.001; e += 0.25) {  // horizontal grid and labels
    s << "<line x1=\"" << L << "\" x2=\"" << W - R << "\" y1=\"" << num(y(e)) << "\" y2=\""
      << num(y(e)) << "\" stroke=\"#ddd\"/>\n<text x=\"" << L - 6 << "\" y=\"" << num(y(e) + 4)
      << "\" text-anchor=\"end\">" << static_cast<int>(std::lround(e * 100)) << "%</text>\n";
  }
  for (int n = 1; n <= max_nodes; n *= 2)
    s << "<text x=\"" << num(x(n)) << "\" y=\"" << H - B + 18 << "\" text-anchor=\"middle\">" << n
      << "</text>\n";
  s << "<text x=\"" << W / 2 << "\" y=\"" << H - 10
    << "\" text-anchor=\"middle\">nodes (log scale)</text>\n";
  if (!projection.empty()) {
    s << "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-dasharray=\"6 4\" points=\"";
    for (const auto& q : projection) s << num(x(q.nodes)) << "," << num(y(q.efficiency)) << " ";
    s << "\"/>\n<text x=\"" << num(x(projection.back().nodes) - 4) << "\" y=\""
      << num(y(projection.back().efficiency) - 8)
      << "\" text-anchor=\"end\" fill=\"#1f77b4\">projection (alpha-beta ring model)</text>\n";
  }
  for (const auto& q : measured)
    s << "<circle cx=\"" << num(x(q.nodes)) << "\" cy=\"" << num(y(q.efficiency))
      << "\" r=\"4\" fill=\"#d62728\"><title>measured: " << q.nodes << " ranks, "
      << num(100 * q.efficiency) << "%</title></circle>\n";
  if (reference.nodes > 0)
    s << "<rect x=\"" << num(x(reference.nodes) - 4) << "\" y=\""
      << num(y(reference.efficiency) - 4)
      << "\" width=\"8\" height=\"8\" fill=\"#2ca02c\"/>\n<text x=\"" << num(x(reference.nodes) - 8)
      << "\" y=\"" << num(y(reference.efficiency) + 18)
      << "\" text-anchor=\"end\" fill=\"#2ca02c\">" << reference_label << "</text>\n";
  s << "<text x=\"" << L + 8 << "\" y=\"" << T + 14
    << "\" fill=\"#d62728\">&#9679; measured on this machine</text>\n</svg>\n";
  return s.str();
}

}  // namespace epoch::bench
