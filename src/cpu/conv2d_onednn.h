// oneDNN convolution for the CPU fast path: the same contract as cpu::conv2d_forward/backward
// (plain NCHW tensors, OIHW weights, outputs overwritten), primitives from the shared cache.
// Compiled only when EPOCH_WITH_ONEDNN; guard includes with #if EPOCH_WITH_ONEDNN.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/args.h"

namespace epoch::cpu::onednn {

/// Which memory layouts the convolution primitives run in. `plain` runs on the caller's NCHW
/// buffers directly; `blocked` lets oneDNN choose (format `any`) and reorders to and from the
/// plain buffers around every call; `automatic` picks per shape (see conv2d_onednn.cpp).
enum class ConvLayout { automatic, plain, blocked };

/// The channel blocks (Tensor::channel_block: 0 row-major, else 8 or 16) of the activations a
/// call reads and writes: `x` for x and dx, `y` for y and dy. The primitives run in their own
/// layouts; a reorder happens only where the caller's block differs.
struct ConvBlocks {
  std::int64_t x = 0, y = 0;
};

/// What the forward does after the convolution: y = max(0, conv + b) as a post-op of the same
/// primitive (relu), with y's values added first (add: a residual sum), and whether it runs as
/// forward_inference (no backward will follow).
struct ConvEpilogue {
  bool relu = false;
  bool inference = false;
  bool add = false;  // y = conv + b + y (y read first, a sum post-op), before the ReLU
};

/// Which algorithms a call may run: `direct` convolution only, or `automatic`: Winograd too
/// where epoch measured it faster (see conv2d_onednn.cpp) and oneDNN has it for this CPU, as
/// ops::ConvAlgorithm.
enum class ConvAlgo { direct, automatic };

/// The channel block of the layout the forward primitive writes y in (0 when that layout is
/// not plain nChw8c/nChw16c): a caller that takes a blocked y asks for it, so y needs no reorder.
std::int64_t conv2d_forward_output_block(const kernels::Conv2dDims& d, bool has_bias,
                                         std::int64_t x_block,
                                         ConvLayout layout = ConvLayout::automatic,
                                         ConvAlgo algo = ConvAlgo::direct);

/// The name (impl_name) of the implementation oneDNN picks for these sizes at the calling
/// thread's OpenMP thread count: the forward with the epilogue's post-ops, and the backward
/// data pass ("" for an empty problem).
std::string conv2d_forward_impl(const kernels::Conv2dDims& d, bool has_bias, std::int64_t x_block,
                                ConvEpilogue epilogue = {},
                                ConvLayout layout = ConvLayout::automatic,
                                ConvAlgo algo = ConvAlgo::direct);
std::string conv2d_backward_data_impl(const kernels::Conv2dDims& d, bool has_bias,
                                      std::int64_t x_block,
                                      ConvLayout layout = ConvLayout::automatic,
                                      ConvAlgo algo = ConvAlgo::direct);

/// y = conv(x, w) + b, as cpu::conv2d_forward.
void conv2d_forward(const kernels::Conv2dDims& d,
                    const float* x,  // (N, C, H, W)
                    const float* w,  // (OC, C/groups, KH, KW)
                    const float* b,  // (OC) or null
                    float* y,        // (N, OC, OH, OW)
                    ConvLayout layout = ConvLayout::automatic, ConvBlocks blocks = {},
                    ConvEpilogue epilogue = {}, ConvAlgo algo = ConvAlgo::direct);

/// Gradients of conv2d_forward, as cpu::conv2d_backward; overwrites dx, dw, db (dx, db may be
/// null when not wanted).
void conv2d_backward(const kernels::Conv2dDims& d,
                     const float* dy,  // (N, OC, OH, OW)
                     const float* x,   // (N, C, H, W)
                     const float* w,   // (OC, C/groups, KH, KW)
                     float* dx,        // (N, C, H, W) or null
                     float* dw,        // (OC, C/groups, KH, KW), or null: dx alone
                     float* db,        // (OC) or null (null when dw is)
                     ConvLayout layout = ConvLayout::automatic, ConvBlocks blocks = {},
                     ConvAlgo algo = ConvAlgo::direct);

/// The layout `automatic` resolves to for these sizes (plain or blocked), for activations x in
/// the channel block x_block (0: row-major).
ConvLayout conv2d_chosen_layout(const kernels::Conv2dDims& d, std::int64_t x_block = 0);

/// True when ConvAlgo::automatic lets oneDNN choose Winograd for these sizes (it still runs
/// direct convolution where it has no Winograd kernel for the CPU: below AVX-512).
bool conv2d_winograd_eligible(const kernels::Conv2dDims& d);

}  // namespace epoch::cpu::onednn
