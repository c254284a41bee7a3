// Reference CPU kernels for 2-D convolution (cross-correlation) with stride, zero padding,
// dilation and groups: per (sample, group) an im2col into a buffer, then the blocked GEMM.
#pragma once

#include <cstdint>

namespace epoch::cpu {

/// Sizes of one convolution; OH and OW already computed (and positive).
struct Conv2dDims {
  std::int64_t N = 0, C = 0, H = 0, W = 0;
  std::int64_t OC = 0, KH = 0, KW = 0, OH = 0, OW = 0;
  std::int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0;
  std::int64_t dilation_h = 1, dilation_w = 1, groups = 1;
};

/// y = conv(x, w) + b.
void conv2d_forward(const Conv2dDims& d,
                    const float* x,  // (N, C, H, W)
                    const float* w,  // (OC, C/groups, KH, KW)
                    const float* b,  // (OC) or null
                    float* y);       // (N, OC, OH, OW)

/// Gradients of conv2d_forward; overwrites dx, dw, db. dx and db may be null (not wanted).
void conv2d_backward(const Conv2dDims& d,
                     const float* dy,  // (N, OC, OH, OW)
                     const float* x,   // (N, C, H, W)
                     const float* w,   // (OC, C/groups, KH, KW)
                     float* dx,        // (N, C, H, W) or null
                     float* dw,        // (OC, C/groups, KH, KW)
                     float* db);       // (OC) or null

}  // namespace epoch::cpu
