// Max pooling on channel-blocked activations (see pool_blocked.h).
#include "cpu/pool_blocked.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "cpu/cpu_features.h"
#include "epoch/tensor/error.h"
// Compiled once per instruction-set level (kernels/isa_target.h): include it last.
#include "kernels/isa_target.h"

namespace epoch::cpu::EPOCH_ISA_NS {

using kernels::Pool2dDims;

namespace {

constexpr std::int64_t kSerialWork = 1 << 16;  // below it a parallel region costs more

// One output row of one channel block, B lanes at a time, the first maximum of each window
// winning and a NaN beating any number (as the reference kernel). NaN-aware comparisons do not
// vectorize, so the row runs with plain ones and is redone lane by lane if it held a NaN.
template <int B, bool kNanAware>
int forward_row(const Pool2dDims& d, const float* rows, float* y, std::uint8_t* ws) {
  const std::int64_t row = d.W * B;  // floats from one input row to the next
  const std::int64_t positions = d.KH * d.KW;
  int nan_seen = 0;  // an int, not a bool: GCC vectorizes the OR reduction then
  for (std::int64_t ow = 0; ow < d.OW; ++ow) {
    const float* first = rows + ow * d.KW * B;
    float m[B];
    int at[B];
    for (int c = 0; c < B; ++c) {
      m[c] = first[c];
      at[c] = 0;
      nan_seen |= static_cast<int>(first[c] != first[c]);
    }
    for (std::int64_t pos = 1; pos < positions; ++pos) {
      const float* v = first + (pos / d.KW) * row + (pos % d.KW) * B;
      for (int c = 0; c < B; ++c) {
        const bool win = kNanAware ? v[c] > m[c] || (v[c] != v[c] && m[c] == m[c]) : v[c] > m[c];
        nan_seen |= static_cast<int>(v[c] != v[c]);
        m[c] = win ? v[c] : m[c];
        at[c] = win ? static_cast<int>(pos) : at[c];
      }
    }
    for (int c = 0; c < B; ++c) {
      y[ow * B + c] = m[c];
      ws[ow * B + c] = static_cast<std::uint8_t>(at[c]);
    }
  }
  return nan_seen;
}

// 2x2 windows, the common case, eight lanes per AVX2 vector (compiled for AVX2 whatever the
// build's target, and called only where the CPU has it: cpu_features.h): plain comparisons (a
// NaN after the first position would lose), and a row whose window sums are not finite (a NaN,
// or infinities) is redone by the NaN-aware forward_row.
#pragma GCC push_options
#pragma GCC target("avx2,fma")
template <int B>
int forward_row_2x2(const Pool2dDims& d, const float* rows, float* y, std::uint8_t* ws) {
  const std::int64_t row = d.W * B, OW = d.OW;
  const __m256i one = _mm256_set1_epi32(1), two = _mm256_set1_epi32(2);
  const __m256i three = _mm256_set1_epi32(3);
  int unusual = 0;
  for (std::int64_t ow = 0; ow < OW; ++ow) {
    for (int h = 0; h < B; h += 8) {
      const float* p0 = rows + ow * 2 * B + h;
      const __m256 a = _mm256_loadu_ps(p0), b = _mm256_loadu_ps(p0 + B);
      const __m256 e = _mm256_loadu_ps(p0 + row), f = _mm256_loadu_ps(p0 + row + B);
      __m256 m = a;
      __m256i at = _mm256_setzero_si256();
      const auto take = [&](__m256 v, __m256i pos) {
        const __m256 wins = _mm256_cmp_ps(v, m, _CMP_GT_OQ);
        m = _mm256_blendv_ps(m, v, wins);
        at = _mm256_blendv_epi8(at, pos, _mm256_castps_si256(wins));
      };
      take(b, one);
      take(e, two);
      take(f, three);
      const __m256 sum = _mm256_add_ps(_mm256_add_ps(a, b), _mm256_add_ps(e, f));
      unusual |= _mm256_movemask_ps(_mm256_cmp_ps(sum, sum, _CMP_UNORD_Q));
      _mm256_storeu_ps(y + ow * B + h, m);
      // eight 32-bit positions -> eight bytes
      const __m128i words =
          _mm_packus_epi32(_mm256_castsi256_si128(at), _mm256_extracti128_si256(at, 1));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(ws + ow * B + h), _mm_packus_epi16(words, words));
    }
  }
  return unusual;
}
#pragma GCC pop_options

template <int B>
void forward(const Pool2dDims& d, const float* x, float* y, std::uint8_t* ws) {
  const std::int64_t blocks = d.planes / B;  // N * C/b
  const std::int64_t in_plane = d.H * d.W * B, out_plane = d.OH * d.OW * B;
  const bool two = d.KH == 2 && d.KW == 2 && cpu_has_avx2_fma();
#pragma omp parallel for collapse(2) schedule(static) if (d.planes * d.H * d.W > kSerialWork)
  for (std::int64_t p = 0; p < blocks; ++p)
    for (std::int64_t oh = 0; oh < d.OH; ++oh) {
      const float* rows = x + p * in_plane + oh * d.KH * d.W * B;
      float* yr = y + p * out_plane + oh * d.OW * B;
      std::uint8_t* wr = ws + p * out_plane + oh * d.OW * B;
      const int redo =
          two ? forward_row_2x2<B>(d, rows, yr, wr) : forward_row<B, false>(d, rows, yr, wr);
      if (redo != 0) forward_row<B, true>(d, rows, yr, wr);
    }
}

// Each input position of the tiled region belongs to one window: it gets that window's dy when
// it holds the recorded maximum (and, with a mask, when the window's output is > 0), else 0,
// written once. One output row of one channel block; the portable loop first, then the same in
// AVX2 (GCC leaves the byte comparison scalar).
template <int B>
void backward_row(const Pool2dDims& d, const float* dy, const float* y_mask, const std::uint8_t* ws,
                  float* dx) {
  const std::int64_t row = d.W * B;
  for (std::int64_t ow = 0; ow < d.OW; ++ow)
    for (std::int64_t kh = 0; kh < d.KH; ++kh)
      for (std::int64_t kw = 0; kw < d.KW; ++kw) {
        const auto at = static_cast<std::uint8_t>(kh * d.KW + kw);
        float* out = dx + kh * row + (ow * d.KW + kw) * B;
        for (int c = 0; c < B; ++c) {
          const std::int64_t o = ow * B + c;
          const bool open = y_mask == nullptr || y_mask[o] > 0.0f;
          out[c] = ws[o] == at && open ? dy[o] : 0.0f;
        }
      }
}

#pragma GCC push_options
#pragma GCC target("avx2,fma")
template <int B>
void backward_row_avx2(const Pool2dDims& d, const float* dy, const float* y_mask,
                       const std::uint8_t* ws, float* dx) {
  const std::int64_t row = d.W * B;
  const __m256 zero = _mm256_setzero_ps();
  for (std::int64_t ow = 0; ow < d.OW; ++ow)
    for (int h = 0; h < B; h += 8) {
      const std::int64_t o = ow * B + h;
      __m256 g = _mm256_loadu_ps(dy + o);
      if (y_mask != nullptr)
        g = _mm256_and_ps(g, _mm256_cmp_ps(_mm256_loadu_ps(y_mask + o), zero, _CMP_GT_OQ));
      const __m256i at = _mm256_cvtepu8_epi32(
          _mm_loadl_epi64(reinterpret_cast<const __m128i*>(ws + o)));  // eight bytes -> words
      for (std::int64_t kh = 0; kh < d.KH; ++kh)
        for (std::int64_t kw = 0; kw < d.KW; ++kw) {
          const __m256i here =
              _mm256_cmpeq_epi32(at, _mm256_set1_epi32(static_cast<int>(kh * d.KW + kw)));
          _mm256_storeu_ps(dx + kh * row + (ow * d.KW + kw) * B + h,
                           _mm256_and_ps(g, _mm256_castsi256_ps(here)));
        }
    }
}
#pragma GCC pop_options

// Rows and columns past the last window get 0.
template <int B>
void backward(const Pool2dDims& d, const float* dy, const float* y_mask, const std::uint8_t* ws,
              float* dx) {
  const std::int64_t blocks = d.planes / B;
  const std::int64_t in_plane = d.H * d.W * B, out_plane = d.OH * d.OW * B;
  const std::int64_t tiled_w = d.OW * d.KW;
  const bool avx2 = cpu_has_avx2_fma();
#pragma omp parallel for collapse(2) schedule(static) if (d.planes * d.H * d.W > kSerialWork)
  for (std::int64_t p = 0; p < blocks; ++p)
    for (std::int64_t oh = 0; oh < d.OH; ++oh) {
      const std::int64_t o = p * out_plane + oh * d.OW * B;
      float* rows = dx + p * in_plane + oh * d.KH * d.W * B;
      const float* mask = y_mask != nullptr ? y_mask + o : nullptr;
      if (avx2)
        backward_row_avx2<B>(d, dy + o, mask, ws + o, rows);
      else
        backward_row<B>(d, dy + o, mask, ws + o, rows);
      for (std::int64_t kh = 0; kh < d.KH; ++kh)
        std::fill(rows + (kh * d.W + tiled_w) * B, rows + (kh + 1) * d.W * B, 0.0f);
    }
  for (std::int64_t p = 0; p < blocks; ++p)
    std::fill(dx + p * in_plane + d.OH * d.KH * d.W * B, dx + (p + 1) * in_plane, 0.0f);
}


// ---- any window (overlapping, padded: ResNet's 3x3/2 stem, cifar10-tf's and AlexNet's pools) --

// The real inputs of output (oh, ow)'s window: rows h0 + kh for kh in [kh0, kh1), columns
// w0 + kw for kw in [kw0, kw1); positions outside them are padding, never a maximum.
struct Span {
  std::int64_t h0, w0, kh0, kh1, kw0, kw1;
};
inline Span span_of(const Pool2dDims& d, std::int64_t oh, std::int64_t ow) {
  Span s;
  s.h0 = oh * d.stride_h - d.pad_top;
  s.w0 = ow * d.stride_w - d.pad_left;
  s.kh0 = std::max<std::int64_t>(0, -s.h0);
  s.kh1 = std::min(d.KH, d.H - s.h0);
  s.kw0 = std::max<std::int64_t>(0, -s.w0);
  s.kw1 = std::min(d.KW, d.W - s.w0);
  return s;
}

// One output row of one channel block, lane by lane, exactly as the reference kernel: the best
// starts at -inf with the window's first real position, a greater value or the first NaN wins.
template <int B>
void any_forward_row(const Pool2dDims& d, const float* plane, std::int64_t oh, float* y,
                     std::uint8_t* ws) {
  for (std::int64_t ow = 0; ow < d.OW; ++ow) {
    const Span s = span_of(d, oh, ow);
    float m[B];
    int at[B];
    for (int c = 0; c < B; ++c) {
      m[c] = -std::numeric_limits<float>::infinity();
      at[c] = static_cast<int>(s.kh0 * d.KW + s.kw0);
    }
    for (std::int64_t kh = s.kh0; kh < s.kh1; ++kh)
      for (std::int64_t kw = s.kw0; kw < s.kw1; ++kw) {
        const float* v = plane + ((s.h0 + kh) * d.W + s.w0 + kw) * B;
        const int pos = static_cast<int>(kh * d.KW + kw);
        for (int c = 0; c < B; ++c) {
          const bool win = v[c] > m[c] || (v[c] != v[c] && m[c] == m[c]);
          m[c] = win ? v[c] : m[c];
          at[c] = win ? pos : at[c];
        }
      }
    for (int c = 0; c < B; ++c) {
      y[ow * B + c] = m[c];
      ws[ow * B + c] = static_cast<std::uint8_t>(at[c]);
    }
  }
}

// dx += the window's dy at its recorded maximum (masked by y > 0 with y_mask), lane by lane.
template <int B>
void any_backward_row(const Pool2dDims& d, const float* dy, const float* y_mask,
                      const std::uint8_t* ws, std::int64_t oh, float* dx_plane) {
  for (std::int64_t ow = 0; ow < d.OW; ++ow) {
    const Span s = span_of(d, oh, ow);
    for (int c = 0; c < B; ++c) {
      const std::int64_t o = ow * B + c;
      if (y_mask != nullptr && !(y_mask[o] > 0.0f)) continue;
      const std::int64_t at = ws[o];
      dx_plane[((s.h0 + at / d.KW) * d.W + s.w0 + at % d.KW) * B + c] += dy[o];
    }
  }
}

// The same, eight lanes per AVX2 vector (compiled for AVX2 whatever the build's target, and
// called only where the CPU has it). The comparisons are NaN-aware, so no row is redone; the
// backward adds the masked dy (+0.0 where a lane's maximum is elsewhere, which leaves every sum
// as it was: dx never holds -0.0) to each real position of the window in turn, the reference's
// order for each position.
#pragma GCC push_options
#pragma GCC target("avx2,fma")
template <int B>
void any_forward_row_avx2(const Pool2dDims& d, const float* plane, std::int64_t oh, float* y,
                          std::uint8_t* ws) {
  const __m256 minus_inf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  for (std::int64_t ow = 0; ow < d.OW; ++ow) {
    const Span s = span_of(d, oh, ow);
    for (int h = 0; h < B; h += 8) {
      __m256 m = minus_inf;
      __m256i at = _mm256_set1_epi32(static_cast<int>(s.kh0 * d.KW + s.kw0));
      for (std::int64_t kh = s.kh0; kh < s.kh1; ++kh) {
        const float* row = plane + (s.h0 + kh) * d.W * B + h;
        for (std::int64_t kw = s.kw0; kw < s.kw1; ++kw) {
          const __m256 v = _mm256_loadu_ps(row + (s.w0 + kw) * B);
          const __m256 nan_wins =
              _mm256_and_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q), _mm256_cmp_ps(m, m, _CMP_ORD_Q));
          const __m256 wins = _mm256_or_ps(_mm256_cmp_ps(v, m, _CMP_GT_OQ), nan_wins);
          m = _mm256_blendv_ps(m, v, wins);
          at = _mm256_blendv_epi8(at, _mm256_set1_epi32(static_cast<int>(kh * d.KW + kw)),
                                  _mm256_castps_si256(wins));
        }
      }
      _mm256_storeu_ps(y + ow * B + h, m);
      const __m128i words =
          _mm_packus_epi32(_mm256_castsi256_si128(at), _mm256_extracti128_si256(at, 1));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(ws + ow * B + h), _mm_packus_epi16(words, words));
    }
  }
}

