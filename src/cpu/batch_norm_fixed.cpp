// Fixed-order batch norm (see batch_norm_fixed.h). The work is cut into units: a channel
// (row-major) or a block of channels (blocked). A unit's values for sample n are one
// contiguous run of HW * (channels per unit) floats; value i of a run is added into lane i % L
// of the unit's accumulators, the runs in sample order. Blocked, a lane is a channel (L is the
// block); row-major, a lane is every 16th position of the one channel, and the 16 lanes are
// added in lane order at the end. Nothing in that order depends on the thread count, which
// only decides which thread takes which unit. Statistics are shifted by the channel's first
// value (sum and sum of squares in double, one pass over x).
#include "cpu/batch_norm_fixed.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "kernels/impl_note.h"
// Compiled once per instruction-set level (kernels/isa_target.h): include it last.
#include "kernels/isa_target.h"

namespace epoch::cpu::fixed_order::EPOCH_ISA_NS {
namespace {

constexpr const char* kImpl = "epoch:batch_norm_fixed";

// Below this many values a parallel region costs more than it saves (as the reference's).
constexpr std::int64_t kSerialWork = 32768;

template <int L>
using Lanes = std::array<double, L>;

template <int L>
using FloatLanes = std::array<float, L>;

// The unit layout: `units` units, each a run of `run` floats per sample, sample n's run of unit u
// at n * sample + u * run.
struct Units {
  std::int64_t units, run, sample;
};

Units units_of(std::int64_t C, std::int64_t HW, std::int64_t block) {
  const std::int64_t per_unit = block == 0 ? 1 : block;
  return {C / per_unit, HW * per_unit, C * HW};
}

// s1[i % L] += p[i] - shift[i % L], s2[i % L] += (p[i] - shift[i % L])^2 over a run of n floats.
template <int L>
void add_shifted(const float* p, std::int64_t n, const Lanes<L>& shift, Lanes<L>& s1,
                 Lanes<L>& s2) {
  std::int64_t i = 0;
  for (; i + L <= n; i += L)
    for (int j = 0; j < L; ++j) {
      const double v = static_cast<double>(p[i + j]) - shift[j];
      s1[j] += v;
      s2[j] += v * v;
    }
  for (int j = 0; i + j < n; ++j) {
    const double v = static_cast<double>(p[i + j]) - shift[j];
    s1[j] += v;
    s2[j] += v * v;
  }
}

// s1[i % L] += dy[i], s2[i % L] += dy[i] (x[i] - mean[i % L]) over a run of n floats.
template <int L>
void add_gradient(const float* dy, const float* x, std::int64_t n, const Lanes<L>& mean,
                  Lanes<L>& s1, Lanes<L>& s2) {
  std::int64_t i = 0;
  for (; i + L <= n; i += L)
    for (int j = 0; j < L; ++j) {
      const double g = dy[i + j];
      s1[j] += g;
      s2[j] += g * (static_cast<double>(x[i + j]) - mean[j]);
    }
  for (int j = 0; i + j < n; ++j) {
    const double g = dy[i + j];
    s1[j] += g;
    s2[j] += g * (static_cast<double>(x[i + j]) - mean[j]);
  }
}

// out[i] = (x[i] - m[i % L]) * a[i % L] + c[i % L], and with dy: + dy[i] * b[i % L].
template <int L>
void apply(const float* x, const float* dy, float* out, std::int64_t n, const FloatLanes<L>& m,
           const FloatLanes<L>& a, const FloatLanes<L>& b, const FloatLanes<L>& c) {
  std::int64_t i = 0;
  if (dy == nullptr) {
    for (; i + L <= n; i += L)
      for (int j = 0; j < L; ++j) out[i + j] = (x[i + j] - m[j]) * a[j] + c[j];
    for (int j = 0; i + j < n; ++j) out[i + j] = (x[i + j] - m[j]) * a[j] + c[j];
    return;
  }
  for (; i + L <= n; i += L)
    for (int j = 0; j < L; ++j) out[i + j] = dy[i + j] * b[j] + (x[i + j] - m[j]) * a[j] + c[j];
  for (int j = 0; i + j < n; ++j) out[i + j] = dy[i + j] * b[j] + (x[i + j] - m[j]) * a[j] + c[j];
}

// A unit's lanes as per-channel figures: blocked, lane j is channel first + j; row-major, the
// lanes of the one channel `first` add up (in lane order) to its figure.
template <int L, bool Blocked>
constexpr int kChannels = Blocked ? L : 1;

template <int L, bool Blocked>
std::array<double, kChannels<L, Blocked>> per_channel(const Lanes<L>& s) {
  std::array<double, kChannels<L, Blocked>> out{};
  if constexpr (Blocked) {
    for (int j = 0; j < L; ++j) out[j] = s[j];
  } else {
    for (int j = 0; j < L; ++j) out[0] += s[j];
  }
  return out;
}

// Lane j's channel within the unit (0 row-major).
template <int L, bool Blocked>
constexpr int lane_channel(int j) {
  return Blocked ? j : 0;
}

template <int L, bool Blocked>
void forward(const float* x, const float* gamma, const float* beta, float* running_mean,
             float* running_var, float* y, float* save_mean, float* save_invstd, std::int64_t N,
             std::int64_t C, std::int64_t HW, bool training, float momentum, float eps,
             bool unbiased_running_var, std::int64_t block) {
  const Units u = units_of(C, HW, block);
  const double M = static_cast<double>(N * HW);
  constexpr int K = kChannels<L, Blocked>;
#pragma omp parallel for schedule(static) if (N * C * HW > kSerialWork)
  for (std::int64_t unit = 0; unit < u.units; ++unit) {
    const std::int64_t c0 = unit * K;
    const float* xu = x + unit * u.run;
    std::array<double, K> mean{}, var{};
    if (training) {
      Lanes<L> shift{}, s1{}, s2{};
      for (int j = 0; j < L; ++j) shift[j] = xu[lane_channel<L, Blocked>(j)];
      for (std::int64_t n = 0; n < N; ++n) add_shifted<L>(xu + n * u.sample, u.run, shift, s1, s2);
      const auto t1 = per_channel<L, Blocked>(s1), t2 = per_channel<L, Blocked>(s2);
      for (int k = 0; k < K; ++k) {
        const double d = t1[k] / M;
        mean[k] = shift[k] + d;  // row-major: every lane's shift is the one channel's
        var[k] = std::max(0.0, t2[k] / M - d * d);
        const double stored = unbiased_running_var ? var[k] * M / (M - 1.0) : var[k];
        const std::int64_t c = c0 + k;
        running_mean[c] =
            static_cast<float>((1.0 - momentum) * running_mean[c] + momentum * mean[k]);
        running_var[c] =
            static_cast<float>((1.0 - momentum) * running_var[c] + momentum * stored);
      }
    } else {
      for (int k = 0; k < K; ++k) {
        mean[k] = running_mean[c0 + k];
        var[k] = running_var[c0 + k];
      }
    }
    // y = (x - mean) * invstd * gamma + beta
    FloatLanes<L> m{}, a{}, b{}, c{};
    for (int k = 0; k < K; ++k) {
      const double invstd = 1.0 / std::sqrt(var[k] + static_cast<double>(eps));
      save_mean[c0 + k] = static_cast<float>(mean[k]);
      save_invstd[c0 + k] = static_cast<float>(invstd);
    }
    for (int j = 0; j < L; ++j) {
      const int k = lane_channel<L, Blocked>(j);
      m[j] = save_mean[c0 + k];
      a[j] = static_cast<float>(static_cast<double>(save_invstd[c0 + k]) * gamma[c0 + k]);
      c[j] = beta[c0 + k];
    }
    for (std::int64_t n = 0; n < N; ++n)
      apply<L>(xu + n * u.sample, nullptr, y + unit * u.run + n * u.sample, u.run, m, a, b, c);
  }
}

template <int L, bool Blocked>
void backward(const float* dy, const float* x, const float* gamma, const float* save_mean,
              const float* save_invstd, float* dx, float* dgamma, float* dbeta, std::int64_t N,
              std::int64_t C, std::int64_t HW, bool training, std::int64_t block) {
  const Units u = units_of(C, HW, block);
  const double M = static_cast<double>(N * HW);
  constexpr int K = kChannels<L, Blocked>;
#pragma omp parallel for schedule(static) if (N * C * HW > kSerialWork)
  for (std::int64_t unit = 0; unit < u.units; ++unit) {
    const std::int64_t c0 = unit * K;
    const std::int64_t offset = unit * u.run;
    Lanes<L> mean{}, s1{}, s2{};
    for (int j = 0; j < L; ++j) mean[j] = save_mean[c0 + lane_channel<L, Blocked>(j)];
    for (std::int64_t n = 0; n < N; ++n)
      add_gradient<L>(dy + offset + n * u.sample, x + offset + n * u.sample, u.run, mean, s1, s2);
    const auto sum_dy = per_channel<L, Blocked>(s1), sum_dy_xm = per_channel<L, Blocked>(s2);
    // dbeta = sum dy; dgamma = sum dy * xhat, xhat = (x - mean) * invstd. Training:
    // dx = gamma invstd (dy - mean(dy) - xhat mean(dy xhat)) = b dy + a (x - mean) + c.
    std::array<double, K> a{}, b{}, c{};
    for (int k = 0; k < K; ++k) {
      const double invstd = save_invstd[c0 + k];
      const double dg = sum_dy_xm[k] * invstd;
      dbeta[c0 + k] = static_cast<float>(sum_dy[k]);
      dgamma[c0 + k] = static_cast<float>(dg);
      const double g = gamma[c0 + k] * invstd;
      const double mean_dy = training ? sum_dy[k] / M : 0.0;
      const double mean_dy_xhat = training ? dg / M : 0.0;
      b[k] = g;
      a[k] = -g * invstd * mean_dy_xhat;
      c[k] = -g * mean_dy;
    }
    FloatLanes<L> mf{}, af{}, bf{}, cf{};
    for (int j = 0; j < L; ++j) {
      const int k = lane_channel<L, Blocked>(j);
      mf[j] = static_cast<float>(mean[j]);
      af[j] = static_cast<float>(a[k]);
      bf[j] = static_cast<float>(b[k]);
      cf[j] = static_cast<float>(c[k]);
    }
    for (std::int64_t n = 0; n < N; ++n) {
      const std::int64_t at = offset + n * u.sample;
      apply<L>(x + at, dy + at, dx + at, u.run, mf, af, bf, cf);
    }
  }
}

}  // namespace

void batch_norm_forward(const float* x, const float* gamma, const float* beta, float* running_mean,
                        float* running_var, float* y, float* save_mean, float* save_invstd,
                        std::int64_t N, std::int64_t C, std::int64_t HW, bool training,
                        float momentum, float eps, bool unbiased_running_var,
                        std::int64_t block) {
  kernels::note_impl(kImpl);
  if (block == 16)
    return forward<16, true>(x, gamma, beta, running_mean, running_var, y, save_mean, save_invstd,
                             N, C, HW, training, momentum, eps, unbiased_running_var, block);
  if (block == 8)
    return forward<8, true>(x, gamma, beta, running_mean, running_var, y, save_mean, save_invstd, N,
                            C, HW, training, momentum, eps, unbiased_running_var, block);
  forward<16, false>(x, gamma, beta, running_mean, running_var, y, save_mean, save_invstd, N, C, HW,
                     training, momentum, eps, unbiased_running_var, 0);
}

void batch_norm_backward(const float* dy, const float* x, const float* gamma,
                         const float* save_mean, const float* save_invstd, float* dx, float* dgamma,
                         float* dbeta, std::int64_t N, std::int64_t C, std::int64_t HW,
                         bool training, std::int64_t block) {
  kernels::note_impl(kImpl);
  if (block == 16)
    return backward<16, true>(dy, x, gamma, save_mean, save_invstd, dx, dgamma, dbeta, N, C, HW,
                              training, block);
  if (block == 8)
    return backward<8, true>(dy, x, gamma, save_mean, save_invstd, dx, dgamma, dbeta, N, C, HW,
                             training, block);
  backward<16, false>(dy, x, gamma, save_mean, save_invstd, dx, dgamma, dbeta, N, C, HW, training,
                      0);
}

}  // namespace epoch::cpu::fixed_order::EPOCH_ISA_NS

#if EPOCH_ISA_LEVEL == 0
namespace epoch::cpu::fixed_order {
EPOCH_ISA_KERNEL(batch_norm_forward);
EPOCH_ISA_KERNEL(batch_norm_backward);
}  // namespace epoch::cpu::fixed_order
#endif
