// Reference pooling kernels (see pool_cpu.h). OpenMP over (n, c) planes: every output plane
// and every input-gradient plane belongs to one thread, so results never depend on threads.
#include "cpu/pool_cpu.h"

#include <algorithm>
#include <cmath>
#include <limits>
// Compiled once per instruction-set level (kernels/isa_target.h): include it last.
#include "kernels/isa_target.h"

namespace epoch::cpu::EPOCH_ISA_NS {

using kernels::Pool2dDims;

namespace {

// The window of output (oh, ow) clipped to the real input: rows [h0, h1), columns [w0, w1).
struct Window {
  std::int64_t h0, h1, w0, w1;
};
inline Window window(const Pool2dDims& d, std::int64_t oh, std::int64_t ow) {
  const std::int64_t hs = oh * d.stride_h - d.pad_top, ws = ow * d.stride_w - d.pad_left;
  return {std::max<std::int64_t>(hs, 0), std::min(hs + d.KH, d.H), std::max<std::int64_t>(ws, 0),
          std::min(ws + d.KW, d.W)};
}

inline float divisor(const Pool2dDims& d, const Window& win, bool count_include_pad) {
  return count_include_pad ? static_cast<float>(d.KH * d.KW)
                           : static_cast<float>((win.h1 - win.h0) * (win.w1 - win.w0));
}

}  // namespace

void max_pool2d_forward(const Pool2dDims& d, const float* x, float* y, std::int32_t* indices) {
  const std::int64_t in_plane = d.H * d.W, out_plane = d.OH * d.OW;
#pragma omp parallel for schedule(static) if (d.planes * out_plane * d.KH * d.KW > 32768)
  for (std::int64_t p = 0; p < d.planes; ++p) {
    const float* xp = x + p * in_plane;
    for (std::int64_t oh = 0; oh < d.OH; ++oh)
      for (std::int64_t ow = 0; ow < d.OW; ++ow) {
        const Window win = window(d, oh, ow);
        float best = -std::numeric_limits<float>::infinity();
        std::int64_t arg = win.h0 * d.W + win.w0;
        for (std::int64_t h = win.h0; h < win.h1; ++h)
          for (std::int64_t w = win.w0; w < win.w1; ++w) {
            const float v = xp[h * d.W + w];
            // Strictly greater keeps the first maximum; a NaN wins and stays (propagates).
            if (v > best || (std::isnan(v) && !std::isnan(best))) {
              best = v;
              arg = h * d.W + w;
            }
          }
        y[p * out_plane + oh * d.OW + ow] = best;
        indices[p * out_plane + oh * d.OW + ow] = static_cast<std::int32_t>(arg);
      }
  }
}

void max_pool2d_backward(const Pool2dDims& d, const float* dy, const std::int32_t* indices,
                         float* dx) {
  const std::int64_t in_plane = d.H * d.W, out_plane = d.OH * d.OW;
#pragma omp parallel for schedule(static) if (d.planes * (in_plane + out_plane) > 32768)
  for (std::int64_t p = 0; p < d.planes; ++p) {
    float* dxp = dx + p * in_plane;
    std::fill(dxp, dxp + in_plane, 0.0f);
    const std::int32_t* ip = indices + p * out_plane;
    const float* dyp = dy + p * out_plane;
    for (std::int64_t o = 0; o < out_plane; ++o) dxp[ip[o]] += dyp[o];
  }
}

void avg_pool2d_forward(const Pool2dDims& d, bool count_include_pad, const float* x, float* y) {
  const std::int64_t in_plane = d.H * d.W, out_plane = d.OH * d.OW;
#pragma omp parallel for schedule(static) if (d.planes * out_plane * d.KH * d.KW > 32768)
  for (std::int64_t p = 0; p < d.planes; ++p) {
    const float* xp = x + p * in_plane;
    for (std::int64_t oh = 0; oh < d.OH; ++oh)
      for (std::int64_t ow = 0; ow < d.OW; ++ow) {
        const Window win = window(d, oh, ow);
        float s = 0.0f;
        for (std::int64_t h = win.h0; h < win.h1; ++h)
          for (std::int64_t w = win.w0; w < win.w1; ++w) s += xp[h * d.W + w];
        y[p * out_plane + oh * d.OW + ow] = s / divisor(d, win, count_include_pad);
      }
  }
}

void avg_pool2d_backward(const Pool2dDims& d, bool count_include_pad, const float* dy,
                         float* dx) {
  const std::int64_t in_plane = d.H * d.W, out_plane = d.OH * d.OW;
#pragma omp parallel for schedule(static) if (d.planes * out_plane * d.KH * d.KW > 32768)
  for (std::int64_t p = 0; p < d.planes; ++p) {
    float* dxp = dx + p * in_plane;
    std::fill(dxp, dxp + in_plane, 0.0f);
    for (std::int64_t oh = 0; oh < d.OH; ++oh)
      for (std::int64_t ow = 0; ow < d.OW; ++ow) {
        const Window win = window(d, oh, ow);
        const float g = dy[p * out_plane + oh * d.OW + ow] / divisor(d, win, count_include_pad);
        for (std::int64_t h = win.h0; h < win.h1; ++h)
          for (std::int64_t w = win.w0; w < win.w1; ++w) dxp[h * d.W + w] += g;
      }
  }
}

void global_avg_pool2d_forward(const float* x, float* y, std::int64_t planes, std::int64_t HW) {
#pragma omp parallel for schedule(static) if (planes * HW > 32768)
  for (std::int64_t p = 0; p < planes; ++p) {
    double s = 0.0;
    for (std::int64_t i = 0; i < HW; ++i) s += x[p * HW + i];
    y[p] = static_cast<float>(s / static_cast<double>(HW));
  }
}

void global_avg_pool2d_backward(const float* dy, float* dx, std::int64_t planes,
                                std::int64_t HW) {
  const float inv = 1.0f / static_cast<float>(HW);
#pragma omp parallel for schedule(static) if (planes * HW > 32768)
  for (std::int64_t p = 0; p < planes; ++p)
    std::fill(dx + p * HW, dx + (p + 1) * HW, dy[p] * inv);
}

}  // namespace epoch::cpu::EPOCH_ISA_NS

#if EPOCH_ISA_LEVEL == 0
namespace epoch::cpu {
EPOCH_ISA_KERNEL(max_pool2d_forward);
EPOCH_ISA_KERNEL(max_pool2d_backward);
EPOCH_ISA_KERNEL(avg_pool2d_forward);
EPOCH_ISA_KERNEL(avg_pool2d_backward);
EPOCH_ISA_KERNEL(global_avg_pool2d_forward);
EPOCH_ISA_KERNEL(global_avg_pool2d_backward);
}  // namespace epoch::cpu
#endif
