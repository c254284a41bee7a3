// Scaling over processes (`epoch scale`): plain MPI_Allreduce timings, the alpha-beta model of
// a ring all-reduce fitted to them, the bus bandwidth both achieve, the projection of scaling
// efficiency to many nodes on a given network, and its SVG plot.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "epoch/dist/process_group.h"

namespace epoch::bench {

/// One timed all-reduce: `bytes` of f32 summed over `ranks` in `seconds` (median).
struct AllReducePoint {
  int ranks = 1;
  std::int64_t bytes = 0;
  double seconds = 0;
};

/// Plain MPI_Allreduce (sum, in place) of `bytes` over the group: the median seconds of `reps`
/// calls after `warmup`, each started together (a barrier first). Collective: every rank calls.
double time_allreduce(dist::ProcessGroup& group, std::int64_t bytes, int warmup, int reps);

/// The gradient averager's all-reduce (dist::GradientAverager, as training runs it) of buckets
/// of these float counts, all queued at once after a barrier, the median seconds until the last
/// is done; and a plain MPI_Allreduce of the same bytes, timed in the same repetitions (each
/// after a barrier, each going first every other time), so that both see the same load of a
/// shared machine. Collective.
struct BucketedTiming {
  double bucketed_s = 0;
  double plain_s = 0;
};
BucketedTiming time_bucketed_allreduce(dist::ProcessGroup& group,
                                       const std::vector<std::int64_t>& counts, int warmup,
                                       int reps);

/// The ring all-reduce's cost: t = 2 (p - 1) alpha + 2 (p - 1) / p * n * beta (alpha: a
/// message's latency in seconds, beta: seconds per byte, so 1 / beta is the link's bandwidth).
struct AlphaBeta {
  double alpha_s = 0;
  double beta_s_per_byte = 0;
};
double ring_allreduce_seconds(const AlphaBeta& m, int ranks, std::int64_t bytes);
/// Least squares over points of 2 or more ranks (ConfigError with fewer than two such points
/// or sizes that cannot separate the terms); negative fits are clamped to 0.
AlphaBeta fit_ring_alpha_beta(const std::vector<AllReducePoint>& points);
/// The bus bandwidth of an all-reduce, bytes/s: 2 (p - 1) / p * n / t (what each link carries).
double bus_bandwidth(int ranks, std::int64_t bytes, double seconds);

/// Projected data-parallel efficiency at `nodes` (weak scaling: each node keeps its batch and
/// its compute time): communication from `network`, of which `hidden_fraction` (measured)
/// hides behind backward, but never more than kBackwardShare of the compute time (backward's
/// part of a step); efficiency = compute / (compute + exposed).
inline constexpr double kBackwardShare = 2.0 / 3.0;
struct ProjectionPoint {
  int nodes = 0;
  double comm_s = 0, exposed_s = 0, efficiency = 0;
};
std::vector<ProjectionPoint> project_efficiency(double compute_s, std::int64_t gradient_bytes,
                                                double hidden_fraction, const AlphaBeta& network,
                                                const std::vector<int>& nodes);

/// A self-contained SVG: efficiency against nodes (log scale), the measured points, the
/// projection's line, and a reference point (the source system's) with its label.
struct ScalePlotPoint {
  int nodes = 0;
  double efficiency = 0;
};
std::string scaling_svg(const std::string& title, const std::vector<ScalePlotPoint>& measured,
                        const std::vector<ProjectionPoint>& projection,
                        const ScalePlotPoint& reference, const std::string& reference_label);

}  // namespace epoch::bench
