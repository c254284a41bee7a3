// Decoding JPEG (libjpeg-turbo's TurboJPEG) and PNG (libpng) files or in-memory bytes into
// 8-bit gray or RGB images, with DCT-domain downscaling when a much smaller image is wanted and
// EXIF orientation applied; encoding JPEG for generated datasets.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "epoch/data/image.h"

namespace epoch::data {

enum class ImageFormat { unknown, jpeg, png };

/// The format the first bytes announce (JPEG: FF D8 FF; PNG: the 8-byte signature).
ImageFormat sniff_image_format(std::span<const std::uint8_t> bytes);

/// The default pixel limit of decoding: 2^27 (134 megapixels, e.g. 13400x10000; a 100 MP
/// camera's 11648x8736 fits), 402 MB as RGB. Decompression bombs claim billions.
inline constexpr std::int64_t kDefaultMaxImagePixels = std::int64_t{1} << 27;

struct DecodeOptions {
  /// DCT-domain downscaling: a JPEG is decoded at the smallest of the scaling factors 1/8,
  /// 1/4, 1/2, 1 whose result is still at least min_width x min_height (after EXIF
  /// orientation). 0 x 0: full size. PNG is always decoded at full size. (libjpeg-turbo's
  /// 3/8 ... 7/8 are not used: each decodes slower than the power of two above it.)
  std::int64_t min_width = 0;
  std::int64_t min_height = 0;
  /// Rotate/flip a JPEG as its EXIF Orientation tag (1-8) says, as viewers display it.
  bool apply_exif_orientation = true;
  /// Refuse (IoError) an image of more than this many pixels at full size, read from its
  /// header before anything is allocated for it: a guard against decompression bombs.
  /// 0: no limit beyond 32768 in either dimension.
  std::int64_t max_pixels = kDefaultMaxImagePixels;

  /// Same request, field by field (the decoded-image cache's key).
  bool operator==(const DecodeOptions&) const = default;
};

/// Decodes JPEG (baseline or progressive; gray -> 1 channel; YCbCr, RGB, CMYK and YCCK -> 3
/// channels) or PNG (gray/gray+alpha -> 1 channel, others -> 3, alpha composited on white).
/// ensures: channels 1 or 3, width and height >= 1, pixels.size() == width*height*channels.
/// Throws IoError "<name>: <problem>" for empty input, an unknown format ("not a JPEG or PNG
/// image"), a corrupt or truncated file, or a size above 32768 in either dimension. Never
/// crashes on any input (fuzzed); a truncated JPEG that libjpeg-turbo can only partly decode
/// is an error, not a half-grey image.
Image decode_image(std::span<const std::uint8_t> bytes, const std::string& name,
                   const DecodeOptions& options = {});

/// The whole of an image file: a regular file of at most kMaxImageFileBytes (IoError naming it
/// when missing, unreadable, a directory, a FIFO or device, which are refused without blocking,
/// or larger than that).
std::vector<std::uint8_t> read_file_bytes(const std::string& path);

/// read_file_bytes + decode_image, errors naming `path`.
Image read_image(const std::string& path, const DecodeOptions& options = {});

/// Encodes a gray or RGB image as JPEG (quality 1-100, 4:2:0 chroma for RGB; progressive on
/// request). InvalidArgument for a bad image or quality.
std::vector<std::uint8_t> encode_jpeg(const Image& image, int quality = 90,
                                      bool progressive = false);

/// encode_jpeg written atomically to `path` (IoError on failure).
void write_jpeg(const std::string& path, const Image& image, int quality = 90,
                bool progressive = false);

}  // namespace epoch::data
