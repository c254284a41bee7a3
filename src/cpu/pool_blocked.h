// Max pooling on channel-blocked activations (Tensor::channel_block: (N, C/b, H, W, b), b = 8
// or 16), vectorized over the b channels of a block: a direct kernel for windows that tile the
// input (kernel == stride, no padding: every 2x2/2 layer of the zoo), and one for any other
// window, overlapping and padded (ResNet's 3x3/2 stem pooling, cifar10-tf's, AlexNet's), so that
// such a layer does not take its activations out of the blocked layout. The workspace holds,
// per output, the window position kh * KW + kw of the first maximum, in the output's blocked
// order: the same choice as the reference kernel and as the row-major kernels, and the
// backward sums in the reference's order, so results do not depend on the layout.
#pragma once

#include <cstdint>

#include "kernels/args.h"
#include "kernels/isa_kernel.h"

namespace epoch::cpu {

/// True when the kernels below take these sizes: a window position fits a byte and the padding
/// is smaller than the window (every window holds a real input).
bool max_pool2d_blocked_supported(const kernels::Pool2dDims& d);

/// True when the windows tile the input (KH == stride_h, KW == stride_w, no padding, at most
/// 256 window positions): the shapes the direct kernel takes.
bool max_pool2d_windows_tile(const kernels::Pool2dDims& d);

/// y = max over each window; ws[i] = the window position of y[i]'s first maximum.
extern const kernels::IsaKernel<void(const kernels::Pool2dDims& d, std::int64_t block,
                                const float* x,     // (N, C/b, H, W, b)
                                float* y,           // (N, C/b, OH, OW, b)
                                std::uint8_t* ws)> max_pool2d_blocked_forward;  // (N, C/b, OH, OW, b)

/// dx = dy scattered onto the recorded maxima, zero elsewhere (overwrites dx). With y_mask
/// (the forward's y), only where y > 0: the gradient of a ReLU before the pooling as well.
extern const kernels::IsaKernel<void(const kernels::Pool2dDims& d, std::int64_t block,
                                 const float* dy,         // (N, C/b, OH, OW, b)
                                 const float* y_mask,     // (N, C/b, OH, OW, b) or nullptr
                                 const std::uint8_t* ws,  // from the forward
                                 float* dx)> max_pool2d_blocked_backward;              // (N, C/b, H, W, b)

}  // namespace epoch::cpu
