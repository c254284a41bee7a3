// The fast path's convolution algorithms (ops::ConvAlgorithm): `automatic` runs a Winograd
// kernel on the 3x3 unit-stride layers with 16 or more input channels (oneDNN's on AVX-512,
// epoch's own below it: cpu_tests_avx2 runs this file under oneDNN's AVX2 dispatch) and direct
// convolution elsewhere; `direct` never runs Winograd. Either
// matches the reference kernels (Winograd to a looser tolerance: it rounds differently) and
// gives the same bits run after run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "cpu/cpu_features.h"
#include "epoch/ops/backend.h"
#include "epoch/ops/conv2d.h"
#include "testing/testing.h"

namespace epoch {
namespace {

// Where Winograd runs under `automatic`: never (not eligible) or always (oneDNN's on AVX-512,
// in every pass; below AVX-512 epoch's own kernels take every eligible layer).
enum class Winograd { never, always };

struct Case {
  const char* name;
  Shape x, w;
  int pad, stride;
  Winograd winograd;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"deep_cnn_layer", {16, 64, 16, 16}, {64, 64, 3, 3}, 1, 1, Winograd::always},
      // output 27x27: the last row and column of 4x4 tiles are partial
      {"valid_odd_size_32_channels", {16, 32, 29, 29}, {32, 32, 3, 3}, 0, 1, Winograd::always},
      {"small_batch", {8, 16, 13, 11}, {32, 16, 3, 3}, 1, 1, Winograd::always},
      {"first_layer_3_channels", {16, 3, 16, 16}, {32, 3, 3, 3}, 1, 1, Winograd::never},
      {"strided", {16, 32, 16, 16}, {32, 32, 3, 3}, 1, 2, Winograd::never},
  };
  return c;
}

struct Result {
  Tensor y, dx, dw, db;
  std::string impls;  // every implementation the forward and backward ran, joined
};

Result run(const Case& c, ops::Context context) {
  const ops::ContextGuard guard(context);
  ops::Conv2dParams p;
  p.pad_h = p.pad_w = c.pad;
  p.stride_h = p.stride_w = c.stride;
  const Tensor x = testing::random_tensor(c.x, 1);
  const Tensor w = testing::random_tensor(c.w, 2, -0.2f, 0.2f);
  const Tensor b = testing::random_tensor({c.w[0]}, 3);
  ops::KernelTrace trace;
  Result r;
  r.y = ops::conv2d_forward(x, w, b, p);
  const Tensor dy = testing::random_tensor(r.y.shape(), 4);
  const ops::Conv2dGrads g = ops::conv2d_backward(dy, x, w, true, p);
  r.dx = g.dx, r.dw = g.dw, r.db = g.db;
  for (const ops::KernelRecord& k : trace.records()) r.impls += k.impl + "; ";
  return r;
}

ops::Context fast(ops::ConvAlgorithm a) { return {ops::CpuKernels::fast, 2, a}; }

int count_of(const std::string& text, const std::string& part) {
  int n = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

bool has_winograd(const std::string& impls) { return impls.find("wino") != std::string::npos; }

// oneDNN has f32 Winograd kernels for AVX-512 only; below it epoch runs its own.
bool own_winograd(const std::string& impls) {
  return impls.find("epoch_winograd") != std::string::npos;
}

void expect_same_bits(const Tensor& a, const Tensor& b, const char* what) {
  const std::vector<float> va = a.to_vector(), vb = b.to_vector();
  ASSERT_EQ(va.size(), vb.size()) << what;
  for (std::size_t i = 0; i < va.size(); ++i) ASSERT_EQ(va[i], vb[i]) << what << " at " << i;
}

class ConvAlgorithmTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    if (!ops::onednn_available()) GTEST_SKIP() << "this build has no oneDNN";
  }
};

