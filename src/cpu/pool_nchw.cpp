// Max pooling on NCHW (see pool_nchw.h). OpenMP over (n, c) planes, each wholly one thread's,
// so results never depend on the thread count.
//
// Windows that tile the input (kernel == stride, no padding: every 2x2/2 layer) take a direct
// kernel; oneDNN 2.6 transposes NCHW to blocks and back inside its pooling, which made it 4x
// slower than this on fmnist-cnn's pools (measured).
//
// Any other window: first the maximum of each row segment of a window, then of those over the
// window's rows, in row order, so the first maximum in row-major order wins as in the reference.
// Both passes run over one long array each, for a group of planes at a time: each input row
// is copied once, padded with -inf (never a winner) to stride_w * Lq columns (Lq = OW +
// (KW - 1) / stride_w), so that segment j = row * Lq + ow starts at element stride_w * j; the
// rows are stored by row phase (of each plane, row oh * stride_h + kh in slot
// (kh % stride_h, oh + kh / stride_h)), so that the segments of a window's row kh for all
// outputs j = (plane, oh, ow) sit at j plus a constant. A few segments per row and a few
// output rows per plane are computed and thrown away.
#include "cpu/pool_nchw.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/impl_note.h"
// Compiled once per instruction-set level (kernels/isa_target.h): include it last.
#include "kernels/isa_target.h"

