// PNG reading (through image_codec's decoder) and writing with libpng's simplified API, and
// channel/size conversion.
#include "epoch/data/image.h"

#include "epoch/data/image_codec.h"

#include <png.h>

#include <algorithm>
#include <cmath>

namespace epoch::data {

Image read_png(const std::string& path) {
  // The one PNG decoder is decode_image's; this only insists on the format.
  const std::vector<std::uint8_t> bytes = read_file_bytes(path);
  if (!bytes.empty() && sniff_image_format(bytes) != ImageFormat::png)
    EPOCH_THROW(IoError, path, ": not a PNG image");
  return decode_image(bytes, path);
}

void write_png(const std::string& path, const Image& image) {
  EPOCH_CHECK(image.channels == 1 || image.channels == 3, "write_png: channels must be 1 or 3");
  EPOCH_CHECK(static_cast<std::int64_t>(image.pixels.size()) ==
                  image.width * image.height * image.channels,
              "write_png: pixel buffer size does not match the image size");
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  png.width = static_cast<png_uint_32>(image.width);
  png.height = static_cast<png_uint_32>(image.height);
  png.format = image.channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
  if (png_image_write_to_file(&png, path.c_str(), 0, image.pixels.data(), 0, nullptr) == 0)
    EPOCH_THROW(IoError, path, ": cannot write PNG (", png.message, ")");
}

Tensor image_to_chw(const Image& image, std::int64_t channels, std::int64_t height,
                    std::int64_t width) {
  EPOCH_CHECK(channels == 1 || channels == 3, "image_to_chw: channels must be 1 or 3");
  EPOCH_CHECK(height > 0 && width > 0, "image_to_chw: bad target size");
  EPOCH_CHECK(image.width > 0 && image.height > 0, "image_to_chw: empty image");
  // Channel conversion first, at the source size.
  const std::int64_t src_pixels = image.width * image.height;
  std::vector<float> planes(static_cast<std::size_t>(channels * src_pixels));
  for (std::int64_t i = 0; i < src_pixels; ++i) {
    const std::uint8_t* px = image.pixels.data() + i * image.channels;
    if (channels == image.channels) {
      for (std::int64_t ch = 0; ch < channels; ++ch) planes[static_cast<std::size_t>(ch * src_pixels + i)] = px[ch];
    } else if (channels == 1) {
      planes[static_cast<std::size_t>(i)] = 0.299f * px[0] + 0.587f * px[1] + 0.114f * px[2];
    } else {
      for (std::int64_t ch = 0; ch < 3; ++ch) planes[static_cast<std::size_t>(ch * src_pixels + i)] = px[0];
    }
  }
  // Bilinear resize with half-pixel centres (identity when the sizes match).
  Tensor out = Tensor::empty({channels, height, width}, DType::u8);
  std::uint8_t* dst = out.data<std::uint8_t>();
  const double sy = static_cast<double>(image.height) / static_cast<double>(height);
  const double sx = static_cast<double>(image.width) / static_cast<double>(width);
  for (std::int64_t ch = 0; ch < channels; ++ch) {
    const float* src = planes.data() + ch * src_pixels;
    for (std::int64_t y = 0; y < height; ++y) {
      const double fy = std::clamp((static_cast<double>(y) + 0.5) * sy - 0.5, 0.0,
                                   static_cast<double>(image.height - 1));
      const auto y0 = static_cast<std::int64_t>(fy);
      const std::int64_t y1 = std::min(y0 + 1, image.height - 1);
      const double wy = fy - static_cast<double>(y0);
      for (std::int64_t x = 0; x < width; ++x) {
        const double fx = std::clamp((static_cast<double>(x) + 0.5) * sx - 0.5, 0.0,
                                     static_cast<double>(image.width - 1));
        const auto x0 = static_cast<std::int64_t>(fx);
        const std::int64_t x1 = std::min(x0 + 1, image.width - 1);
        const double wx = fx - static_cast<double>(x0);
        const double v = (1 - wy) * ((1 - wx) * src[y0 * image.width + x0] + wx * src[y0 * image.width + x1]) +
                         wy * ((1 - wx) * src[y1 * image.width + x0] + wx * src[y1 * image.width + x1]);
        dst[(ch * height + y) * width + x] = static_cast<std::uint8_t>(std::clamp(std::lround(v), 0L, 255L));
      }
    }
  }
  return out;
}

}  // namespace epoch::data
