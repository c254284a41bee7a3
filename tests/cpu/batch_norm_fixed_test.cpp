// The fixed-order batch norm of strict (cpu/batch_norm_fixed.h) called directly, row-major and
// channel-blocked (8 and 16): forward (y, batch and running statistics) and backward (dx, dgamma,
// dbeta), training and eval, on awkward shapes and on values far from zero (the shifted
// statistics), against the reference kernels near zero and against the same formulas evaluated
// in double everywhere; and the same bits at 1 to 4 threads.
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
                            o.save_invstd.data(), c.N, c.C, c.HW, training, kMomentum, kEps, true);
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
                                       training, kMomentum, kEps, true, c.block);
  cpu::fixed_order::batch_norm_backward(dy.data(), x.data(), in.gamma.data(), o.save_mean.data(),
                                        o.save_invstd.data(), dx.data(), o.dgamma.data(),
                                        o.dbeta.data(), c.N, c.C, c.HW, training, c.block);
  o.y = relayout(y, c, false);
  o.dx = relayout(dx, c, false);
  return o;
}

// The batch norm formulas in double from the float inputs, row-major, one channel at a time:
// the accuracy the float kernels are measured against. Far from zero the reference kernel's
// y = x * scale + shift cancels two values near 1e5 in float (its error is then a step of
// 1/128, more than the fixed-order kernel's), so it is not the yardstick there.
Outputs exact(const Case& c, const Inputs& in, bool training) {
  const auto n = static_cast<std::size_t>(c.N * c.C * c.HW), C = static_cast<std::size_t>(c.C);
  Outputs o{Floats(n),      Floats(C), Floats(C), in.running_mean,
            in.running_var, Floats(n), Floats(C), Floats(C)};
  constexpr double kMomentum = 0.1, kEps = 1e-5;
  const double M = static_cast<double>(c.N * c.HW);
  for (std::int64_t ch = 0; ch < c.C; ++ch) {
    auto at = [&](std::int64_t s, std::int64_t i) { return (s * c.C + ch) * c.HW + i; };
    double mean = in.running_mean[ch], var = in.running_var[ch];
    if (training) {
      mean = 0.0;
      for (std::int64_t s = 0; s < c.N; ++s)
        for (std::int64_t i = 0; i < c.HW; ++i) mean += in.x[at(s, i)];
      mean /= M;
      var = 0.0;
      for (std::int64_t s = 0; s < c.N; ++s)
        for (std::int64_t i = 0; i < c.HW; ++i) {
          const double d = in.x[at(s, i)] - mean;
          var += d * d;
        }
      var /= M;
      o.running_mean[ch] =
          static_cast<float>((1.0 - kMomentum) * in.running_mean[ch] + kMomentum * mean);
      o.running_var[ch] = static_cast<float>((1.0 - kMomentum) * in.running_var[ch] +
                                             kMomentum * var * M / (M - 1.0));
    }
    const double invstd = 1.0 / std::sqrt(var + kEps), gamma = in.gamma[ch];
    o.save_mean[ch] = static_cast<float>(mean);
    o.save_invstd[ch] = static_cast<float>(invstd);
    for (std::int64_t s = 0; s < c.N; ++s)
      for (std::int64_t i = 0; i < c.HW; ++i)
        o.y[at(s, i)] = static_cast<float>((in.x[at(s, i)] - mean) * invstd * gamma + in.beta[ch]);
    // the backward takes the saved statistics as they were stored, in float
    const double saved_mean = o.save_mean[ch], saved_invstd = o.save_invstd[ch];
    double sum_dy = 0.0, sum_dy_xhat = 0.0;
    for (std::int64_t s = 0; s < c.N; ++s)
      for (std::int64_t i = 0; i < c.HW; ++i) {
        const double xhat = (in.x[at(s, i)] - saved_mean) * saved_invstd, dy = in.dy[at(s, i)];
        sum_dy += dy;
        sum_dy_xhat += dy * xhat;
      }
    o.dbeta[ch] = static_cast<float>(sum_dy);
    o.dgamma[ch] = static_cast<float>(sum_dy_xhat);
    for (std::int64_t s = 0; s < c.N; ++s)
      for (std::int64_t i = 0; i < c.HW; ++i) {
        const double xhat = (in.x[at(s, i)] - saved_mean) * saved_invstd, dy = in.dy[at(s, i)];
        o.dx[at(s, i)] = static_cast<float>(
            gamma * saved_invstd * (training ? dy - sum_dy / M - xhat * sum_dy_xhat / M : dy));
      }
  }
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

void expect_all_close(const Outputs& got, const Outputs& want, float rtol) {
  expect_close(got.y, want.y, "y", rtol);
  expect_close(got.save_mean, want.save_mean, "save_mean", 1e-6f);
  expect_close(got.save_invstd, want.save_invstd, "save_invstd", 1e-4f);
  expect_close(got.running_mean, want.running_mean, "running_mean", 1e-6f);
  expect_close(got.running_var, want.running_var, "running_var", 1e-4f);
  expect_close(got.dx, want.dx, "dx", rtol);
  expect_close(got.dgamma, want.dgamma, "dgamma", rtol);
  expect_close(got.dbeta, want.dbeta, "dbeta", 1e-4f);
}

TEST_P(BatchNormFixed, MatchesTheReference) {
  const Case c = GetParam();
  if (c.offset != 0.0f) GTEST_SKIP() << "far from zero the double formulas are the yardstick";
  const Inputs in = inputs_for(c);
  for (bool training : {true, false}) {
    SCOPED_TRACE(training ? "training" : "eval");
    expect_all_close(run(c, in, training, false), run(c, in, training, true), 1e-4f);
  }
}

TEST_P(BatchNormFixed, MatchesTheFormulasInDouble) {
  const Case c = GetParam();
  const Inputs in = inputs_for(c);
  for (bool training : {true, false}) {
    SCOPED_TRACE(training ? "training" : "eval");
    // far from zero, x - mean keeps only the float rounding of values near 1000 (6e-5 against
    // a spread of 0.01), so y, dx and dgamma carry that relative error
    expect_all_close(run(c, in, training, false), exact(c, in, training),
                     c.offset != 0.0f ? 2e-3f : 1e-4f);
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
