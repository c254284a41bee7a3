// 8-bit images in memory (height x width x channels, interleaved) and PNG reading/writing
// through libpng. (Resizing into a model's input is data/augment.h's transform_sample.)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "epoch/tensor/error.h"

namespace epoch::data {

struct Image {
  std::int64_t width = 0, height = 0, channels = 0;  // channels: 1 (gray) or 3 (RGB)
  std::vector<std::uint8_t> pixels;                  // (height, width, channels)
};

/// Decodes a PNG of any bit depth, palette or alpha into gray (1 channel) or RGB (3): gray and
/// gray+alpha files give 1 channel, everything else 3 (alpha composited on white). IoError naming
/// the file on a missing, truncated or corrupt file.
Image read_png(const std::string& path);
/// An 8-bit gray or RGB image as the bytes of a PNG file (IoError on failure).
std::vector<std::uint8_t> encode_png(const Image& image);
/// Writes an 8-bit gray or RGB PNG atomically (IoError on failure).
void write_png(const std::string& path, const Image& image);

}  // namespace epoch::data
