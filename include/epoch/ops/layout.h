// Moving activations between the row-major layout and the channel-blocked one that the CPU fast
// path keeps between layers that take it (Tensor::channel_block; nn::forward_in_order).
#pragma once

#include <cstdint>

#include "epoch/tensor/tensor.h"

namespace epoch::ops {

/// t with channel block `block` (0: row-major, as contiguous(); 8 or 16: (N, C/b, H, W, b)):
/// t itself when it already is, else a reordered copy (oneDNN's reorder on the fast path).
/// Not differentiable: models use epoch::to_row_major (autograd/functions.h).
Tensor to_channel_block(const Tensor& t, std::int64_t block);

}  // namespace epoch::ops
