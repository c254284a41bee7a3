// Reference normalization kernels (see norm_cpu.h). Batch norm: OpenMP over channels, each
// channel's sums in double in a fixed order. LRN: OpenMP over (n, c) planes.
#include "cpu/norm_cpu.h"

#include <algorithm>
#include <cmath>
#include <vector>
// Compiled once per instruction-set level (kernels/isa_target.h): include it last.
#include "kernels/isa_target.h"

namespace epoch::cpu::EPOCH_ISA_NS {

void batch_norm_forward(const float* x, const float* gamma, const float* beta,
                        float* running_mean, float* running_var, float* y, float* save_mean,
                        float* save_invstd, std::int64_t N, std::int64_t C, std::int64_t HW,
                        bool training, float momentum, float eps, bool unbiased_running_var) {
  const std::int64_t M = N * HW;  // values per channel
#pragma omp parallel for schedule(static) if (N * C * HW > 32768)
  for (std::int64_t c = 0; c < C; ++c) {
    double mean = 0.0, var = 0.0;
    if (training) {
      for (std::int64_t n = 0; n < N; ++n)
        for (std::int64_t i = 0; i < HW; ++i) mean += x[(n * C + c) * HW + i];
      mean /= static_cast<double>(M);
      for (std::int64_t n = 0; n < N; ++n)
        for (std::int64_t i = 0; i < HW; ++i) {
          const double d = x[(n * C + c) * HW + i] - mean;
          var += d * d;
        }
      var /= static_cast<double>(M);  // biased: used to normalize
      const double stored =
          unbiased_running_var ? var * static_cast<double>(M) / static_cast<double>(M - 1) : var;
      running_mean[c] = static_cast<float>((1.0 - momentum) * running_mean[c] + momentum * mean);
      running_var[c] = static_cast<float>((1.0 - momentum) * running_var[c] + momentum * stored);
    } else {
      mean = running_mean[c];
      var = running_var[c];
    }
    const double invstd = 1.0 / std::sqrt(var + static_cast<double>(eps));
    save_mean[c] = static_cast<float>(mean);
    save_invstd[c] = static_cast<float>(invstd);
    // y = (x - mean) * invstd * gamma + beta = x * scale + shift.
    const float scale = static_cast<float>(invstd * gamma[c]);
    const float shift = static_cast<float>(beta[c] - mean * invstd * gamma[c]);
    for (std::int64_t n = 0; n < N; ++n) {
      const float* xp = x + (n * C + c) * HW;
      float* yp = y + (n * C + c) * HW;
      for (std::int64_t i = 0; i < HW; ++i) yp[i] = xp[i] * scale + shift;
    }
  }
}

void batch_norm_backward(const float* dy, const float* x, const float* gamma,
                         const float* save_mean, const float* save_invstd, float* dx,
                         float* dgamma, float* dbeta, std::int64_t N, std::int64_t C,
                         std::int64_t HW, bool training) {
  const double M = static_cast<double>(N * HW);
#pragma omp parallel for schedule(static) if (N * C * HW > 32768)
  for (std::int64_t c = 0; c < C; ++c) {
    const double mean = save_mean[c], invstd = save_invstd[c];
    // dbeta = sum dy; dgamma = sum dy * xhat, xhat = (x - mean) * invstd.
    double sum_dy = 0.0, sum_dy_xhat = 0.0;
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t i = 0; i < HW; ++i) {
        const std::int64_t j = (n * C + c) * HW + i;
        sum_dy += dy[j];
        sum_dy_xhat += dy[j] * (x[j] - mean) * invstd;
      }
    dbeta[c] = static_cast<float>(sum_dy);
    dgamma[c] = static_cast<float>(sum_dy_xhat);
    const double g = gamma[c] * invstd;
    // Training: dx = gamma * invstd * (dy - mean(dy) - xhat * mean(dy * xhat)).
    // Eval: the statistics are constants, dx = gamma * invstd * dy.
    const double mean_dy = training ? sum_dy / M : 0.0;
    const double mean_dy_xhat = training ? sum_dy_xhat / M : 0.0;
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t i = 0; i < HW; ++i) {
        const std::int64_t j = (n * C + c) * HW + i;
        const double xhat = (x[j] - mean) * invstd;
        dx[j] = static_cast<float>(g * (dy[j] - mean_dy - xhat * mean_dy_xhat));
      }
  }
}