TEST_P(ConvAlgorithmTest, AutomaticRunsWinogradOnlyWhereEligibleAndMatchesTheReference) {
  const Case& c = GetParam();
  const Result ref = run(c, {ops::CpuKernels::reference, 2, ops::ConvAlgorithm::automatic});
  const Result r = run(c, fast(ops::ConvAlgorithm::automatic));
  if (c.winograd == Winograd::never) {
    EXPECT_FALSE(has_winograd(r.impls)) << r.impls;
  }
  // (no Winograd at all on a CPU without AVX-512 or AVX2: EPOCH_CPU_AVX2=0 in CTest)
  if (c.winograd == Winograd::always && (ops::onednn_has_winograd() || cpu::cpu_has_avx2_fma())) {
    EXPECT_TRUE(has_winograd(r.impls)) << r.impls;
  }
  // On AVX-512, oneDNN's Winograd runs all three passes: forward, and backward data and weights
  // (asked for by name: convolution_auto kept the weight gradient on direct convolution).
  if (c.winograd == Winograd::always && ops::onednn_has_winograd()) {
    EXPECT_EQ(count_of(r.impls, "jit_wino"), 3) << r.impls;
  }
  // epoch's own kernels run exactly where oneDNN has none, on every eligible layer, when the
  // CPU has AVX2 (else oneDNN's direct convolution runs).
  if (ops::onednn_has_winograd() || !cpu::cpu_has_avx2_fma()) {
    EXPECT_FALSE(own_winograd(r.impls)) << r.impls;
  } else if (c.winograd != Winograd::never) {
    EXPECT_TRUE(own_winograd(r.impls)) << r.impls;
  }
  // Winograd F(4x4, 3x3) rounds differently from direct summation: on these cases it was up
  // to 1.3e-5 from the reference (values up to about 5), direct convolution up to 7e-6; the
  // tolerances leave more than 10x of that. The weight gradient's error follows the size of
  // its largest elements, not of each one (G^T dU G brings back sums far larger than dw, and
  // they cancel): up to 2.9e-5 of the largest |dw| here (1.7e-3 at 57), so its tolerance is
  // 3e-4 of the largest, plus the elementwise one.
  EXPECT_TRUE(testing::allclose(r.y, ref.y, 2e-4f, 2e-4f)) << "y";
  EXPECT_TRUE(testing::allclose(r.dx, ref.dx, 2e-4f, 2e-4f)) << "dx";
  float largest_dw = 0.0f;
  for (float v : ref.dw.to_vector()) largest_dw = std::max(largest_dw, std::abs(v));
  EXPECT_TRUE(testing::allclose(r.dw, ref.dw, 5e-4f + 3e-4f * largest_dw, 5e-4f)) << "dw";
  EXPECT_TRUE(testing::allclose(r.db, ref.db, 2e-4f, 2e-4f)) << "db";
}

TEST_P(ConvAlgorithmTest, DirectNeverRunsWinograd) {
  const Case& c = GetParam();
  const Result ref = run(c, {ops::CpuKernels::reference, 2, ops::ConvAlgorithm::direct});
  const Result r = run(c, fast(ops::ConvAlgorithm::direct));
  EXPECT_FALSE(has_winograd(r.impls)) << r.impls;
  EXPECT_TRUE(testing::allclose(r.y, ref.y, 1e-4f, 1e-4f)) << "y";
  EXPECT_TRUE(testing::allclose(r.dx, ref.dx, 1e-4f, 1e-4f)) << "dx";
  EXPECT_TRUE(testing::allclose(r.dw, ref.dw, 5e-4f, 5e-4f)) << "dw";
}

TEST_P(ConvAlgorithmTest, EachAlgorithmGivesTheSameBitsRunAfterRun) {
  for (ops::ConvAlgorithm a : {ops::ConvAlgorithm::automatic, ops::ConvAlgorithm::direct}) {
    const Result first = run(GetParam(), fast(a)), second = run(GetParam(), fast(a));
    expect_same_bits(first.y, second.y, "y");
    expect_same_bits(first.dx, second.dx, "dx");
    expect_same_bits(first.dw, second.dw, "dw");
    expect_same_bits(first.db, second.db, "db");
  }
}

// The primitive cache is shared by all threads, so a primitive built on one runs on another
// (two configurations side by side, a data loader's thread, a test's). oneDNN's default keeps
// some kernels' scratchpad (its Winograd ones) in a buffer of the thread that built them; run
// elsewhere they wrote through a missing buffer and crashed. The same bits on any thread.
TEST_P(ConvAlgorithmTest, CachedPrimitivesRunOnAnotherThread) {
  const Result here = run(GetParam(), fast(ops::ConvAlgorithm::automatic));
  Result there;
  std::thread other([&] { there = run(GetParam(), fast(ops::ConvAlgorithm::automatic)); });
  other.join();
  expect_same_bits(here.y, there.y, "y");
  expect_same_bits(here.dx, there.dx, "dx");
  expect_same_bits(here.dw, there.dw, "dw");
  expect_same_bits(here.db, there.db, "db");
}

INSTANTIATE_TEST_SUITE_P(Shapes, ConvAlgorithmTest, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return std::string(info.param.name);
                         });

TEST(ConvAlgorithmNames, ParseAndNameRoundTrip) {
  EXPECT_EQ(ops::parse_conv_algorithm("auto"), ops::ConvAlgorithm::automatic);
  EXPECT_EQ(ops::parse_conv_algorithm("direct"), ops::ConvAlgorithm::direct);
  EXPECT_STREQ(ops::conv_algorithm_name(ops::ConvAlgorithm::automatic), "auto");
  EXPECT_STREQ(ops::conv_algorithm_name(ops::ConvAlgorithm::direct), "direct");
  EXPECT_THROW(ops::parse_conv_algorithm("winograd"), ConfigError);
}

TEST(ConvAlgorithmContext, TheGuardInstallsAndRestoresTheChoice) {
  EXPECT_EQ(ops::conv_algorithm(), ops::ConvAlgorithm::automatic);
  {
    const ops::ContextGuard guard(fast(ops::ConvAlgorithm::direct));
    EXPECT_EQ(ops::conv_algorithm(), ops::ConvAlgorithm::direct);
    EXPECT_EQ(ops::current_context().conv, ops::ConvAlgorithm::direct);
  }
  EXPECT_EQ(ops::conv_algorithm(), ops::ConvAlgorithm::automatic);
}

}  // namespace
}  // namespace epoch
