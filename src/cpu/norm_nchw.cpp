// LRN across channels on NCHW, vectorized over H*W (see norm_nchw.h). Work is split into
// (image, block of positions) pairs of a fixed size, each computed wholly by one thread, so the
// results never depend on the thread count. The formulas and their order of summation are the
// reference's (cpu/norm_cpu.cpp); s^-beta is 1 / (sqrt(s) sqrt(sqrt(s))) for beta = 0.75 and a
// vectorized 2^(-beta log2 s) otherwise.
#include "cpu/norm_nchw.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <vector>

#include "cpu/vector_exp.h"
#include "kernels/impl_note.h"
// Compiled once per instruction-set level (kernels/isa_target.h): include it last.
#include "kernels/isa_target.h"

namespace epoch::cpu::nchw::EPOCH_ISA_NS {
namespace {

// Below this many multiply-adds a parallel region costs more than it saves (as the oneDNN
// path's SerialIfSmall).
constexpr std::int64_t kSerialWork = 1 << 16;
// Positions of one block at most: a block of 64 channels then fits in L2 with its scratch.
constexpr std::int64_t kMaxBlock = 256;

// HW split into `count` blocks of `len` positions (a multiple of 8, the last one shorter).
struct Blocks {
  std::int64_t count, len;
};
Blocks blocks_of(std::int64_t HW) {
  const std::int64_t count = (HW + kMaxBlock - 1) / kMaxBlock;
  const std::int64_t len = ((HW + count - 1) / count + 7) / 8 * 8;
  return {(HW + len - 1) / len, len};
}

// s^-beta for a positive normal s by 2^(-beta log2 s): log2 s = e + log2 m with m in
// [sqrt(1/2), sqrt(2)), ln m by the polynomial of Cephes' logf, the product -beta e split
// exactly into hi + lo (fma), then 2^r for |r| <= 1/2 by the polynomial of Cephes' expf, times
// 2^k built in the exponent bits. Relative error about 3e-7. Sets `bad` where s is not normal
// or the result would leave the normal range; the caller redoes those with std::pow.
inline float pow_neg_normal(float s, float beta, int& bad) {
  const std::int32_t bits = std::bit_cast<std::int32_t>(s);
  bad |= static_cast<int>(!(s >= 1.17549435e-38f && s <= 3.40282347e+38f));
  std::int32_t e = (bits >> 23) - 127;
  float m = std::bit_cast<float>((bits & 0x007fffff) | 0x3f800000);  // [1, 2)
  const bool upper = m > 1.41421356f;
  m = upper ? 0.5f * m : m;
  e = upper ? e + 1 : e;
  const float f = m - 1.0f;
  float p = 7.0376836292e-2f;
  p = p * f - 1.1514610310e-1f;
  p = p * f + 1.1676998740e-1f;
  p = p * f - 1.2420140846e-1f;
  p = p * f + 1.4249322787e-1f;
  p = p * f - 1.6668057665e-1f;
  p = p * f + 2.0000714765e-1f;
  p = p * f - 2.4999993993e-1f;
  p = p * f + 3.3333331174e-1f;
  const float f2 = f * f;
  const float log2m = (f + (f2 * f * p - 0.5f * f2)) * 1.44269504088896341f;
  const float ef = static_cast<float>(e);
  const float hi = -beta * ef;
  const float lo = std::fma(-beta, ef, -hi);  // -beta e = hi + lo exactly
  const float u = lo - beta * log2m;
  const float kf = std::floor(hi + u + 0.5f);
  const float z = ((hi - kf) + u) * 0.693147180559945309f;  // r ln 2, |r| <= 1/2
  const std::int32_t ki = static_cast<std::int32_t>(kf);
  bad |= static_cast<int>(ki < -126 || ki > 127);
  return exp_reduced(z) * pow2_int(std::clamp(ki, -126, 127));
}

// p = s^-beta elementwise.
void pow_neg(const float* s,  // (n)
             float* p,        // (n)
             std::int64_t n, float beta) {
  if (beta == 0.75f) {
    // sqrt is correctly rounded, so zeros, infinities and NaN come out as std::pow's.
    for (std::int64_t i = 0; i < n; ++i) {
      const float r = std::sqrt(s[i]);
      p[i] = 1.0f / (r * std::sqrt(r));
    }
    return;
  }
  int bad = 0;  // an int, not a bool: GCC vectorizes the OR reduction then
  for (std::int64_t i = 0; i < n; ++i) p[i] = pow_neg_normal(s[i], beta, bad);
  if (bad != 0)
    for (std::int64_t i = 0; i < n; ++i) p[i] = std::pow(s[i], -beta);
}

// s = k + alpha/size * (sum of x^2 over channel c's window) for n positions of one channel.
void window_scale(const float* xn,  // (C, HW) one image, at the block's first position
                  float* s,         // (n)
                  std::int64_t n, std::int64_t C, std::int64_t HW, std::int64_t c,
                  std::int64_t size, float a, float k) {
  std::fill(s, s + n, 0.0f);
  const std::int64_t c0 = std::max<std::int64_t>(0, c - size / 2);
  const std::int64_t c1 = std::min(C - 1, c + (size - 1) / 2);
  for (std::int64_t cc = c0; cc <= c1; ++cc) {
    const float* xr = xn + cc * HW;
    for (std::int64_t i = 0; i < n; ++i) s[i] += xr[i] * xr[i];
  }
  for (std::int64_t i = 0; i < n; ++i) s[i] = k + a * s[i];
}

}  // namespace

void lrn_forward(const float* x, float* y, std::int64_t N, std::int64_t C, std::int64_t HW,
                 std::int64_t size, float alpha, float beta, float k) {
  kernels::note_impl("epoch:lrn_nchw");
  if (N * C * HW == 0) return;
  const float a = alpha / static_cast<float>(size);
  const Blocks b = blocks_of(HW);
#pragma omp parallel for collapse(2) schedule(static) if (N * C * HW * size > kSerialWork)
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t blk = 0; blk < b.count; ++blk) {
      const std::int64_t i0 = blk * b.len, len = std::min(b.len, HW - i0);
      const float* xn = x + n * C * HW + i0;  // (C, HW) from position i0
      float* yn = y + n * C * HW + i0;
      float s[kMaxBlock], p[kMaxBlock];
      for (std::int64_t c = 0; c < C; ++c) {
        window_scale(xn, s, len, C, HW, c, size, a, k);
        pow_neg(s, p, len, beta);
        const float* xr = xn + c * HW;
        float* yr = yn + c * HW;
        for (std::int64_t i = 0; i < len; ++i) yr[i] = xr[i] * p[i];
      }
    }
}

