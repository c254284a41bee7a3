// The fast path's reorder of an activation between channel blocks, for ops that convert their
// inputs or outputs inside their own dispatch (ops::to_channel_block is the op itself).
// Compiled only when EPOCH_WITH_ONEDNN; guard includes with #if EPOCH_WITH_ONEDNN.
#pragma once

#include <cstdint>

#include "epoch/tensor/tensor.h"

namespace epoch::ops {

/// t (N, C, H, W, on the CPU) with channel block `block` (0: row-major): t itself when it has
/// it (contiguous for 0), else a copy reordered by oneDNN.
Tensor relayout(const Tensor& t, std::int64_t block);

}  // namespace epoch::ops
