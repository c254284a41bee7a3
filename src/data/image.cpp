// PNG reading (through image_codec's decoder) and writing with libpng's simplified API.
#include "epoch/data/image.h"

#include <png.h>

#include "epoch/data/image_codec.h"
#include "epoch/tensor/file_io.h"

namespace epoch::data {

Image read_png(const std::string& path) {
  // The one PNG decoder is decode_image's; this only insists on the format.
  const std::vector<std::uint8_t> bytes = read_file_bytes(path);
  if (!bytes.empty() && sniff_image_format(bytes) != ImageFormat::png)
    EPOCH_THROW(IoError, path, ": not a PNG image");
  return decode_image(bytes, path);
}

std::vector<std::uint8_t> encode_png(const Image& image) {
  EPOCH_CHECK(image.channels == 1 || image.channels == 3, "encode_png: channels must be 1 or 3");
  EPOCH_CHECK(
      static_cast<std::int64_t>(image.pixels.size()) == image.width * image.height * image.channels,
      "encode_png: pixel buffer size does not match the image size");
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  png.width = static_cast<png_uint_32>(image.width);
  png.height = static_cast<png_uint_32>(image.height);
  png.format = image.channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
  png_alloc_size_t size = 0;  // first the size, then the bytes
  if (png_image_write_to_memory(&png, nullptr, &size, 0, image.pixels.data(), 0, nullptr) == 0)
    EPOCH_THROW(IoError, "cannot encode PNG (", png.message, ")");
  std::vector<std::uint8_t> bytes(size);
  if (png_image_write_to_memory(&png, bytes.data(), &size, 0, image.pixels.data(), 0, nullptr) == 0)
    EPOCH_THROW(IoError, "cannot encode PNG (", png.message, ")");
  bytes.resize(size);
  return bytes;
}

void write_png(const std::string& path, const Image& image) {
  // Atomic replacement without fsync, as write_jpeg: a reader never sees half an image.
  write_file_atomic(path, encode_png(image), /*durable=*/false);
}

}  // namespace epoch::data