void lrn_backward(const float* dy, const float* x, const float* y, float* dx, std::int64_t N,
                  std::int64_t C, std::int64_t HW, std::int64_t size, float alpha, float beta,
                  float k) {
  // The reference's formula (cpu/norm_cpu.cpp): with t_c = dy_c y_c / s_c,
  // dx_j = dy_j s_j^-beta - (2 alpha beta / size) x_j sum_{c in [j - (size-1)/2, j + size/2]} t_c.
  kernels::note_impl("epoch:lrn_nchw");
  if (N * C * HW == 0) return;
  const float a = alpha / static_cast<float>(size);
  const float coef = 2.0f * alpha * beta / static_cast<float>(size);
  const Blocks b = blocks_of(HW);
#pragma omp parallel if (N * C * HW * size > kSerialWork)
  {
    // One image's s and t for one block of positions: (C, len) each.
    std::vector<float> s(static_cast<std::size_t>(C * b.len)), t(s.size());
#pragma omp for collapse(2) schedule(static)
    for (std::int64_t n = 0; n < N; ++n)
      for (std::int64_t blk = 0; blk < b.count; ++blk) {
        const std::int64_t i0 = blk * b.len, len = std::min(b.len, HW - i0);
        const std::int64_t off = n * C * HW + i0;  // (C, HW) of image n from position i0
        for (std::int64_t c = 0; c < C; ++c) {
          float* sr = s.data() + c * b.len;
          float* tr = t.data() + c * b.len;
          window_scale(x + off, sr, len, C, HW, c, size, a, k);
          const float* dyr = dy + off + c * HW;
          const float* yr = y + off + c * HW;
          for (std::int64_t i = 0; i < len; ++i) tr[i] = dyr[i] * yr[i] / sr[i];
        }
        float acc[kMaxBlock], p[kMaxBlock];
        for (std::int64_t c = 0; c < C; ++c) {
          std::fill(acc, acc + len, 0.0f);
          const std::int64_t c0 = std::max<std::int64_t>(0, c - (size - 1) / 2);
          const std::int64_t c1 = std::min(C - 1, c + size / 2);
          for (std::int64_t cc = c0; cc <= c1; ++cc) {
            const float* tr = t.data() + cc * b.len;
            for (std::int64_t i = 0; i < len; ++i) acc[i] += tr[i];
          }
          pow_neg(s.data() + c * b.len, p, len, beta);
          const float* dyr = dy + off + c * HW;
          const float* xr = x + off + c * HW;
          float* dxr = dx + off + c * HW;
          for (std::int64_t i = 0; i < len; ++i) dxr[i] = dyr[i] * p[i] - coef * xr[i] * acc[i];
        }
      }
  }
}

}  // namespace epoch::cpu::nchw::EPOCH_ISA_NS

#if EPOCH_ISA_LEVEL == 0
namespace epoch::cpu::nchw {
EPOCH_ISA_KERNEL(lrn_forward);
EPOCH_ISA_KERNEL(lrn_backward);
}  // namespace epoch::cpu::nchw
#endif
