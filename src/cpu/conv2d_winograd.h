// epoch's own Winograd F(4x4, 3x3) convolution for x86-64-v3 (AVX2 and FMA), on activations in
// the 8-channel blocked layout (Tensor::channel_block 8: (N, C/8, H, W, 8)): the layout oneDNN
// keeps activations in on AVX2 CPUs, where oneDNN 2.6 has no Winograd kernel. Same contract as
// cpu::conv2d_forward/backward otherwise (OIHW weights, outputs overwritten).
//
// Each 4x4 output tile comes from a 6x6 input tile: V = B^T d B, U = G g G^T, M = U . V summed
// over input channels (36 matrix products, one per position of the 6x6 tile), y = A^T M A.
// 36 multiplications per 16 outputs per channel pair instead of 144. Tiles are transformed and
// multiplied a block at a time by all threads together, so the transformed tiles stay in cache.
// Backward data is the forward of dy with the weights flipped and transposed; backward weights
// multiplies the transformed inputs with the transformed output gradients (dM = A dY A^T) and
// brings the sum back with G^T dU G. Results differ from direct summation by rounding only
// (about 1e-5 relative, relative to the largest value for dw); every call gives the same bits,
// whatever the thread count. Work buffers are kept by the calling thread between calls.
#pragma once

#include <cstdint>

#include "kernels/args.h"

namespace epoch::cpu {

/// The name note_impl() records for these kernels.
inline constexpr const char* kWinogradImpl = "epoch_winograd_f4x4_3x3:avx2";

/// True when the kernels below take these sizes: 3x3, unit stride and dilation, one group,
/// padding at most 2, and input and output channels multiples of 8; and the CPU has AVX2 and
/// FMA.
bool conv2d_winograd_supported(const kernels::Conv2dDims& d);

/// y = conv(x, w) + b, then max(0, y) when relu.
void conv2d_winograd_forward(const kernels::Conv2dDims& d,
                             const float* x,  // (N, C/8, H, W, 8)
                             const float* w,  // (OC, C, 3, 3)
                             const float* b,  // (OC) or null
                             float* y,        // (N, OC/8, OH, OW, 8)
                             bool relu);

/// Gradients of conv2d_winograd_forward (without relu); dx and db may be null when not wanted.
void conv2d_winograd_backward(const kernels::Conv2dDims& d,
                              const float* dy,  // (N, OC/8, OH, OW, 8)
                              const float* x,   // (N, C/8, H, W, 8)
                              const float* w,   // (OC, C, 3, 3)
                              float* dx,        // (N, C/8, H, W, 8) or null
                              float* dw,        // (OC, C, 3, 3)
                              float* db);       // (OC) or null

}  // namespace epoch::cpu
