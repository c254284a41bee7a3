// 2-D convolution (cross-correlation, as in every framework): stride, zero padding, dilation
// and groups. Forward and backward, dispatched by device; oneDNN on the CPU fast path.
#pragma once

#include <cstdint>

#include "epoch/tensor/tensor.h"

namespace epoch::ops {

struct Conv2dParams {
  std::int64_t stride_h = 1, stride_w = 1;
  std::int64_t pad_h = 0, pad_w = 0;  // zeros added on each side
  std::int64_t dilation_h = 1, dilation_w = 1;
  std::int64_t groups = 1;
  /// The CPU fast path may return y channel-blocked (Tensor::channel_block), in the layout its
  /// primitive wrote, for a caller that hands y only to ops that take that layout
  /// (nn::forward_in_order asks when the next layer does). y is row-major otherwise.
  bool blocked_output = false;
  /// y = max(0, conv(x, w) + b): fused into the convolution on the CPU fast path (a oneDNN
  /// post-op, no second pass over y), applied after it elsewhere. conv2d_backward takes the
  /// gradient after the ReLU's (epoch::conv2d computes it from y).
  bool relu = false;
  /// No backward will follow (the CPU fast path runs an inference primitive).
  bool inference = false;
};

/// Output spatial size: (in + 2*pad - dilation*(k-1) - 1) / stride + 1.
std::int64_t conv_out_size(std::int64_t in, std::int64_t k, std::int64_t stride, std::int64_t pad,
                           std::int64_t dilation);

/// y = conv(x, w) + b.  x (N, C, H, W), w (OC, C/groups, KH, KW), b (OC) or undefined.
/// Returns y (N, OC, OH, OW).
Tensor conv2d_forward(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dParams& p);

/// y = conv(x, w) + b + residual, then max(0, y) when p.relu: the last convolution of a residual
/// block and the block's sum in one op, for inference (no backward). residual (N, OC, OH, OW) in
/// any layout. On the CPU fast path the sum (and the ReLU) are post-ops of the convolution, which
/// starts from a copy of residual (no separate passes over y), when residual is in the layout
/// the primitive writes; elsewhere conv2d_forward, then add (and relu): the same values to
/// rounding. reuse_residual: the caller gives residual up, so y may be written in its storage.
Tensor conv2d_forward_add(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dParams& p,
                          const Tensor& residual, bool reuse_residual = false);

struct Conv2dGrads {
  Tensor dx;  // (N, C, H, W), undefined unless asked for
  Tensor dw;  // (OC, C/groups, KH, KW)
  Tensor db;  // (OC), undefined when there is no bias
};

/// Gradients of conv2d_forward given dy (N, OC, OH, OW). need_dx=false skips dx (first layer).
/// x and dy may be channel-blocked; on the fast path dx comes in x's layout, else row-major.
Conv2dGrads conv2d_backward(const Tensor& dy, const Tensor& x, const Tensor& w, bool has_bias,
                            const Conv2dParams& p, bool need_dx = true);

}  // namespace epoch::ops
