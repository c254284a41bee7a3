// epoch's own max pooling on plain NCHW for the CPU fast path: any window, stride and padding
// (oneDNN 2.6 runs its unvectorized "simple_nchw" code there on AVX2 machines) and windows that
// tile the input (faster than oneDNN's everywhere). The workspace holds, per output, the
// position kh * KW + kw of its maximum in the window. Always built, so tests call it on any CPU.
#pragma once

#include <cstdint>

#include "kernels/args.h"
#include "kernels/isa_kernel.h"

namespace epoch::cpu::nchw {

/// True when these sizes suit max_pool2d_forward: a window position fits a byte.
bool max_pool2d_supported(const kernels::Pool2dDims& d);

/// True when the windows tile the input (kernel == stride, no padding) and are supported: this
/// kernel then beats oneDNN's on every CPU measured, so the fast path always takes it.
bool max_pool2d_tiles(const kernels::Pool2dDims& d);

/// Bytes of the workspace: one per output.
std::int64_t max_pool2d_workspace_bytes(const kernels::Pool2dDims& d);

/// y = max over each window of real inputs, exactly as cpu::max_pool2d_forward (the first
/// maximum in row-major order wins, and so does the first NaN); the workspace receives its
/// window position. requires: max_pool2d_supported(d). Names itself "epoch:max_pool_nchw".
extern const kernels::IsaKernel<void(const kernels::Pool2dDims& d,
                        const float* x,            // (N*C, H, W)
                        float* y,                  // (N*C, OH, OW)
                        std::uint8_t* workspace)> max_pool2d_forward;  // (N*C, OH, OW)

/// dx = dy scattered onto the maxima recorded in the workspace (overwrites dx), summed in the
/// reference's order, so that dx equals cpu::max_pool2d_backward's bit for bit.
extern const kernels::IsaKernel<void(const kernels::Pool2dDims& d,
                         const float* dy,                // (N*C, OH, OW)
                         const std::uint8_t* workspace,  // from max_pool2d_forward
                         float* dx)> max_pool2d_backward;                     // (N*C, H, W)

}  // namespace epoch::cpu::nchw