template <int B>
void any_backward_row_avx2(const Pool2dDims& d, const float* dy, const float* y_mask,
                           const std::uint8_t* ws, std::int64_t oh, float* dx_plane) {
  const __m256 zero = _mm256_setzero_ps();
  for (std::int64_t ow = 0; ow < d.OW; ++ow) {
    const Span s = span_of(d, oh, ow);
    for (int h = 0; h < B; h += 8) {
      const std::int64_t o = ow * B + h;
      __m256 g = _mm256_loadu_ps(dy + o);
      if (y_mask != nullptr)
        g = _mm256_and_ps(g, _mm256_cmp_ps(_mm256_loadu_ps(y_mask + o), zero, _CMP_GT_OQ));
      const __m256i at =
          _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(ws + o)));
      for (std::int64_t kh = s.kh0; kh < s.kh1; ++kh) {
        float* row = dx_plane + (s.h0 + kh) * d.W * B + h;
        for (std::int64_t kw = s.kw0; kw < s.kw1; ++kw) {
          const __m256i here =
              _mm256_cmpeq_epi32(at, _mm256_set1_epi32(static_cast<int>(kh * d.KW + kw)));
          float* q = row + (s.w0 + kw) * B;
          _mm256_storeu_ps(q, _mm256_add_ps(_mm256_loadu_ps(q),
                                            _mm256_and_ps(g, _mm256_castsi256_ps(here))));
        }
      }
    }
  }
}
#pragma GCC pop_options

