// oneDNN max and average pooling for the CPU fast path, on plain NCHW buffers (max pooling
// runs epoch's own kernel, cpu/pool_nchw.h, where its windows tile the input and where oneDNN
// has only unvectorized code). Max pooling keeps a workspace of opaque bytes for its backward
// instead of i32 argmax indices.
// Compiled only when EPOCH_WITH_ONEDNN; guard includes with #if EPOCH_WITH_ONEDNN.
#pragma once

#include <cstdint>

#include "kernels/args.h"

namespace epoch::cpu::onednn {

/// Bytes of the max-pooling workspace for these sizes (C channels, N = d.planes / C).
std::int64_t max_pool2d_workspace_bytes(const kernels::Pool2dDims& d, std::int64_t C);

/// y = max over each window; writes the workspace max_pool2d_backward reads.
void max_pool2d_forward(const kernels::Pool2dDims& d, std::int64_t C,
                        const float* x,            // (N, C, H, W)
                        float* y,                  // (N, C, OH, OW)
                        std::uint8_t* workspace);  // max_pool2d_workspace_bytes(d, C)

/// dx = dy scattered onto the maxima recorded in the workspace (overwrites dx).
void max_pool2d_backward(const kernels::Pool2dDims& d, std::int64_t C,
                         const float* dy,                // (N, C, OH, OW)
                         const std::uint8_t* workspace,  // from max_pool2d_forward
                         float* dx);                     // (N, C, H, W)

/// y = mean of each window, as cpu::avg_pool2d_forward.
void avg_pool2d_forward(const kernels::Pool2dDims& d, std::int64_t C, bool count_include_pad,
                        const float* x,  // (N, C, H, W)
                        float* y);       // (N, C, OH, OW)

/// dx from dy, as cpu::avg_pool2d_backward (overwrites dx).
void avg_pool2d_backward(const kernels::Pool2dDims& d, std::int64_t C, bool count_include_pad,
                         const float* dy,  // (N, C, OH, OW)
                         float* dx);       // (N, C, H, W)

}  // namespace epoch::cpu::onednn
