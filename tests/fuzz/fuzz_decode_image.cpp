// libFuzzer target: decode_image (JPEG and PNG) on arbitrary bytes, at full size with EXIF
// orientation and again downscaled without it. Only epoch::Error may come out; any other
// exception, a crash, or an image breaking decode_image's contract is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "epoch/data/image_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> bytes(data, size);
  epoch::data::DecodeOptions options;
  options.max_pixels = std::int64_t{1} << 20;  // bounded memory and time per input
  for (int pass = 0; pass < 2; ++pass) {
    if (pass == 1) {
      options.min_width = 17;
      options.min_height = 9;
      options.apply_exif_orientation = false;
    }
    try {
      const epoch::data::Image img = epoch::data::decode_image(bytes, "fuzz", options);
      const bool valid =
          (img.channels == 1 || img.channels == 3) && img.width >= 1 && img.height >= 1 &&
          img.pixels.size() == static_cast<std::size_t>(img.width * img.height * img.channels);
      if (!valid) std::abort();
    } catch (const epoch::Error&) {
      // A clear error is the expected outcome for most inputs.
    }
  }
  return 0;
}
