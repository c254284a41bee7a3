// oneDNN reorders between row-major and channel-blocked (nChw8c / nChw16c) activations.
// Compiled only when EPOCH_WITH_ONEDNN; guard includes with #if EPOCH_WITH_ONEDNN.
#pragma once

#include <array>
#include <cstdint>

namespace epoch::cpu::onednn {

/// Copies an (N, C, H, W) f32 tensor from channel block src_block to dst_block (0: row-major).
void reorder_channel_block(const std::array<std::int64_t, 4>& dims, const float* src,
                           std::int64_t src_block, float* dst, std::int64_t dst_block);

}  // namespace epoch::cpu::onednn
