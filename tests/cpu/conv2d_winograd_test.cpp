// epoch's own Winograd F(4x4, 3x3) kernels (cpu/conv2d_winograd.h) against the reference
// convolution (cpu/conv2d_cpu.h): forward with bias and ReLU, and every gradient, on shapes that
// reach each edge of the code (partial tiles, padding 0, 1 and 2, unequal padding, 8-channel
// output tails, input channels that are not a multiple of the micro-kernel's 6 rows, a tile
// block split across threads, several tile blocks with a band of output channels narrower than
// the rest); and the same bits call after call and for any thread count.
#include "cpu/conv2d_winograd.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "cpu/conv2d_cpu.h"
#include "cpu/cpu_features.h"

namespace epoch {
namespace {

using i64 = std::int64_t;

struct Case {
  const char* name;
  i64 N, C, H, W, OC, pad_h, pad_w;
};

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"same_16_to_32", 3, 16, 16, 16, 32, 1, 1},
      {"valid_partial_tiles_output_tail", 2, 8, 13, 13, 24, 0, 0},
      {"full_padding_small_image", 2, 16, 5, 7, 8, 2, 2},
      {"unequal_padding", 2, 40, 9, 6, 16, 1, 0},
      {"image_smaller_than_a_tile", 5, 8, 2, 3, 8, 1, 1},
      {"threads_share_the_tile_blocks", 8, 32, 24, 24, 64, 1, 1},
      {"two_tile_blocks_and_a_narrow_band", 4, 24, 36, 36, 72, 1, 1},
  };
  return c;
}

kernels::Conv2dDims dims_of(const Case& c) {
  kernels::Conv2dDims d;
  d.N = c.N, d.C = c.C, d.H = c.H, d.W = c.W, d.OC = c.OC, d.KH = 3, d.KW = 3;
  d.pad_h = c.pad_h, d.pad_w = c.pad_w;
  d.OH = c.H + 2 * c.pad_h - 2, d.OW = c.W + 2 * c.pad_w - 2;
  return d;
}

std::vector<float> random_values(i64 n, unsigned seed, float scale) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = u(gen);
  return v;
}

// (N, C, H, W) <-> (N, C/8, H, W, 8)
std::vector<float> to_blocked(const std::vector<float>& plain, i64 N, i64 C, i64 H, i64 W) {
  std::vector<float> out(plain.size());
  for (i64 n = 0; n < N; ++n)
    for (i64 c = 0; c < C; ++c)
      for (i64 i = 0; i < H * W; ++i)
        out[(((n * (C / 8) + c / 8) * H * W) + i) * 8 + c % 8] = plain[(n * C + c) * H * W + i];
  return out;
}

std::vector<float> to_plain(const std::vector<float>& blocked, i64 N, i64 C, i64 H, i64 W) {
  std::vector<float> out(blocked.size());
  for (i64 n = 0; n < N; ++n)
    for (i64 c = 0; c < C; ++c)
      for (i64 i = 0; i < H * W; ++i)
        out[(n * C + c) * H * W + i] = blocked[(((n * (C / 8) + c / 8) * H * W) + i) * 8 + c % 8];
  return out;
}

// The largest |a - b| over the largest |b|: Winograd's rounding error is relative to the size
// of the values summed, not to each output.
double relative_error(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::abs(static_cast<double>(b[i])));
  }
  return diff / std::max(scale, 1e-30);
}

struct Inputs {
  std::vector<float> x, w, b, dy;  // plain layouts
};

Inputs inputs_for(const kernels::Conv2dDims& d) {
  return {random_values(d.N * d.C * d.H * d.W, 1, 1.0f), random_values(d.OC * d.C * 9, 2, 0.2f),
          random_values(d.OC, 3, 0.5f), random_values(d.N * d.OC * d.OH * d.OW, 4, 1.0f)};
}

struct Outputs {
  std::vector<float> y, dx, dw, db;  // plain layouts
};

Outputs winograd(const kernels::Conv2dDims& d, const Inputs& in, bool relu) {
  const std::vector<float> xb = to_blocked(in.x, d.N, d.C, d.H, d.W);
  const std::vector<float> dyb = to_blocked(in.dy, d.N, d.OC, d.OH, d.OW);
  std::vector<float> yb(static_cast<std::size_t>(d.N * d.OC * d.OH * d.OW), NAN);
  std::vector<float> dxb(in.x.size(), NAN), dw(in.w.size(), NAN), db(in.b.size(), NAN);
  cpu::conv2d_winograd_forward(d, xb.data(), in.w.data(), in.b.data(), yb.data(), relu);
  cpu::conv2d_winograd_backward(d, dyb.data(), xb.data(), in.w.data(), dxb.data(), dw.data(),
                                db.data());
  return {to_plain(yb, d.N, d.OC, d.OH, d.OW), to_plain(dxb, d.N, d.C, d.H, d.W), dw, db};
}