namespace {

// s = k + alpha/size * (window sum of x^2) for every channel of every sample.
void lrn_scale(const float* x,  // (N, C, HW)
               float* s,        // (N, C, HW)
               std::int64_t N, std::int64_t C, std::int64_t HW, std::int64_t size, float alpha,
               float k) {
  const float a = alpha / static_cast<float>(size);
#pragma omp parallel for collapse(2) schedule(static) if (N * C * HW * size > 32768)
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t c = 0; c < C; ++c) {
      float* sp = s + (n * C + c) * HW;
      std::fill(sp, sp + HW, 0.0f);
      const std::int64_t c0 = std::max<std::int64_t>(0, c - size / 2);
      const std::int64_t c1 = std::min(C - 1, c + (size - 1) / 2);
      for (std::int64_t cc = c0; cc <= c1; ++cc) {
        const float* xp = x + (n * C + cc) * HW;
        for (std::int64_t i = 0; i < HW; ++i) sp[i] += xp[i] * xp[i];
      }
      for (std::int64_t i = 0; i < HW; ++i) sp[i] = k + a * sp[i];
    }
}

}  // namespace

void lrn_forward(const float* x, float* y, std::int64_t N, std::int64_t C, std::int64_t HW,
                 std::int64_t size, float alpha, float beta, float k) {
  lrn_scale(x, y, N, C, HW, size, alpha, k);
#pragma omp parallel for schedule(static) if (N * C * HW > 32768)
  for (std::int64_t j = 0; j < N * C * HW; ++j) y[j] = x[j] * std::pow(y[j], -beta);
}

void lrn_backward(const float* dy, const float* x, const float* y, float* dx, std::int64_t N,
                  std::int64_t C, std::int64_t HW, std::int64_t size, float alpha, float beta,
                  float k) {
  // With s_c = k + alpha/size * sum_{c' in W(c)} x_{c'}^2 and y_c = x_c s_c^-beta:
  // dx_j = dy_j s_j^-beta - (2 alpha beta / size) x_j sum_{c : j in W(c)} dy_c y_c / s_c,
  // where j in W(c) exactly when c in [j - (size-1)/2, j + size/2].
  const std::int64_t total = N * C * HW;
  std::vector<float> s(static_cast<std::size_t>(total)), t(static_cast<std::size_t>(total));
  lrn_scale(x, s.data(), N, C, HW, size, alpha, k);
#pragma omp parallel for schedule(static) if (total > 32768)
  for (std::int64_t j = 0; j < total; ++j) t[j] = dy[j] * y[j] / s[j];
  const float coef = 2.0f * alpha * beta / static_cast<float>(size);
#pragma omp parallel for collapse(2) schedule(static) if (total * size > 32768)
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t c = 0; c < C; ++c) {
      const std::int64_t c0 = std::max<std::int64_t>(0, c - (size - 1) / 2);
      const std::int64_t c1 = std::min(C - 1, c + size / 2);
      const std::int64_t off = (n * C + c) * HW;
      for (std::int64_t i = 0; i < HW; ++i) {
        float acc = 0.0f;
        for (std::int64_t cc = c0; cc <= c1; ++cc) acc += t[(n * C + cc) * HW + i];
        dx[off + i] = dy[off + i] * std::pow(s[off + i], -beta) - coef * x[off + i] * acc;
      }
    }
}

}  // namespace epoch::cpu::EPOCH_ISA_NS

#if EPOCH_ISA_LEVEL == 0
namespace epoch::cpu {
EPOCH_ISA_KERNEL(batch_norm_forward);
EPOCH_ISA_KERNEL(batch_norm_backward);
EPOCH_ISA_KERNEL(lrn_forward);
EPOCH_ISA_KERNEL(lrn_backward);
}  // namespace epoch::cpu
#endif
