// 8-bit images in memory (height x width x channels, interleaved) and PNG reading/writing
// through libpng, plus the conversion of any image to a model's input size and channels.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "epoch/tensor/tensor.h"

namespace epoch::data {

struct Image {
  std::int64_t width = 0, height = 0, channels = 0;  // channels: 1 (gray) or 3 (RGB)
  std::vector<std::uint8_t> pixels;                   // (height, width, channels)
};

/// Decodes a PNG of any bit depth, palette or alpha into gray (1 channel) or RGB (3): gray and
/// gray+alpha files give 1 channel, everything else 3 (alpha dropped). IoError naming the file
/// on a missing, truncated or corrupt file.
Image read_png(const std::string& path);
/// Writes an 8-bit gray or RGB PNG (IoError on failure).
void write_png(const std::string& path, const Image& image);

/// Converts channels (gray <-> RGB by luma / replication) and resizes with bilinear
/// interpolation to (channels, height, width), returning (C, H, W) u8.
Tensor image_to_chw(const Image& image, std::int64_t channels, std::int64_t height,
                    std::int64_t width);

}  // namespace epoch::data
