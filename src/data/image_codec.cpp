// Image decoding from memory: JPEG through libjpeg-turbo's TurboJPEG API (DCT-domain scaling,
// EXIF orientation parsed here, CMYK/YCCK converted to RGB) and PNG through libpng's simplified
// API; JPEG encoding and atomic JPEG writing. Every decoder input is untrusted (fuzzed: see
// tests/fuzz/).
#include "epoch/data/image_codec.h"

#include <png.h>
#include <turbojpeg.h>

#include <algorithm>
#include <cstring>

#include "epoch/tensor/file_io.h"

namespace epoch::data {
namespace {

constexpr std::int64_t kMaxDimension = 32768;

constexpr std::uint8_t kPngSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
constexpr std::uint8_t kJpegSignature[3] = {0xff, 0xd8, 0xff};

// Decoding flags. STOPONWARNING turns libjpeg's warnings ("Premature end of JPEG file",
// "Corrupt JPEG data") into errors, so a truncated file never comes back half grey; LIMITSCANS
// refuses progressive files of more than 500 scans, which can otherwise take minutes to decode.
// FASTDCT and FASTUPSAMPLE are left off. Measured on a detailed 500x375 photo encoded at
// quality 90 (60 KB, 4:2:0), tjDecompress2 to RGB, one core, median of 1000 (ms):
//                    8/8    4/8    2/8
//   default          0.93   0.76   0.70
//   FASTDCT          0.89   0.76   0.70
//   FASTUPSAMPLE     0.88   0.78   0.71
//   both             0.86   0.77   0.71
// The reduced-size IDCTs have no fast variant and decode chroma without upsampling, so the
// flags change nothing when downscaling (the input pipeline's usual case) and save 8% at full
// size, for an approximate IDCT and blockier chroma edges; PIL, which PyTorch pipelines use,
// decodes with the accurate defaults too. At reduced sizes the Huffman decoding dominates: the
// same photo at quality 75 (35 KB) takes 0.49 ms at 2/8, 0.38 ms at 1/8.
constexpr int kDecodeFlags = TJFLAG_STOPONWARNING | TJFLAG_LIMITSCANS;

/// libjpeg-turbo's message on one line, without the "tjFunction(): " prefix TurboJPEG adds.
std::string tj_message(tjhandle handle) {
  std::string text = tjGetErrorStr2(handle);
  const std::size_t prefix = text.find("(): ");
  if (prefix != std::string::npos && text.compare(0, 2, "tj") == 0) text.erase(0, prefix + 4);
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

/// A TurboJPEG handle destroyed with its owner. One per thread (thread_local below), so any
/// number of threads can decode and encode at once.
class TjHandle {
 public:
  explicit TjHandle(bool compress) : compress_(compress) {}
  ~TjHandle() { reset(); }
  TjHandle(const TjHandle&) = delete;
  TjHandle& operator=(const TjHandle&) = delete;

  /// The handle, created on first use.
  tjhandle get() {
    if (handle_ == nullptr) handle_ = compress_ ? tjInitCompress() : tjInitDecompress();
    if (handle_ == nullptr)
      EPOCH_THROW(BackendError, compress_ ? "tjInitCompress" : "tjInitDecompress",
                  " failed: ", tjGetErrorStr2(nullptr));
    return handle_;
  }
  /// Drops the handle after a failure: libjpeg-turbo 2.1.5's tjDecompressHeader3 returns from
  /// an error without aborting the decompressor, whose next call then resumes mid-header
  /// ("Unsupported JPEG process: SOF type 0xce" on a good file).
  void reset() {
    if (handle_ != nullptr) tjDestroy(handle_);
    handle_ = nullptr;
  }

 private:
  bool compress_;
  tjhandle handle_ = nullptr;
};

TjHandle& decompressor() {
  thread_local TjHandle handle(false);
  return handle;
}

/// Separate compressors for baseline and progressive output: with libjpeg-turbo 2.1.5, a
/// handle that has written a progressive JPEG writes corrupt baseline ones afterwards (its
/// optimized Huffman tables stay behind; the tests catch this).
TjHandle& compressor(bool progressive) {
  thread_local TjHandle baseline(true);
  thread_local TjHandle progressive_handle(true);
  return progressive ? progressive_handle : baseline;
}

// ---------------------------------------------------------------- JPEG markers and EXIF

std::uint32_t load16(const std::uint8_t* p, bool big_endian) {
  return big_endian ? (std::uint32_t{p[0]} << 8) | p[1] : (std::uint32_t{p[1]} << 8) | p[0];
}

std::uint32_t load32(const std::uint8_t* p, bool big_endian) {
  return big_endian ? (load16(p, true) << 16) | load16(p + 2, true)
                    : (load16(p + 2, false) << 16) | load16(p, false);
}

/// The Orientation tag (0x0112) of IFD0 in an EXIF TIFF block (the APP1 payload after
/// "Exif\0\0"); 1 when absent or when anything about the block is malformed.
int exif_orientation(std::span<const std::uint8_t> tiff) {
  if (tiff.size() < 8) return 1;
  bool big_endian = false;
  if (tiff[0] == 'I' && tiff[1] == 'I') {
    big_endian = false;
  } else if (tiff[0] == 'M' && tiff[1] == 'M') {
    big_endian = true;
  } else {
    return 1;
  }
  const std::uint8_t* base = tiff.data();
  if (load16(base + 2, big_endian) != 42) return 1;
  const std::size_t ifd = load32(base + 4, big_endian);
  if (ifd < 8 || ifd > tiff.size() - 2) return 1;
  const std::size_t count = load16(base + ifd, big_endian);
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t entry = ifd + 2 + 12 * i;  // < 2^32 + 2^20: no overflow
    if (entry + 12 > tiff.size()) return 1;
    if (load16(base + entry, big_endian) != 0x0112) continue;
    const std::uint32_t type = load16(base + entry + 2, big_endian);
    const std::uint32_t n = load32(base + entry + 4, big_endian);
    if (type != 3 || n < 1) return 1;  // SHORT, the value in the entry's first two bytes
    const std::uint32_t value = load16(base + entry + 8, big_endian);
    return value >= 1 && value <= 8 ? static_cast<int>(value) : 1;
  }
  return 1;
}

struct JpegMarkers {
  int orientation = 1;  // EXIF orientation, 1-8
  bool adobe = false;   // an Adobe APP14 segment (libjpeg's saw_Adobe_marker)
};

/// Walks the marker segments before the first scan. Stops quietly at anything malformed:
/// libjpeg-turbo judges the file, this only looks for EXIF and Adobe segments.
JpegMarkers scan_jpeg_markers(std::span<const std::uint8_t> bytes) {
  JpegMarkers markers;
  bool seen_exif = false;
  std::size_t pos = 2;  // after SOI
  while (pos + 4 <= bytes.size() && bytes[pos] == 0xff) {
    const std::uint8_t code = bytes[pos + 1];
    if (code == 0xff) {  // fill byte
      pos += 1;
      continue;
    }
    if (code == 0x01 || code == 0xd8 || (code >= 0xd0 && code <= 0xd7)) {  // no length
      pos += 2;
      continue;
    }
    if (code == 0xda || code == 0xd9) break;  // start of scan, end of image
    const std::size_t length = load16(&bytes[pos + 2], true);
    if (length < 2 || length > bytes.size() - pos - 2) break;
    const std::span<const std::uint8_t> payload = bytes.subspan(pos + 4, length - 2);
    if (code == 0xe1 && !seen_exif && payload.size() >= 6 &&
        std::memcmp(payload.data(), "Exif\0\0", 6) == 0) {
      seen_exif = true;
      markers.orientation = exif_orientation(payload.subspan(6));
    } else if (code == 0xee && payload.size() >= 12 &&
               std::memcmp(payload.data(), "Adobe", 5) == 0) {
      markers.adobe = true;
    }
    pos += 2 + length;
  }
  return markers;
}

// ---------------------------------------------------------------- JPEG decoding

/// The downscaling factors used, smallest first: libjpeg-turbo's 1/8, 1/4, 1/2 and 1/1. Its
/// other factors (3/8, 5/8, 3/4, 7/8) use IDCTs without SIMD and decode slower than the next
/// power of two up (500x375 photo, quality 90: 5/8 1.05 ms, 6/8 1.17, 7/8 1.41, 8/8 0.94; 3/8
/// 0.79, 4/8 0.76 ms), so they are skipped.
const std::vector<tjscalingfactor>& downscaling_factors() {
  static const std::vector<tjscalingfactor> factors = [] {
    int n = 0;
    const tjscalingfactor* all = tjGetScalingFactors(&n);
    std::vector<tjscalingfactor> out;
    for (int i = 0; all != nullptr && i < n; ++i) {
      const tjscalingfactor f = all[i];
      if (f.num < 1 || f.num > f.denom || f.denom % f.num != 0) continue;
      const int ratio = f.denom / f.num;
      if ((ratio & (ratio - 1)) == 0 && ratio <= 8) out.push_back({1, ratio});
    }
    std::sort(out.begin(), out.end(),
              [](tjscalingfactor a, tjscalingfactor b) { return a.denom > b.denom; });
    out.erase(std::unique(out.begin(), out.end(),
                          [](tjscalingfactor a, tjscalingfactor b) { return a.denom == b.denom; }),
              out.end());
    return out;
  }();
  return factors;
}

/// The smallest factor whose scaled size is at least need_w x need_h (in the JPEG's own
/// orientation); 1/1 when nothing is asked for or nothing smaller is enough.
tjscalingfactor choose_scale(int width, int height, std::int64_t need_w, std::int64_t need_h) {
  const tjscalingfactor full{1, 1};
  if (need_w <= 0 && need_h <= 0) return full;
  for (const tjscalingfactor& f : downscaling_factors())
    if (TJSCALED(width, f) >= need_w && TJSCALED(height, f) >= need_h) return f;
  return full;
}

/// CMYK to RGB by the naive formula (no colour management). Photoshop writes "inverted" CMYK
/// (0 = full ink) and marks the file with an Adobe APP14 segment; libjpeg-turbo marks the CMYK
/// and YCCK files it writes the same way. So: with the Adobe segment R = C*K/255, without it
/// R = (255-C)*(255-K)/255 (likewise G from M, B from Y).
void cmyk_to_rgb(const std::uint8_t* cmyk,  // (N, 4)
                 std::uint8_t* rgb,         // (N, 3)
                 std::size_t n, bool inverted) {
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint8_t* s = cmyk + 4 * i;
    const unsigned k = inverted ? s[3] : 255u - s[3];
    for (int c = 0; c < 3; ++c) {
      const unsigned v = inverted ? s[c] : 255u - s[c];
      rgb[3 * i + c] = static_cast<std::uint8_t>((v * k + 127) / 255);
    }
  }
}

/// Rewrites `image` as EXIF orientation 2-8 says it is displayed (5-8 swap width and height).
template <int C>
void orient_pixels(Image& image, int orientation) {
  const std::int64_t w = image.width, h = image.height;
  const bool swap = orientation >= 5;
  const std::int64_t ow = swap ? h : w, oh = swap ? w : h;
  // Source pixel (in pixels) of output (x, y): start + y * row_step + x * step.
  struct Walk {
    std::int64_t start, row_step, step;
  };
  Walk walk{};
  switch (orientation) {
    case 2:  // mirror
      walk = {w - 1, w, -1};
      break;
    case 3:  // rotate 180
      walk = {w * h - 1, -w, -1};
      break;
    case 4:  // flip
      walk = {(h - 1) * w, -w, 1};
      break;
    case 5:  // transpose
      walk = {0, 1, w};
      break;
    case 6:  // rotate 90 clockwise
      walk = {(h - 1) * w, 1, -w};
      break;
    case 7:  // transverse
      walk = {w * h - 1, -1, -w};
      break;
    case 8:  // rotate 90 counter-clockwise
      walk = {w - 1, -1, w};
      break;
    default:
      return;
  }
  std::vector<std::uint8_t> out(image.pixels.size());
  const std::uint8_t* src = image.pixels.data();  // (h, w, C)
  std::uint8_t* dst = out.data();                 // (oh, ow, C)
  for (std::int64_t y = 0; y < oh; ++y) {
    std::int64_t s = walk.start + y * walk.row_step;
    for (std::int64_t x = 0; x < ow; ++x, s += walk.step)
      for (int c = 0; c < C; ++c) *dst++ = src[s * C + c];
  }
  image.pixels = std::move(out);
  image.width = ow;
  image.height = oh;
}

void check_pixel_limit(const std::string& name, const char* format, std::int64_t w, std::int64_t h,
                       const DecodeOptions& options) {
  if (w > kMaxDimension || h > kMaxDimension)
    EPOCH_THROW(IoError, name, ": ", format, " of ", w, "x", h, " pixels is above the limit of ",
                kMaxDimension, " in either dimension");
  if (options.max_pixels > 0 && w * h > options.max_pixels)
    EPOCH_THROW(IoError, name, ": ", format, " of ", w, "x", h, " pixels is above the limit of ",
                options.max_pixels, " pixels");
}

Image decode_jpeg(std::span<const std::uint8_t> bytes, const std::string& name,
                  const DecodeOptions& options) {
  TjHandle& handle = decompressor();
  tjhandle tj = handle.get();
  // The message, then a fresh handle for the next call (see TjHandle::reset).
  const auto failure = [&] {
    const std::string message = tj_message(tj);
    handle.reset();
    return message;
  };
  const auto size = static_cast<unsigned long>(bytes.size());
  int width = 0, height = 0, subsampling = -1, colorspace = -1;
  if (tjDecompressHeader3(tj, bytes.data(), size, &width, &height, &subsampling, &colorspace) != 0)
    EPOCH_THROW(IoError, name, ": corrupt or unsupported JPEG (", failure(), ")");
  if (width < 1 || height < 1)
    EPOCH_THROW(IoError, name, ": JPEG without an image (", width, "x", height, ")");
  check_pixel_limit(name, "JPEG", width, height, options);

  const JpegMarkers markers = scan_jpeg_markers(bytes);
  const int orientation = options.apply_exif_orientation ? markers.orientation : 1;
  const bool swap = orientation >= 5;
  const tjscalingfactor scale =
      choose_scale(width, height, swap ? options.min_height : options.min_width,
                   swap ? options.min_width : options.min_height);
  Image image;
  image.width = TJSCALED(width, scale);
  image.height = TJSCALED(height, scale);
  const bool cmyk = colorspace == TJCS_CMYK || colorspace == TJCS_YCCK;
  image.channels = colorspace == TJCS_GRAY ? 1 : 3;
  const auto npixels = static_cast<std::size_t>(image.width * image.height);
  const int w = static_cast<int>(image.width), h = static_cast<int>(image.height);
  if (cmyk) {
    std::vector<std::uint8_t> buffer(npixels * 4);  // (h, w, 4)
    if (tjDecompress2(tj, bytes.data(), size, buffer.data(), w, 0, h, TJPF_CMYK, kDecodeFlags) != 0)
      EPOCH_THROW(IoError, name, ": corrupt or truncated JPEG (", failure(), ")");
    image.pixels.resize(npixels * 3);
    cmyk_to_rgb(buffer.data(), image.pixels.data(), npixels, markers.adobe);
  } else {
    image.pixels.resize(npixels * static_cast<std::size_t>(image.channels));
    const int format = image.channels == 1 ? TJPF_GRAY : TJPF_RGB;
    if (tjDecompress2(tj, bytes.data(), size, image.pixels.data(), w, 0, h, format, kDecodeFlags) !=
        0)
      EPOCH_THROW(IoError, name, ": corrupt or truncated JPEG (", failure(), ")");
  }
  if (image.channels == 1) {
    orient_pixels<1>(image, orientation);
  } else {
    orient_pixels<3>(image, orientation);
  }
  return image;
}

// ---------------------------------------------------------------- PNG decoding

/// Frees libpng's state on every path out (png_image_free is a no-op once freed).
struct PngGuard {
  png_image* png;
  ~PngGuard() { png_image_free(png); }
};

/// Whether the chunk list reaches an IEND chunk. libpng's simplified reader stops once it has
/// the pixels, so a file cut inside or before IEND would otherwise pass as whole.
bool png_reaches_iend(std::span<const std::uint8_t> bytes) {
  std::size_t pos = 8;  // after the signature
  while (pos + 12 <= bytes.size()) {
    const std::size_t length = load32(&bytes[pos], true);
    if (std::memcmp(&bytes[pos + 4], "IEND", 4) == 0) return true;
    if (length > bytes.size() - pos - 12) return false;
    pos += 12 + length;
  }
  return false;
}

/// The bytes of compressed image data (the IDAT chunks' lengths summed).
std::uint64_t png_idat_bytes(std::span<const std::uint8_t> bytes) {
  std::uint64_t total = 0;
  std::size_t pos = 8;  // after the signature
  while (pos + 12 <= bytes.size()) {
    const std::size_t length = load32(&bytes[pos], true);
    if (std::memcmp(&bytes[pos + 4], "IDAT", 4) == 0) total += length;
    if (length > bytes.size() - pos - 12) break;
    pos += 12 + length;
  }
  return total;
}

/// zlib's deflate compresses at most about 1032:1 (runs of one byte); a file whose image data
/// could not hold the pixels its header claims is refused before the pixels are allocated.
constexpr std::uint64_t kMaxDeflateRatio = 1100;

Image decode_png(std::span<const std::uint8_t> bytes, const std::string& name,
                 const DecodeOptions& options) {
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  PngGuard guard{&png};
  if (png_image_begin_read_from_memory(&png, bytes.data(), bytes.size()) == 0)
    EPOCH_THROW(IoError, name, ": corrupt or truncated PNG (", png.message, ")");
  const bool gray = (png.format & PNG_FORMAT_FLAG_COLOR) == 0;
  png.format = gray ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
  Image image;
  image.width = png.width;
  image.height = png.height;
  image.channels = gray ? 1 : 3;
  if (image.width < 1 || image.height < 1)
    EPOCH_THROW(IoError, name, ": PNG without an image (", image.width, "x", image.height, ")");
  check_pixel_limit(name, "PNG", image.width, image.height, options);
  // The smallest filtered size of the pixels as stored: at least one bit per pixel and row.
  const auto min_raw_bytes = static_cast<std::uint64_t>(image.height) *
                             ((static_cast<std::uint64_t>(image.width) + 7) / 8);
  if (const std::uint64_t idat = png_idat_bytes(bytes); min_raw_bytes > idat * kMaxDeflateRatio)
    EPOCH_THROW(IoError, name, ": truncated or corrupt PNG (", idat,
                " bytes of image data cannot hold the ", image.width, "x", image.height,
                " pixels its header claims)");
  image.pixels.resize(PNG_IMAGE_SIZE(png));
  // Alpha is composited on white; row stride 0 means packed rows.
  png_color background{255, 255, 255};
  if (png_image_finish_read(&png, &background, image.pixels.data(), 0, nullptr) == 0)
    EPOCH_THROW(IoError, name, ": corrupt or truncated PNG (", png.message, ")");
  if (!png_reaches_iend(bytes))
    EPOCH_THROW(IoError, name, ": truncated PNG (no IEND chunk at the end)");
  return image;
}

/// True when `bytes` is a proper prefix of `signature` (a file cut off inside it).
template <std::size_t N>
bool prefix_of(std::span<const std::uint8_t> bytes, const std::uint8_t (&signature)[N]) {
  return bytes.size() < N && std::equal(bytes.begin(), bytes.end(), signature);
}

}  // namespace