template <int B>
void any_forward(const Pool2dDims& d, const float* x, float* y, std::uint8_t* ws) {
  const std::int64_t blocks = d.planes / B;
  const std::int64_t in_plane = d.H * d.W * B, out_plane = d.OH * d.OW * B;
  const bool avx2 = cpu_has_avx2_fma();
#pragma omp parallel for collapse(2) schedule(static) if (d.planes * d.H * d.W > kSerialWork)
  for (std::int64_t p = 0; p < blocks; ++p)
    for (std::int64_t oh = 0; oh < d.OH; ++oh) {
      const std::int64_t o = p * out_plane + oh * d.OW * B;
      if (avx2)
        any_forward_row_avx2<B>(d, x + p * in_plane, oh, y + o, ws + o);
      else
        any_forward_row<B>(d, x + p * in_plane, oh, y + o, ws + o);
    }
}

// Windows overlap, so each channel block's plane is one thread's: its sums run in output order
// (oh, ow), the reference's, whatever the thread count.
template <int B>
void any_backward(const Pool2dDims& d, const float* dy, const float* y_mask,
                  const std::uint8_t* ws, float* dx) {
  const std::int64_t blocks = d.planes / B;
  const std::int64_t in_plane = d.H * d.W * B, out_plane = d.OH * d.OW * B;
  const bool avx2 = cpu_has_avx2_fma();
#pragma omp parallel for schedule(static) if (d.planes * d.H * d.W > kSerialWork)
  for (std::int64_t p = 0; p < blocks; ++p) {
    float* plane = dx + p * in_plane;
    std::fill(plane, plane + in_plane, 0.0f);
    for (std::int64_t oh = 0; oh < d.OH; ++oh) {
      const std::int64_t o = p * out_plane + oh * d.OW * B;
      const float* mask = y_mask != nullptr ? y_mask + o : nullptr;
      if (avx2)
        any_backward_row_avx2<B>(d, dy + o, mask, ws + o, oh, plane);
      else
        any_backward_row<B>(d, dy + o, mask, ws + o, oh, plane);
    }
  }
}