Outputs reference(const kernels::Conv2dDims& d, const Inputs& in, bool relu) {
  Outputs r{std::vector<float>(static_cast<std::size_t>(d.N * d.OC * d.OH * d.OW)),
            std::vector<float>(in.x.size()), std::vector<float>(in.w.size()),
            std::vector<float>(in.b.size())};
  cpu::conv2d_forward(d, in.x.data(), in.w.data(), in.b.data(), r.y.data());
  if (relu)
    for (float& v : r.y) v = std::max(v, 0.0f);
  cpu::conv2d_backward(d, in.dy.data(), in.x.data(), in.w.data(), r.dx.data(), r.dw.data(),
                       r.db.data());
  return r;
}

class WinogradTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    if (!cpu::cpu_has_avx2_fma()) GTEST_SKIP() << "the kernels need AVX2 and FMA";
  }
};

TEST_P(WinogradTest, MatchesTheReferenceConvolution) {
  const kernels::Conv2dDims d = dims_of(GetParam());
  ASSERT_TRUE(cpu::conv2d_winograd_supported(d));
  const Inputs in = inputs_for(d);
  for (bool relu : {false, true}) {
    const Outputs r = reference(d, in, relu), got = winograd(d, in, relu);
    // Measured on these cases: at most 6.7e-6 of the largest value (y, dx, dw) and 7.5e-7 (db);
    // a wrong coefficient or tile edge gives 1e-2 or more.
    EXPECT_LT(relative_error(got.y, r.y), 5e-5) << "y, relu " << relu;
    EXPECT_LT(relative_error(got.dx, r.dx), 5e-5) << "dx";
    EXPECT_LT(relative_error(got.dw, r.dw), 5e-5) << "dw";
    EXPECT_LT(relative_error(got.db, r.db), 1e-5) << "db";
  }
}

TEST_P(WinogradTest, GivesTheSameBitsEveryCall) {
  const kernels::Conv2dDims d = dims_of(GetParam());
  const Inputs in = inputs_for(d);
  const Outputs a = winograd(d, in, true), b = winograd(d, in, true);
  EXPECT_EQ(a.y, b.y);
  EXPECT_EQ(a.dx, b.dx);
  EXPECT_EQ(a.dw, b.dw);
  EXPECT_EQ(a.db, b.db);
}

// Each element of every product (and of the bias gradient) is one thread's whole sum in a fixed
// order, whatever the split, so no result depends on the thread count.
TEST_P(WinogradTest, BitsDoNotDependOnTheThreadCount) {
  const kernels::Conv2dDims d = dims_of(GetParam());
  const Inputs in = inputs_for(d);
  const int before = omp_get_max_threads();
  omp_set_num_threads(1);
  const Outputs one = winograd(d, in, false);
  for (int threads : {2, 3}) {
    omp_set_num_threads(threads);
    const Outputs many = winograd(d, in, false);
    EXPECT_EQ(one.y, many.y) << threads << " threads";
    EXPECT_EQ(one.dx, many.dx) << threads << " threads";
    EXPECT_EQ(one.dw, many.dw) << threads << " threads";
    EXPECT_EQ(one.db, many.db) << threads << " threads";
  }
  omp_set_num_threads(before);
}

INSTANTIATE_TEST_SUITE_P(Shapes, WinogradTest, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return std::string(info.param.name);
                         });

TEST(WinogradSupport, TakesOnlyWhatTheKernelsHandle) {
  kernels::Conv2dDims d = dims_of({"base", 1, 16, 8, 8, 16, 1, 1});
  EXPECT_EQ(cpu::conv2d_winograd_supported(d), cpu::cpu_has_avx2_fma()) << "only with AVX2";
  kernels::Conv2dDims s = d;
  s.stride_h = 2;
  EXPECT_FALSE(cpu::conv2d_winograd_supported(s)) << "stride";
  s = d, s.C = 12;
  EXPECT_FALSE(cpu::conv2d_winograd_supported(s)) << "input channels not a multiple of 8";
  s = d, s.OC = 20;
  EXPECT_FALSE(cpu::conv2d_winograd_supported(s)) << "output channels not a multiple of 8";
  s = d, s.KH = s.KW = 5;
  EXPECT_FALSE(cpu::conv2d_winograd_supported(s)) << "5x5";
  s = d, s.pad_w = 3;
  EXPECT_FALSE(cpu::conv2d_winograd_supported(s)) << "padding 3";
  s = d, s.dilation_h = 2;
  EXPECT_FALSE(cpu::conv2d_winograd_supported(s)) << "dilation";
  s = d, s.groups = 2;
  EXPECT_FALSE(cpu::conv2d_winograd_supported(s)) << "groups";
}

}  // namespace
}  // namespace epoch