ImageFormat sniff_image_format(std::span<const std::uint8_t> bytes) {
  if (bytes.size() >= 3 && std::equal(kJpegSignature, kJpegSignature + 3, bytes.begin()))
    return ImageFormat::jpeg;
  if (bytes.size() >= 8 && std::equal(kPngSignature, kPngSignature + 8, bytes.begin()))
    return ImageFormat::png;
  return ImageFormat::unknown;
}

Image decode_image(std::span<const std::uint8_t> bytes, const std::string& name,
                   const DecodeOptions& options) {
  if (bytes.empty()) EPOCH_THROW(IoError, name, ": empty file");
  switch (sniff_image_format(bytes)) {
    case ImageFormat::jpeg:
      return decode_jpeg(bytes, name, options);
    case ImageFormat::png:
      return decode_png(bytes, name, options);
    case ImageFormat::unknown:
      break;
  }
  if (prefix_of(bytes, kJpegSignature) || prefix_of(bytes, kPngSignature))
    EPOCH_THROW(IoError, name, ": truncated image file (", bytes.size(), " bytes)");
  EPOCH_THROW(IoError, name, ": not a JPEG or PNG image");
}

std::vector<std::uint8_t> read_file_bytes(const std::string& path) {
  return read_regular_file(path, kMaxImageFileBytes);
}

