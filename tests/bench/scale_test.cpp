// The scaling model of `epoch scale`: the ring all-reduce's alpha-beta fit recovers known
// parameters, the bus bandwidth and the projection follow their formulas, and the plot is a
// self-contained SVG.
#include "epoch/bench/scale.h"

#include <gtest/gtest.h>

#include <vector>

#include "epoch/tensor/error.h"

namespace epoch::bench {
namespace {

TEST(RingModel, FitRecoversAlphaAndBeta) {
  const AlphaBeta truth{2e-6, 1.0 / 5e9};  // 2 us, 5 GB/s
  std::vector<AllReducePoint> pts;
  for (int p : {2, 4})
    for (std::int64_t n : {4096, 65536, 1 << 20, 5000000})
      pts.push_back({p, n, ring_allreduce_seconds(truth, p, n)});
  pts.push_back({1, 4096, 1.0});  // one rank: ignored
  const AlphaBeta fit = fit_ring_alpha_beta(pts);
  EXPECT_NEAR(fit.alpha_s, truth.alpha_s, 1e-12);
  EXPECT_NEAR(fit.beta_s_per_byte, truth.beta_s_per_byte, 1e-18);
}

TEST(RingModel, FitNeedsTwoSizesOnSeveralRanks) {
  EXPECT_THROW(fit_ring_alpha_beta({{2, 4096, 1e-5}}), ConfigError);
  EXPECT_THROW(fit_ring_alpha_beta({{1, 4096, 1e-5}, {1, 65536, 1e-4}}), ConfigError);
}

TEST(RingModel, CostAndBusBandwidth) {
  const AlphaBeta m{1e-6, 1e-9};
  EXPECT_DOUBLE_EQ(ring_allreduce_seconds(m, 1, 1000), 0.0);
  // p = 4: 6 alpha + 1.5 n beta
  EXPECT_DOUBLE_EQ(ring_allreduce_seconds(m, 4, 1000000), 6e-6 + 1.5e-3);
  EXPECT_DOUBLE_EQ(bus_bandwidth(2, 1000, 1e-3), 1e6);  // 2(p-1)/p = 1
  EXPECT_DOUBLE_EQ(bus_bandwidth(1, 1000, 1e-3), 0.0);
}

TEST(Projection, EfficiencyFallsWithNodesAndRisesWithOverlap) {
  const AlphaBeta net{1e-6, 8.0 / 100e9};  // 100 Gb/s, 1 us
  const std::int64_t grad = 100 << 20;     // 100 MiB
  const auto none = project_efficiency(0.1, grad, 0.0, net, {16, 64, 1024});
  const auto half = project_efficiency(0.1, grad, 0.5, net, {16, 64, 1024});
  ASSERT_EQ(none.size(), 3u);
  for (std::size_t i = 0; i < none.size(); ++i) {
    EXPECT_LT(none[i].efficiency, 1.0);
    EXPECT_GT(half[i].efficiency, none[i].efficiency);
    EXPECT_DOUBLE_EQ(none[i].efficiency, 0.1 / (0.1 + none[i].comm_s));
    EXPECT_DOUBLE_EQ(half[i].exposed_s, 0.5 * half[i].comm_s);
    if (i > 0) {
      EXPECT_LT(none[i].efficiency, none[i - 1].efficiency);
    }
  }
  EXPECT_DOUBLE_EQ(project_efficiency(0.1, grad, 1.0, net, {1024})[0].efficiency, 1.0);
  // No more hides than backward's share of the compute.
  const ProjectionPoint tight = project_efficiency(0.001, grad, 1.0, net, {1024})[0];
  EXPECT_NEAR(tight.exposed_s, tight.comm_s - kBackwardShare * 0.001, 1e-12);
}

TEST(Projection, PlotIsSelfContainedSvg) {
  const auto proj = project_efficiency(0.1, 1 << 20, 0.5, {1e-6, 8e-11}, {16, 1024});
  const std::string svg =
      scaling_svg("m", {{1, 1.0}, {2, 0.9}}, proj, {1024, 0.73}, "source: 73% at 1024 CPUs");
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_NE(svg.find("source: 73% at 1024 CPUs"), std::string::npos);
  EXPECT_NE(svg.find("projection"), std::string::npos);
  EXPECT_EQ(svg.find("http://", svg.find("xmlns") + 40), std::string::npos) << "no external refs";
}

}  // namespace
}  // namespace epoch::bench
