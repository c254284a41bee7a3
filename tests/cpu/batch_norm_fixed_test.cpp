// The fixed-order batch norm of strict (cpu/batch_norm_fixed.h) called directly, row-major and
// channel-blocked (8 and 16), against the reference kernels: forward (y, batch and running
// statistics) and backward (dx, dgamma, dbeta), training and eval, on awkward shapes and on
// values far from zero (the shifted statistics); and the same bits at 1 to 4 threads.
#include "cpu/batch_norm_fixed.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cpu/norm_cpu.h"

namespace epoch {
namespace {

using Floats = std::vector<float>;

struct Case {
  std::int64_t N, C, HW, block;
  float offset;  // added to every x: a mean far from zero
};

std::string describe(const Case& c) {
  return "N " + std::to_string(c.N) + " C " + std::to_string(c.C) + " HW " + std::to_string(c.HW) +
         " block " + std::to_string(c.block) + " offset " + std::to_string(c.offset);
}

Floats random_floats(std::size_t n, unsigned seed, float offset, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  Floats v(n);
  for (float& f : v) f = offset + scale * dist(rng);
  return v;
}

// Row-major (N, C, HW) to (N, C/B, HW, B) (to_blocked), or back.
Floats relayout(const Floats& x, const Case& c, bool to_blocked) {
  if (c.block == 0) return x;
  Floats out(x.size());
  const std::int64_t B = c.block;
  for (std::int64_t n = 0; n < c.N; ++n)
    for (std::int64_t ch = 0; ch < c.C; ++ch)
      for (std::int64_t i = 0; i < c.HW; ++i) {
        const std::int64_t plain = (n * c.C + ch) * c.HW + i;
        const std::int64_t blocked = ((n * (c.C / B) + ch / B) * c.HW + i) * B + ch % B;
        if (to_blocked)
          out[blocked] = x[plain];
        else
          out[plain] = x[blocked];
      }
  return out;
}

struct Outputs {
  Floats y, save_mean, save_invstd, running_mean, running_var, dx, dgamma, dbeta;
};

struct Inputs {
  Floats x, dy, gamma, beta, running_mean, running_var;
};

Inputs inputs_for(const Case& c) {
  const auto n = static_cast<std::size_t>(c.N * c.C * c.HW), C = static_cast<std::size_t>(c.C);
  Inputs in;
  in.x = random_floats(n, 1, c.offset, c.offset != 0.0f ? 0.01f : 1.0f);
  in.dy = random_floats(n, 2, 0.0f, 1.0f);
  in.gamma = random_floats(C, 3, 1.0f, 0.5f);
  in.beta = random_floats(C, 4, 0.0f, 0.5f);
  in.running_mean = random_floats(C, 5, c.offset, 0.1f);
  in.running_var = random_floats(C, 6, 2.0f, 0.1f);
  return in;
}

// The reference on row-major tensors (block ignored), or the fixed-order kernel in c's layout
// (outputs brought back to row-major).
Outputs run(const Case& c, const Inputs& in, bool training, bool reference) {
  const auto n = static_cast<std::size_t>(c.N * c.C * c.HW), C = static_cast<std::size_t>(c.C);
  Outputs o{Floats(n),      Floats(C), Floats(C), in.running_mean,
            in.running_var, Floats(n), Floats(C), Floats(C)};
  constexpr float kMomentum = 0.1f, kEps = 1e-5f;
  if (reference) {
    cpu::batch_norm_forward(in.x.data(), in.gamma.data(), in.beta.data(), o.running_mean.data(),
                            o.running_var.data(), o.y.data(), o.save_mean.data(),
                            o.save_invstd.data(), c.N, c.C, c.HW, training, kMomentum, kEps);
    cpu::batch_norm_backward(in.dy.data(), in.x.data(), in.gamma.data(), o.save_mean.data(),
                             o.save_invstd.data(), o.dx.data(), o.dgamma.data(), o.dbeta.data(),
                             c.N, c.C, c.HW, training);
    return o;
  }
  const Floats x = relayout(in.x, c, true), dy = relayout(in.dy, c, true);
  Floats y(n), dx(n);
  cpu::fixed_order::batch_norm_forward(x.data(), in.gamma.data(), in.beta.data(),
                                       o.running_mean.data(), o.running_var.data(), y.data(),
                                       o.save_mean.data(), o.save_invstd.data(), c.N, c.C, c.HW,
                                       training, kMomentum, kEps, c.block);
  cpu::fixed_order::batch_norm_backward(dy.data(), x.data(), in.gamma.data(), o.save_mean.data(),
                                        o.save_invstd.data(), dx.data(), o.dgamma.data(),
                                        o.dbeta.data(), c.N, c.C, c.HW, training, c.block);
  o.y = relayout(y, c, false);
  o.dx = relayout(dx, c, false);
  return o;
}

// |a - b| <= atol + rtol |b| everywhere, b the reference; atol relative to the largest |b|.
void expect_close(const Floats& a, const Floats& b, const char* what, float rtol) {
  ASSERT_EQ(a.size(), b.size()) << what;
  float largest = 0.0f;
  for (float v : b) largest = std::max(largest, std::abs(v));
  const float atol = rtol * largest;
  for (std::size_t i = 0; i < a.size(); ++i)
    ASSERT_LE(std::abs(a[i] - b[i]), atol + rtol * std::abs(b[i]))
        << what << "[" << i << "]: " << a[i] << " against the reference's " << b[i];
}

class BatchNormFixed : public ::testing::TestWithParam<Case> {};

TEST_P(BatchNormFixed, MatchesTheReference) {
  const Case c = GetParam();
  const Inputs in = inputs_for(c);
  for (bool training : {true, false}) {
    SCOPED_TRACE(training ? "training" : "eval");
    const Outputs got = run(c, in, training, false), want = run(c, in, training, true);
    // far from zero, y and dx come from x - mean at the float rounding of values near 1000
    const float rtol = c.offset != 0.0f ? 2e-3f : 1e-4f;
    expect_close(got.y, want.y, "y", rtol);
    expect_close(got.save_mean, want.save_mean, "save_mean", 1e-6f);
    expect_close(got.save_invstd, want.save_invstd, "save_invstd", 1e-4f);
    expect_close(got.running_mean, want.running_mean, "running_mean", 1e-6f);
    expect_close(got.running_var, want.running_var, "running_var", 1e-4f);
    expect_close(got.dx, want.dx, "dx", rtol);
    expect_close(got.dgamma, want.dgamma, "dgamma", rtol);
    expect_close(got.dbeta, want.dbeta, "dbeta", 1e-4f);
  }
}

TEST_P(BatchNormFixed, SameBitsAtOneToFourThreads) {
  const Case c = GetParam();
  const Inputs in = inputs_for(c);
  const int before = omp_get_max_threads();
  omp_set_num_threads(1);
  const Outputs one = run(c, in, true, false);
  for (int threads = 2; threads <= 4; ++threads) {
    omp_set_num_threads(threads);
    const Outputs many = run(c, in, true, false);
    for (const auto& [a, b, what] :
         {std::tuple{&one.y, &many.y, "y"}, std::tuple{&one.dx, &many.dx, "dx"},
          std::tuple{&one.dgamma, &many.dgamma, "dgamma"},
          std::tuple{&one.running_var, &many.running_var, "running_var"}})
      EXPECT_EQ(std::memcmp(a->data(), b->data(), a->size() * sizeof(float)), 0)
          << what << " at " << threads << " threads";
  }
  omp_set_num_threads(before);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, BatchNormFixed,
    ::testing::Values(Case{3, 5, 37, 0, 0.0f},      // row-major: odd channels, a 16-lane tail
                      Case{5, 3, 1, 0, 0.0f},       // (N, C): one position
                      Case{8, 64, 49, 0, 0.0f},     // a ResNet stage, parallel
                      Case{8, 64, 49, 16, 0.0f},    // the same, 16-blocked
                      Case{3, 48, 30, 8, 0.0f},     // 8-blocked
                      Case{1, 16, 5, 16, 0.0f},     // one block, batch 1
                      Case{4, 32, 300, 16, 0.0f},   // large enough for a parallel region
                      Case{4, 32, 60, 0, 1000.0f},  // far from zero, row-major
                      Case{4, 32, 60, 16, 1000.0f}),
    [](const ::testing::TestParamInfo<Case>& info) {
      std::string s = describe(info.param);
      for (char& ch : s)
        if (ch == ' ' || ch == '.') ch = '_';
      return s;
    });

}  // namespace
}  // namespace epoch
