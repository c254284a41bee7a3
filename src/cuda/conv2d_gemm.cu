// im2col convolution on CUDA (see conv2d_gemm.h). For sample n and group g, with
// Cg = C/groups input channels, OCg = OC/groups outputs, R = Cg*KH*KW and P = OH*OW:
//   col (R, P): col[(c*KH + kh)*KW + kw][oh*OW + ow] = x[n][g*Cg + c][ih][iw] (0 outside),
//               ih = oh*stride_h - pad_h + kh*dilation_h, iw likewise;
//   forward:    y[n][g] (OCg, P) = w[g] (OCg, R) col;
//   data:       col = w[g]^T dy[n][g], then dx[n][g*Cg + c][ih][iw] = the sum of the col
//               entries that read it, gathered in (kh, kw) order (no atomics);
//   weights:    dw[g] += dy[n][g] col^T, the samples in order.
#include <cstddef>
#include <cstdint>

#include "cuda/check_cuda.h"
#include "cuda/conv2d_gemm.h"
#include "cuda/device_buffer.h"
#include "cuda/linear_cuda.h"

namespace epoch::cuda::gemm_conv {

using kernels::Conv2dDims;

namespace {

constexpr int kThreads = 256;

// Plain-data copy of the sizes one group of one sample needs, for kernel arguments.
struct Geometry {
  long long Cg, H, W, KH, KW, OH, OW, sh, sw, ph, pw, dh, dw;
};

Geometry geometry(const Conv2dDims& d) {
  return {d.C / d.groups, d.H,        d.W,        d.KH,       d.KW,         d.OH,        d.OW,
          d.stride_h,     d.stride_w, d.pad_h,    d.pad_w,    d.dilation_h, d.dilation_w};
}

// col (R, P) of one sample's group: x points at its first channel.
__global__ void im2col_kernel(Geometry g, const float* x, float* col) {
  const long long P = g.OH * g.OW, total = g.Cg * g.KH * g.KW * P;
  for (long long i = blockIdx.x * static_cast<long long>(kThreads) + threadIdx.x; i < total;
       i += static_cast<long long>(kThreads) * gridDim.x) {
    const long long p = i % P, r = i / P;
    const long long ow = p % g.OW, oh = p / g.OW;
    const long long kw = r % g.KW, kh = (r / g.KW) % g.KH, c = r / (g.KW * g.KH);
    const long long ih = oh * g.sh - g.ph + kh * g.dh, iw = ow * g.sw - g.pw + kw * g.dw;
    col[i] = ih >= 0 && ih < g.H && iw >= 0 && iw < g.W ? x[(c * g.H + ih) * g.W + iw] : 0.0f;
  }
}

// dx of one sample's group from col (R, P): each input element gathers the entries that read
// it, in (kh, kw) order; overwrites dx (which points at the group's first channel).
__global__ void col2im_kernel(Geometry g, const float* col, float* dx) {
  const long long P = g.OH * g.OW, total = g.Cg * g.H * g.W;
  for (long long i = blockIdx.x * static_cast<long long>(kThreads) + threadIdx.x; i < total;
       i += static_cast<long long>(kThreads) * gridDim.x) {
    const long long iw = i % g.W, ih = (i / g.W) % g.H, c = i / (g.W * g.H);
    float sum = 0.0f;
    for (long long kh = 0; kh < g.KH; ++kh) {
      const long long th = ih + g.ph - kh * g.dh;  // = oh * stride_h
      if (th < 0 || th % g.sh != 0 || th / g.sh >= g.OH) continue;
      for (long long kw = 0; kw < g.KW; ++kw) {
        const long long tw = iw + g.pw - kw * g.dw;
        if (tw < 0 || tw % g.sw != 0 || tw / g.sw >= g.OW) continue;
        sum += col[((c * g.KH + kh) * g.KW + kw) * P + (th / g.sh) * g.OW + tw / g.sw];
      }
    }
    dx[i] = sum;
  }
}

void im2col(const Geometry& g, const float* x, float* col) {
  im2col_kernel<<<blocks_for(g.Cg * g.KH * g.KW * g.OH * g.OW), kThreads>>>(g, x, col);
  EPOCH_CUDA_CHECK_LAUNCH();
}

bool empty(const Conv2dDims& d) { return d.N == 0 || d.OH <= 0 || d.OW <= 0 || d.C == 0; }

}  // namespace

void conv2d_forward(const Conv2dDims& d, const float* x, const float* w, const float* b,
                    float* y) {
  if (d.N == 0 || d.OC == 0 || d.OH <= 0 || d.OW <= 0) return;
  const std::int64_t P = d.OH * d.OW, OCg = d.OC / d.groups;
  if (d.C == 0) {  // no inputs: y is the bias alone
    EPOCH_CUDA_CHECK(cudaMemset(y, 0, sizeof(float) * d.N * d.OC * P));
    if (b != nullptr) bias_add_forward(y, b, y, d.N, d.OC, P);
    return;
  }
  const Geometry g = geometry(d);
  const std::int64_t R = g.Cg * d.KH * d.KW;
  const DeviceBuffer col(sizeof(float) * static_cast<std::size_t>(R * P));
  for (std::int64_t n = 0; n < d.N; ++n)
    for (std::int64_t grp = 0; grp < d.groups; ++grp) {
      im2col(g, x + (n * d.C + grp * g.Cg) * d.H * d.W, col.as<float>());
      gemm(false, false, OCg, P, R, w + grp * OCg * R, col.as<float>(),
           y + (n * d.OC + grp * OCg) * P);
    }
  if (b != nullptr) bias_add_forward(y, b, y, d.N, d.OC, P);
}

void conv2d_backward(const Conv2dDims& d, const float* dy, const float* x, const float* w,
                     float* dx, float* dw, float* db) {
  const std::int64_t Cg = d.C / d.groups, OCg = d.OC / d.groups;
  const std::int64_t R = Cg * d.KH * d.KW;
  if (empty(d) || d.OC == 0) {
    if (dw != nullptr) EPOCH_CUDA_CHECK(cudaMemset(dw, 0, sizeof(float) * d.OC * R));
    if (db != nullptr) EPOCH_CUDA_CHECK(cudaMemset(db, 0, sizeof(float) * d.OC));
    if (dx != nullptr) EPOCH_CUDA_CHECK(cudaMemset(dx, 0, sizeof(float) * d.N * d.C * d.H * d.W));
    return;
  }
  const Geometry g = geometry(d);
  const std::int64_t P = d.OH * d.OW;
  const DeviceBuffer col(sizeof(float) * static_cast<std::size_t>(R * P));
  for (std::int64_t n = 0; n < d.N; ++n)
    for (std::int64_t grp = 0; grp < d.groups; ++grp) {
      const float* dyg = dy + (n * d.OC + grp * OCg) * P;
      const float* wg = w + grp * OCg * R;
      if (dw != nullptr) {
        im2col(g, x + (n * d.C + grp * Cg) * d.H * d.W, col.as<float>());
        gemm(false, true, OCg, R, P, dyg, col.as<float>(), dw + grp * OCg * R, n > 0);
      }
      if (dx != nullptr) {
        gemm(true, false, R, P, OCg, wg, dyg, col.as<float>());
        col2im_kernel<<<blocks_for(Cg * d.H * d.W), kThreads>>>(
            g, col.as<float>(), dx + (n * d.C + grp * Cg) * d.H * d.W);
        EPOCH_CUDA_CHECK_LAUNCH();
      }
    }
  if (db != nullptr) bias_add_backward(dy, db, d.N, d.OC, P);
}

}  // namespace epoch::cuda::gemm_conv