namespace epoch::cpu::nchw::EPOCH_ISA_NS {

using kernels::Pool2dDims;

namespace {

// Below this many element visits a parallel region costs more than it saves (as the oneDNN
// path's SerialIfSmall).
constexpr std::int64_t kSerialWork = 1 << 16;

// ---- windows that tile the input ------------------------------------------------------------

inline bool wins(float v, float best) { return v > best || (std::isnan(v) && !std::isnan(best)); }

// Any tile, in the reference's order: the first maximum wins, and so does the first NaN.
void tiled_max_row(const Pool2dDims& d,
                   const float* rows,   // (KH, W): input rows oh * KH ... oh * KH + KH - 1
                   float* y,            // (OW)
                   std::uint8_t* ws) {  // (OW)
  for (std::int64_t ow = 0; ow < d.OW; ++ow) {
    float m = rows[ow * d.KW];
    std::int64_t at = 0;
    for (std::int64_t kh = 0; kh < d.KH; ++kh)
      for (std::int64_t kw = 0; kw < d.KW; ++kw) {
        const float v = rows[kh * d.W + ow * d.KW + kw];
        if (wins(v, m)) m = v, at = kh * d.KW + kw;
      }
    y[ow] = m;
    ws[ow] = static_cast<std::uint8_t>(at);
  }
}

// 2x2 tiles, vectorized: plain comparisons (a NaN after the first position would lose), and a
// row whose sums are not finite (a NaN, or infinities) is redone by tiled_max_row.
void tiled_max_row_2x2(const Pool2dDims& d,
                       const float* rows,   // (2, W)
                       float* y,            // (OW)
                       std::uint8_t* ws) {  // (OW)
  const float* r0 = rows;
  const float* r1 = rows + d.W;
  const std::int64_t OW = d.OW;  // a local: the byte stores below could alias d
  int unusual = 0;               // an int, not a bool: GCC vectorizes the OR reduction then
  for (std::int64_t ow = 0; ow < OW; ++ow) {
    const float a = r0[2 * ow], b = r0[2 * ow + 1], c = r1[2 * ow], e = r1[2 * ow + 1];
    float m = a;
    int at = 0;
    if (b > m) m = b, at = 1;
    if (c > m) m = c, at = 2;
    if (e > m) m = e, at = 3;
    const float s = (a + b) + (c + e);
    unusual |= static_cast<int>(s != s);
    y[ow] = m;
    ws[ow] = static_cast<std::uint8_t>(at);
  }
  if (unusual) tiled_max_row(d, rows, y, ws);
}

void tiled_max_forward(const Pool2dDims& d, const float* x, float* y, std::uint8_t* ws) {
  const std::int64_t in_plane = d.H * d.W, out_plane = d.OH * d.OW;
  const bool two = d.KH == 2 && d.KW == 2;
#pragma omp parallel for schedule(static) if (d.planes * in_plane > kSerialWork)
  for (std::int64_t p = 0; p < d.planes; ++p)
    for (std::int64_t oh = 0; oh < d.OH; ++oh) {
      const float* rows = x + p * in_plane + oh * d.KH * d.W;  // (KH, W)
      float* yr = y + p * out_plane + oh * d.OW;               // (OW)
      std::uint8_t* wr = ws + p * out_plane + oh * d.OW;       // (OW)
      if (two)
        tiled_max_row_2x2(d, rows, yr, wr);
      else
        tiled_max_row(d, rows, yr, wr);
    }
}

// dx is zero but for each window's recorded maximum, which receives its dy.
void tiled_max_backward(const Pool2dDims& d, const float* dy, const std::uint8_t* ws, float* dx) {
  const std::int64_t in_plane = d.H * d.W, out_plane = d.OH * d.OW;
  std::int64_t offset[256];  // window position kh * KW + kw -> kh * W + kw
  for (std::int64_t at = 0; at < d.KH * d.KW; ++at) offset[at] = at / d.KW * d.W + at % d.KW;
#pragma omp parallel for schedule(static) if (d.planes * in_plane > kSerialWork)
  for (std::int64_t p = 0; p < d.planes; ++p) {
    float* dxp = dx + p * in_plane;               // (H, W)
    const float* dyp = dy + p * out_plane;        // (OH, OW)
    const std::uint8_t* wp = ws + p * out_plane;  // (OH, OW)
    std::fill(dxp, dxp + in_plane, 0.0f);
    for (std::int64_t oh = 0; oh < d.OH; ++oh) {
      float* window_row = dxp + oh * d.KH * d.W;  // (KH, W)
      for (std::int64_t ow = 0; ow < d.OW; ++ow)
        window_row[ow * d.KW + offset[wp[oh * d.OW + ow]]] = dyp[oh * d.OW + ow];
    }
  }
}

// ---- any window -------------------------------------------------------------------------------

// The arrays of a group of np planes (see the top of the file). Row slot (r * np + p) * Hq + i
// holds padded row i * stride_h + r of the group's plane p.
struct Layout {
  std::int64_t P;   // planes per group (the last group may have fewer)
  std::int64_t Lq;  // segments per row: OW + (KW - 1) / stride_w
  std::int64_t Hq;  // rows per row phase: OH + (KH - 1) / stride_h
  std::int64_t Wr;  // floats per padded row: stride_w * Lq
};

Layout layout_of(const Pool2dDims& d) {
  Layout l;
  l.Lq = d.OW + (d.KW - 1) / d.stride_w;
  l.Hq = d.OH + (d.KH - 1) / d.stride_h;
  l.Wr = d.stride_w * l.Lq;
  // About 2048 segments per group: long loops, and scratch that stays in L1 and L2.
  l.P = std::max<std::int64_t>(1, std::min(2048 / (d.stride_h * l.Hq * l.Lq), d.planes));
  return l;
}

// v beats the best so far: greater, or the first NaN (`!(v <= best)` holds for both, and a
// NaN best is never beaten). Written without branches so that the loops vectorize.
inline bool beats(float v, float best) { return !(v <= best) && best == best; }

// What every group shares: per row phase r and row i of it, the input row it holds (-1 in the
// padding); per output (oh, ow) (index oh * Lq + ow, rows up to Hq), the window position of
// its first real input, the reference's answer when every input of the window is -inf.
struct Tables {
  std::vector<std::int64_t> input_row;  // (stride_h, Hq)
  std::vector<std::int32_t> first;      // (Hq, Lq)
};

Tables tables_of(const Pool2dDims& d, const Layout& l) {
  Tables t;
  t.input_row.resize(static_cast<std::size_t>(d.stride_h * l.Hq));
  for (std::int64_t r = 0; r < d.stride_h; ++r)
    for (std::int64_t i = 0; i < l.Hq; ++i) {
      const std::int64_t h = i * d.stride_h + r - d.pad_top;
      t.input_row[r * l.Hq + i] = h >= 0 && h < d.H ? h : -1;
    }
  t.first.resize(static_cast<std::size_t>(l.Hq * l.Lq));
  for (std::int64_t oh = 0; oh < l.Hq; ++oh)
    for (std::int64_t ow = 0; ow < l.Lq; ++ow) {
      const std::int64_t kh = std::max<std::int64_t>(0, d.pad_top - oh * d.stride_h);
      const std::int64_t kw = std::max<std::int64_t>(0, d.pad_left - ow * d.stride_w);
      t.first[oh * l.Lq + ow] = static_cast<std::int32_t>(kh * d.KW + kw);
    }
  return t;
}

// Row segments: m[j] = max over kw of xs[S * j + kw], a[j] = the kw of the first maximum
// (j = slot * Lq + ow: the segment of output column ow in that row). S is stride_w, a
// constant for the common strides so that the loads vectorize well.
// The pointers are __restrict and the function is not inlined: GCC otherwise versions the
// loops on run-time overlap checks and ran their scalar versions (measured: 3x slower).
template <std::int64_t S>
[[gnu::noinline]] void segment_max(const float* __restrict xs, float* __restrict m,
                                   std::int32_t* __restrict a, std::int64_t n, std::int64_t KW,
                                   std::int64_t stride) {
  const std::int64_t sw = S > 0 ? S : stride;
  for (std::int64_t j = 0; j < n; ++j) m[j] = xs[sw * j];
  std::fill(a, a + n, 0);
  for (std::int64_t kw = 1; kw < KW; ++kw) {
    const float* v = xs + kw;
    const std::int32_t k = static_cast<std::int32_t>(kw);
    for (std::int64_t j = 0; j < n; ++j) {
      const float vj = v[sw * j];
      const bool win = beats(vj, m[j]);
      m[j] = win ? vj : m[j];
      a[j] = win ? k : a[j];
    }
  }
}

// Window rows: where the segments v, va of window row `row` / KW beat the best so far, they
// replace it (at = the window position row + kw). Not inlined, as segment_max.
[[gnu::noinline]] void window_row(const float* __restrict v, const std::int32_t* __restrict va,
                                  float* __restrict best, std::int32_t* __restrict at,
                                  std::int64_t n, std::int32_t row) {
  for (std::int64_t j = 0; j < n; ++j) {
    const bool win = beats(v[j], best[j]);
    best[j] = win ? v[j] : best[j];
    at[j] = win ? row + va[j] : at[j];
  }
}

// out[j] = in[j] for j < n, narrowing (window positions fit a byte). Not inlined, as
// segment_max: byte stores may alias anything, which kept GCC's loop scalar.
[[gnu::noinline]] void narrow(const std::int32_t* __restrict in, std::uint8_t* __restrict out,
                              std::int64_t n) {
  for (std::int64_t j = 0; j < n; ++j) out[j] = static_cast<std::uint8_t>(in[j]);
}

// to[j] = from[j] for j < n, for short rows: a library call per row cost more than the row.
template <typename T>
inline void copy_short(const T* from, T* to, std::int64_t n) {
  constexpr std::int64_t k32 = 32 / sizeof(T), k16 = 16 / sizeof(T);
  std::int64_t c = 0;
  for (; c + k32 <= n; c += k32) std::memcpy(to + c, from + c, 32);
  if (c + k16 <= n) {
    std::memcpy(to + c, from + c, 16);
    c += k16;
  }
  for (; c < n; ++c) to[c] = from[c];
}

// Scratch of one thread: a group's padded rows, segments and outputs.
struct Scratch {
  std::vector<float> xs, m, best;
  std::vector<std::int32_t> a, at;
  std::vector<std::uint8_t> at8;
  Scratch(const Pool2dDims& d, const Layout& l) {
    const std::int64_t slots = d.stride_h * l.P * l.Hq;
    const std::int64_t past = (d.KH - 1) / d.stride_h * l.Lq;  // segments read past the slots
    xs.resize(static_cast<std::size_t>(slots * l.Wr + d.KW));
    m.resize(static_cast<std::size_t>(slots * l.Lq + past));
    a.resize(m.size());
    best.resize(static_cast<std::size_t>(l.P * l.Hq * l.Lq));
    at.resize(best.size());
    at8.resize(best.size());
  }
};

// Planes [p0, p0 + np) of x.
void max_group(const Pool2dDims& d, const Layout& l, const Tables& t, std::int64_t p0,
               std::int64_t np, const float* x, float* y, std::uint8_t* ws, Scratch& s) {
  constexpr float kLow = -std::numeric_limits<float>::infinity();
  const std::int64_t slots = d.stride_h * np * l.Hq;
  // The padded rows.
  const std::int64_t left = std::min(d.pad_left, l.Wr);
  const std::int64_t width = std::min(d.W, l.Wr - left);  // columns past Wr are never read
  float* xs = s.xs.data();
  // Input rows in their order (the hardware prefetches them), each to its slot.
  for (std::int64_t p = 0; p < np; ++p) {
    // Padded row h + pad_top is row i of row phase r (counted, not divided: a division per
    // row cost more than copying it).
    std::int64_t r = d.pad_top % d.stride_h, i = d.pad_top / d.stride_h;
    for (std::int64_t h = 0; h < d.H && i < l.Hq; ++h) {   // later rows no window reads
      float* out = xs + ((r * np + p) * l.Hq + i) * l.Wr;  // (Wr)
      for (std::int64_t c = 0; c < left; ++c) out[c] = kLow;
      copy_short(x + ((p0 + p) * d.H + h) * d.W, out + left, width);
      for (std::int64_t c = left + width; c < l.Wr; ++c) out[c] = kLow;
      if (++r == d.stride_h) r = 0, ++i;
    }
  }
  for (std::int64_t r = 0; r < d.stride_h; ++r)  // padding rows
    for (std::int64_t i = 0; i < l.Hq; ++i)
      if (t.input_row[r * l.Hq + i] < 0)
        for (std::int64_t p = 0; p < np; ++p) {
          float* out = xs + ((r * np + p) * l.Hq + i) * l.Wr;
          std::fill(out, out + l.Wr, kLow);
        }
  std::fill(xs + slots * l.Wr, xs + slots * l.Wr + d.KW, kLow);
  // Row segments, and -inf for those read past the last slot.
  const std::int64_t n_seg = slots * l.Lq;
  float* m = s.m.data();
  std::int32_t* a = s.a.data();
  if (d.stride_w == 1)
    segment_max<1>(xs, m, a, n_seg, d.KW, 1);
  else if (d.stride_w == 2)
    segment_max<2>(xs, m, a, n_seg, d.KW, 2);
  else
    segment_max<0>(xs, m, a, n_seg, d.KW, d.stride_w);
  const std::int64_t past = (d.KH - 1) / d.stride_h * l.Lq;
  std::fill(m + n_seg, m + n_seg + past, kLow);
  std::fill(a + n_seg, a + n_seg + past, 0);
  // Windows: the first row segment, in row order, holding the maximum.
  const std::int64_t plane_out = l.Hq * l.Lq, n_out = np * plane_out;
  float* best = s.best.data();
  std::int32_t* at = s.at.data();
  std::fill(best, best + n_out, kLow);
  for (std::int64_t p = 0; p < np; ++p)
    std::copy(t.first.begin(), t.first.end(), at + p * plane_out);
  for (std::int64_t kh = 0; kh < d.KH; ++kh) {
    const std::int64_t base = ((kh % d.stride_h) * np * l.Hq + kh / d.stride_h) * l.Lq;
    window_row(m + base, a + base, best, at, n_out, static_cast<std::int32_t>(kh * d.KW));
  }
  // The outputs of rows oh < OH and columns ow < OW (locals: the byte stores could alias d).
  std::uint8_t* at8 = s.at8.data();
  narrow(at, at8, n_out);
  const std::int64_t OH = d.OH, OW = d.OW, Lq = l.Lq, Hq = l.Hq;
  for (std::int64_t p = 0; p < np; ++p)
    for (std::int64_t oh = 0; oh < OH; ++oh) {
      const std::int64_t from = (p * Hq + oh) * Lq, to = ((p0 + p) * OH + oh) * OW;
      copy_short(best + from, y + to, OW);
      copy_short(at8 + from, ws + to, OW);
    }
}

void general_max_forward(const Pool2dDims& d, const float* x, float* y, std::uint8_t* ws) {
  const Layout l = layout_of(d);
  const Tables t = tables_of(d, l);
  const std::int64_t groups = (d.planes + l.P - 1) / l.P;
#pragma omp parallel if (d.planes * d.OH * d.OW * d.KH * d.KW > kSerialWork)
  {
    Scratch s(d, l);
#pragma omp for schedule(static)
    for (std::int64_t g = 0; g < groups; ++g) {
      const std::int64_t p0 = g * l.P;
      max_group(d, l, t, p0, std::min(l.P, d.planes - p0), x, y, ws, s);
    }
  }
}

// idx[o] = the plane index of output o's recorded maximum: corner[o] (its window's top-left
// corner, which may lie in the padding) + pos + (pos / KW) * (W - KW), with pos / KW as
// (pos * magic) >> 16, exact for pos < 256 (its error stays under 1/256 < 1/KW). Not inlined,
// as segment_max.
[[gnu::noinline]] void argmax_index(const std::int32_t* __restrict corner,
                                    const std::uint8_t* __restrict pos,
                                    std::int32_t* __restrict idx, std::int64_t n, std::int32_t KW,
                                    std::int32_t W) {
  const std::int32_t magic = 65536 / KW + 1, skip = W - KW;
  for (std::int64_t o = 0; o < n; ++o) {
    const std::int32_t at = pos[o];
    idx[o] = corner[o] + at + ((at * magic) >> 16) * skip;
  }
}

// dx = 0, then each dy added at its window's maximum in output order, as the reference does.
void general_max_backward(const Pool2dDims& d, const float* dy, const std::uint8_t* ws, float* dx) {
  const std::int64_t in_plane = d.H * d.W, out_plane = d.OH * d.OW;
  std::vector<std::int32_t> corner(static_cast<std::size_t>(out_plane));
  for (std::int64_t oh = 0; oh < d.OH; ++oh)
    for (std::int64_t ow = 0; ow < d.OW; ++ow)
      corner[oh * d.OW + ow] = static_cast<std::int32_t>((oh * d.stride_h - d.pad_top) * d.W +
                                                         ow * d.stride_w - d.pad_left);
#pragma omp parallel if (d.planes * (in_plane + out_plane) > kSerialWork)
  {
    std::vector<std::int32_t> idx(static_cast<std::size_t>(out_plane));
#pragma omp for schedule(static)
    for (std::int64_t p = 0; p < d.planes; ++p) {
      float* dxp = dx + p * in_plane;         // (H, W)
      const float* dyp = dy + p * out_plane;  // (OH, OW)
      argmax_index(corner.data(), ws + p * out_plane, idx.data(), out_plane,
                   static_cast<std::int32_t>(d.KW), static_cast<std::int32_t>(d.W));
      std::fill(dxp, dxp + in_plane, 0.0f);
      for (std::int64_t o = 0; o < out_plane; ++o) dxp[idx[o]] += dyp[o];
    }
  }
}

}  // namespace

void max_pool2d_forward(const Pool2dDims& d, const float* x, float* y, std::uint8_t* workspace) {
  kernels::note_impl("epoch:max_pool_nchw");
  if (max_pool2d_tiles(d))
    tiled_max_forward(d, x, y, workspace);
  else
    general_max_forward(d, x, y, workspace);
}

void max_pool2d_backward(const Pool2dDims& d, const float* dy, const std::uint8_t* workspace,
                         float* dx) {
  kernels::note_impl("epoch:max_pool_nchw");
  if (max_pool2d_tiles(d))
    tiled_max_backward(d, dy, workspace, dx);
  else
    general_max_backward(d, dy, workspace, dx);
}

}  // namespace epoch::cpu::nchw::EPOCH_ISA_NS

#if EPOCH_ISA_LEVEL == 0
namespace epoch::cpu::nchw {

using kernels::Pool2dDims;

bool max_pool2d_supported(const Pool2dDims& d) { return d.KH * d.KW <= 256; }

bool max_pool2d_tiles(const Pool2dDims& d) {
  return d.KH == d.stride_h && d.KW == d.stride_w && d.pad_top == 0 && d.pad_left == 0 &&
         d.OH * d.KH <= d.H && d.OW * d.KW <= d.W && max_pool2d_supported(d);
}

std::int64_t max_pool2d_workspace_bytes(const Pool2dDims& d) { return d.planes * d.OH * d.OW; }

EPOCH_ISA_KERNEL(max_pool2d_forward);
EPOCH_ISA_KERNEL(max_pool2d_backward);
}  // namespace epoch::cpu::nchw
#endif
