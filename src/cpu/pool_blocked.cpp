// Tiled max pooling on channel-blocked activations (see pool_blocked.h).
#include "cpu/pool_blocked.h"

#include <algorithm>
#include <cmath>

#include "epoch/tensor/error.h"

namespace epoch::cpu {

using kernels::Pool2dDims;

namespace {

constexpr std::int64_t kSerialWork = 1 << 16;  // below it a parallel region costs more

// One output row of one channel block: B lanes at a time, the first maximum of each window
// winning, a NaN beating any number (as the reference kernel).
template <int B>
void forward_row(const Pool2dDims& d, const float* rows, float* y, std::uint8_t* ws) {
  const std::int64_t row = d.W * B;  // floats from one input row to the next
  for (std::int64_t ow = 0; ow < d.OW; ++ow) {
    float m[B];
    std::uint8_t at[B];
    const float* first = rows + ow * d.KW * B;
    for (int c = 0; c < B; ++c) m[c] = first[c], at[c] = 0;
    for (std::int64_t kh = 0; kh < d.KH; ++kh)
      for (std::int64_t kw = 0; kw < d.KW; ++kw) {
        if (kh == 0 && kw == 0) continue;
        const float* v = first + kh * row + kw * B;
        const auto pos = static_cast<std::uint8_t>(kh * d.KW + kw);
        for (int c = 0; c < B; ++c) {
          const bool win = v[c] > m[c] || (v[c] != v[c] && m[c] == m[c]);
          m[c] = win ? v[c] : m[c];
          at[c] = win ? pos : at[c];
        }
      }
    for (int c = 0; c < B; ++c) y[ow * B + c] = m[c], ws[ow * B + c] = at[c];
  }
}

template <int B>
void forward(const Pool2dDims& d, const float* x, float* y, std::uint8_t* ws) {
  const std::int64_t blocks = d.planes / B;  // N * C/b
  const std::int64_t in_plane = d.H * d.W * B, out_plane = d.OH * d.OW * B;
#pragma omp parallel for collapse(2) schedule(static) if (d.planes * d.H * d.W > kSerialWork)
  for (std::int64_t p = 0; p < blocks; ++p)
    for (std::int64_t oh = 0; oh < d.OH; ++oh)
      forward_row<B>(d, x + p * in_plane + oh * d.KH * d.W * B, y + p * out_plane + oh * d.OW * B,
                     ws + p * out_plane + oh * d.OW * B);
}

template <int B>
void backward(const Pool2dDims& d, const float* dy, const std::uint8_t* ws, float* dx) {
  const std::int64_t blocks = d.planes / B;
  const std::int64_t in_plane = d.H * d.W * B, out_plane = d.OH * d.OW * B;
  std::int64_t offset[256];  // window position kh * KW + kw -> floats from the window's corner
  for (std::int64_t at = 0; at < d.KH * d.KW; ++at) offset[at] = (at / d.KW * d.W + at % d.KW) * B;
#pragma omp parallel for schedule(static) if (d.planes * d.H * d.W > kSerialWork)
  for (std::int64_t p = 0; p < blocks; ++p) {
    float* dxp = dx + p * in_plane;
    std::fill(dxp, dxp + in_plane, 0.0f);
    for (std::int64_t oh = 0; oh < d.OH; ++oh)
      for (std::int64_t ow = 0; ow < d.OW; ++ow) {
        const std::int64_t o = p * out_plane + (oh * d.OW + ow) * B;
        float* corner = dxp + (oh * d.KH * d.W + ow * d.KW) * B;
        for (int c = 0; c < B; ++c) corner[offset[ws[o + c]] + c] = dy[o + c];
      }
  }
}

void check(const Pool2dDims& d, std::int64_t block) {
  EPOCH_CHECK(max_pool2d_windows_tile(d) && (block == 8 || block == 16) && d.planes % block == 0,
              "max_pool2d (blocked): windows ", d.KH, "x", d.KW, " stride ", d.stride_h, "x",
              d.stride_w, " or channel block ", block, " not supported");
}

}  // namespace

bool max_pool2d_windows_tile(const Pool2dDims& d) {
  return d.KH == d.stride_h && d.KW == d.stride_w && d.pad_top == 0 && d.pad_left == 0 &&
         d.KH * d.KW <= 256 && d.OH * d.KH <= d.H && d.OW * d.KW <= d.W;
}

void max_pool2d_blocked_forward(const Pool2dDims& d, std::int64_t block, const float* x, float* y,
                                std::uint8_t* ws) {
  check(d, block);
  if (block == 8)
    forward<8>(d, x, y, ws);
  else
    forward<16>(d, x, y, ws);
}

void max_pool2d_blocked_backward(const Pool2dDims& d, std::int64_t block, const float* dy,
                                 const std::uint8_t* ws, float* dx) {
  check(d, block);
  if (block == 8)
    backward<8>(d, dy, ws, dx);
  else
    backward<16>(d, dy, ws, dx);
}

}  // namespace epoch::cpu
