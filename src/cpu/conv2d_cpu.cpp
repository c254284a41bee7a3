// Reference convolution (see conv2d_cpu.h). For each (n, g): col = im2col(x[n, g]) of shape
// (Cg*KH*KW, OH*OW); forward y[n, g] = W_g col; backward dW_g += dy[n, g] col^T and
// dx[n, g] = col2im(W_g^T dy[n, g]). Samples are visited in order, so sums are deterministic.
#include "cpu/conv2d_cpu.h"

#include <algorithm>
#include <vector>

#include "cpu/linear_cpu.h"
// Compiled once per instruction-set level (kernels/isa_target.h): include it last.
#include "kernels/isa_target.h"

namespace epoch::cpu::EPOCH_ISA_NS {

using kernels::Conv2dDims;

namespace {

// col (Cg*KH*KW, OH*OW) from one group of one sample; zeros where the window is in padding.
void im2col(const Conv2dDims& d, std::int64_t Cg,
            const float* x,  // (Cg, H, W)
            float* col) {    // (Cg*KH*KW, OH*OW)
  const std::int64_t rows = Cg * d.KH * d.KW;
#pragma omp parallel for schedule(static) if (rows * d.OH * d.OW > 32768)
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t kw = r % d.KW, kh = (r / d.KW) % d.KH, c = r / (d.KW * d.KH);
    const float* xc = x + c * d.H * d.W;
    float* out = col + r * d.OH * d.OW;
    for (std::int64_t oh = 0; oh < d.OH; ++oh) {
      const std::int64_t h = oh * d.stride_h - d.pad_h + kh * d.dilation_h;
      float* orow = out + oh * d.OW;
      if (h < 0 || h >= d.H) {
        std::fill(orow, orow + d.OW, 0.0f);
        continue;
      }
      for (std::int64_t ow = 0; ow < d.OW; ++ow) {
        const std::int64_t w = ow * d.stride_w - d.pad_w + kw * d.dilation_w;
        orow[ow] = (w >= 0 && w < d.W) ? xc[h * d.W + w] : 0.0f;
      }
    }
  }
}

// dx (Cg, H, W) = sum of col (Cg*KH*KW, OH*OW) entries back onto the input positions they
// came from. Parallel over input channels; each channel adds its rows in a fixed order.
void col2im(const Conv2dDims& d, std::int64_t Cg,
            const float* col,  // (Cg*KH*KW, OH*OW)
            float* dx) {       // (Cg, H, W)
#pragma omp parallel for schedule(static) if (Cg * d.KH * d.KW * d.OH * d.OW > 32768)
  for (std::int64_t c = 0; c < Cg; ++c) {
    float* dxc = dx + c * d.H * d.W;
    std::fill(dxc, dxc + d.H * d.W, 0.0f);
    for (std::int64_t kh = 0; kh < d.KH; ++kh)
      for (std::int64_t kw = 0; kw < d.KW; ++kw) {
        const float* in = col + ((c * d.KH + kh) * d.KW + kw) * d.OH * d.OW;
        for (std::int64_t oh = 0; oh < d.OH; ++oh) {
          const std::int64_t h = oh * d.stride_h - d.pad_h + kh * d.dilation_h;
          if (h < 0 || h >= d.H) continue;
          for (std::int64_t ow = 0; ow < d.OW; ++ow) {
            const std::int64_t w = ow * d.stride_w - d.pad_w + kw * d.dilation_w;
            if (w >= 0 && w < d.W) dxc[h * d.W + w] += in[oh * d.OW + ow];
          }
        }
      }
  }
}

}  // namespace

void conv2d_forward(const Conv2dDims& d, const float* x, const float* w, const float* b,
                    float* y) {
  const std::int64_t Cg = d.C / d.groups, OCg = d.OC / d.groups;
  const std::int64_t K = Cg * d.KH * d.KW, P = d.OH * d.OW;
  std::vector<float> col(static_cast<std::size_t>(K * P));
  for (std::int64_t n = 0; n < d.N; ++n)
    for (std::int64_t g = 0; g < d.groups; ++g) {
      im2col(d, Cg, x + (n * d.C + g * Cg) * d.H * d.W, col.data());
      gemm(false, false, OCg, P, K, w + g * OCg * K, col.data(), y + (n * d.OC + g * OCg) * P, false);
    }
  if (b != nullptr) bias_add_forward(y, b, y, d.N, d.OC, P);
}

void conv2d_backward(const Conv2dDims& d, const float* dy, const float* x, const float* w,
                     float* dx, float* dw, float* db) {
  const std::int64_t Cg = d.C / d.groups, OCg = d.OC / d.groups;
  const std::int64_t K = Cg * d.KH * d.KW, P = d.OH * d.OW;
  std::vector<float> col(static_cast<std::size_t>(K * P));
  for (std::int64_t n = 0; n < d.N; ++n)
    for (std::int64_t g = 0; g < d.groups; ++g) {
      const float* dyg = dy + (n * d.OC + g * OCg) * P;  // (OCg, P)
      im2col(d, Cg, x + (n * d.C + g * Cg) * d.H * d.W, col.data());
      // dW_g (OCg, K) (+)= dy_g (OCg, P) col^T (P, K); the first sample initializes.
      gemm(false, true, OCg, K, P, dyg, col.data(), dw + g * OCg * K, n > 0);
      if (dx != nullptr) {
        // dcol (K, P) = W_g^T (K, OCg) dy_g (OCg, P), then scattered back onto dx.
        gemm(true, false, K, P, OCg, w + g * OCg * K, dyg, col.data(), false);
        col2im(d, Cg, col.data(), dx + (n * d.C + g * Cg) * d.H * d.W);
      }
    }
  if (d.N == 0) std::fill(dw, dw + d.OC * K, 0.0f);
  if (db != nullptr) bias_add_backward(dy, db, d.N, d.OC, P);
}

}  // namespace epoch::cpu::EPOCH_ISA_NS

#if EPOCH_ISA_LEVEL == 0
namespace epoch::cpu {
EPOCH_ISA_KERNEL(conv2d_forward);
EPOCH_ISA_KERNEL(conv2d_backward);
}  // namespace epoch::cpu
#endif