void check(const Pool2dDims& d, std::int64_t block) {
  EPOCH_CHECK(max_pool2d_blocked_supported(d) && (block == 8 || block == 16) &&
                  d.planes % block == 0,
              "max_pool2d (blocked): windows ", d.KH, "x", d.KW, " stride ", d.stride_h, "x",
              d.stride_w, " or channel block ", block, " not supported");
}

}  // namespace



void max_pool2d_blocked_forward(const Pool2dDims& d, std::int64_t block, const float* x, float* y,
                                std::uint8_t* ws) {
  check(d, block);
  if (!max_pool2d_windows_tile(d))
    block == 8 ? any_forward<8>(d, x, y, ws) : any_forward<16>(d, x, y, ws);
  else if (block == 8)
    forward<8>(d, x, y, ws);
  else
    forward<16>(d, x, y, ws);
}

void max_pool2d_blocked_backward(const Pool2dDims& d, std::int64_t block, const float* dy,
                                 const float* y_mask, const std::uint8_t* ws, float* dx) {
  check(d, block);
  if (!max_pool2d_windows_tile(d))
    block == 8 ? any_backward<8>(d, dy, y_mask, ws, dx) : any_backward<16>(d, dy, y_mask, ws, dx);
  else if (block == 8)
    backward<8>(d, dy, y_mask, ws, dx);
  else
    backward<16>(d, dy, y_mask, ws, dx);
}

}  // namespace epoch::cpu::EPOCH_ISA_NS

#if EPOCH_ISA_LEVEL == 0
namespace epoch::cpu {

using kernels::Pool2dDims;

bool max_pool2d_blocked_supported(const Pool2dDims& d) {
  return d.KH * d.KW <= 256 && d.pad_top < d.KH && d.pad_left < d.KW;
}

bool max_pool2d_windows_tile(const Pool2dDims& d) {
  return d.KH == d.stride_h && d.KW == d.stride_w && d.pad_top == 0 && d.pad_left == 0 &&
         d.KH * d.KW <= 256 && d.OH * d.KH <= d.H && d.OW * d.KW <= d.W;
}

EPOCH_ISA_KERNEL(max_pool2d_blocked_forward);
EPOCH_ISA_KERNEL(max_pool2d_blocked_backward);
}  // namespace epoch::cpu
#endif