Image read_image(const std::string& path, const DecodeOptions& options) {
  return decode_image(read_file_bytes(path), path, options);
}

std::vector<std::uint8_t> encode_jpeg(const Image& image, int quality, bool progressive) {
  EPOCH_CHECK(image.channels == 1 || image.channels == 3,
              "encode_jpeg: channels must be 1 or 3, got ", image.channels);
  EPOCH_CHECK(
      image.width >= 1 && image.height >= 1 && image.width <= 65500 && image.height <= 65500,
      "encode_jpeg: size ", image.width, "x", image.height,
      " outside JPEG's 1..65500 per dimension");
  EPOCH_CHECK(
      static_cast<std::int64_t>(image.pixels.size()) == image.width * image.height * image.channels,
      "encode_jpeg: ", image.pixels.size(), " pixel bytes for a ", image.width, "x", image.height,
      "x", image.channels, " image");
  EPOCH_CHECK(quality >= 1 && quality <= 100, "encode_jpeg: quality ", quality, " outside 1..100");
  TjHandle& handle = compressor(progressive);
  tjhandle tj = handle.get();
  unsigned char* out = nullptr;
  unsigned long out_size = 0;
  const bool gray = image.channels == 1;
  if (tjCompress2(tj, image.pixels.data(), static_cast<int>(image.width), 0,
                  static_cast<int>(image.height), gray ? TJPF_GRAY : TJPF_RGB, &out, &out_size,
                  gray ? TJSAMP_GRAY : TJSAMP_420, quality,
                  progressive ? TJFLAG_PROGRESSIVE : 0) != 0) {
    const std::string message = tj_message(tj);
    tjFree(out);
    handle.reset();
    EPOCH_THROW(IoError, "encode_jpeg: compression failed (", message, ")");
  }
  std::vector<std::uint8_t> bytes(out, out + out_size);
  tjFree(out);
  return bytes;
}

void write_jpeg(const std::string& path, const Image& image, int quality, bool progressive) {
  const std::vector<std::uint8_t> bytes = encode_jpeg(image, quality, progressive);
  // Atomic replacement without fsync: a reader never sees a half-written image, and datasets
  // of many small files stay fast to write (checkpoints, which must survive a crash, fsync).
  write_file_atomic(path, bytes, /*durable=*/false);
}

}  // namespace epoch::data
