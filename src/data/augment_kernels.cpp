// The pixel work of per-sample augmentation: the bilinear warp of u8 pixels into f32 through an
// affine map (exact integer-offset paths for copies, crops and flips; an AVX2 gather loop where
// available), brightness and contrast, and transform_sample, which runs a sample's draws
// through them. Semantics: Keras ImageDataGenerator, torchvision crops, TF colour.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "data/augment_kernels.h"
#include "epoch/data/augment.h"
#include "epoch/tensor/error.h"
// Compiled once per instruction-set level (kernels/isa_target.h): include it last.
#include "kernels/isa_target.h"
#if EPOCH_ISA_HAS_AVX2
#include <immintrin.h>
#endif

namespace epoch::data::detail::EPOCH_ISA_NS {
namespace {

constexpr float kLumaR = 0.299f, kLumaG = 0.587f, kLumaB = 0.114f;

bool is_identity(const Affine2D& m) {
  return m.a == 1 && m.b == 0 && m.c == 0 && m.d == 0 && m.e == 1 && m.f == 0;
}

/// Every output pixel centre lands on a source pixel centre: x -> +-x + c, y -> +-y + f with
/// integer c, f (copies, crops, padding crops, flips).
bool is_integer_map(const Affine2D& m) {
  const auto integral = [](double v) { return std::abs(v) < 1e9 && v == std::floor(v); };
  return (m.a == 1 || m.a == -1) && (m.e == 1 || m.e == -1) && m.b == 0 && m.d == 0 &&
         integral(m.c) && integral(m.f);
}

/// The offset of the last byte an image view can address (strides are non-negative).
std::int64_t last_byte(const ImageView& v) {
  return (v.height - 1) * v.stride_y + (v.width - 1) * v.stride_x + (v.channels - 1) * v.stride_c;
}

void check_warp_args(const ImageView& src, const Affine2D& map, std::int64_t channels,
                     std::int64_t height, std::int64_t width) {
  EPOCH_CHECK(src.data != nullptr && src.width > 0 && src.height > 0,
              "warp_affine_bilinear: empty source image (", src.width, "x", src.height, ")");
  EPOCH_CHECK(src.channels == 1 || src.channels == 3, "warp_affine_bilinear: source has ",
              src.channels, " channels (1 or 3 expected)");
  EPOCH_CHECK(channels == 1 || channels == 3, "warp_affine_bilinear: output channels ", channels,
              " (1 or 3 expected)");
  EPOCH_CHECK(height > 0 && width > 0, "warp_affine_bilinear: output size ", width, "x", height,
              " must be positive");
  EPOCH_CHECK(src.stride_x >= 0 && src.stride_y >= 0 && src.stride_c >= 0,
              "warp_affine_bilinear: negative source strides");
  EPOCH_CHECK(last_byte(src) < std::numeric_limits<std::int32_t>::max(),
              "warp_affine_bilinear: source of ", src.width, "x", src.height,
              " is too large (2^31 bytes at most)");
  EPOCH_CHECK(std::isfinite(map.a) && std::isfinite(map.b) && std::isfinite(map.c) &&
                  std::isfinite(map.d) && std::isfinite(map.e) && std::isfinite(map.f),
              "warp_affine_bilinear: the map is not finite");
}

/// The u8 buffer transform_sample gathers whole pixels into, reused by every call on a thread
/// (the loader's workers are long-lived).
std::vector<std::uint8_t>& scratch_pixels() {
  thread_local std::vector<std::uint8_t> pixels;
  return pixels;
}

/// out[i] = row[(first + step * i) * stride] for i < n, step +-1: loops the compiler can
/// vectorize for the common layouts (contiguous, reversed, interleaved RGB).
template <typename T>
void copy_span(const std::uint8_t* row, std::int64_t stride, std::int64_t first, std::int64_t step,
               std::int64_t n, T* out) {  // out (n)
  if (stride == 1 && step == 1) {
    const std::uint8_t* s = row + first;
    for (std::int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(s[i]);
  } else if (stride == 1) {
    const std::uint8_t* s = row + first;
    for (std::int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(s[-i]);
  } else if (stride == 3 && step == 1) {
    const std::uint8_t* s = row + 3 * first;
    for (std::int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(s[3 * i]);
  } else if (stride == 3) {
    const std::uint8_t* s = row + 3 * first;
    for (std::int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(s[-3 * i]);
  } else {
    for (std::int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(row[(first + step * i) * stride]);
  }
}

/// The integer-map warp: each output pixel is one source pixel (or the fill), converted to T.
/// Channels equal, or gray -> RGB by replication.
template <typename T>
void warp_integer(const ImageView& src, const Affine2D& map, bool fill_constant,
                  std::int64_t channels, std::int64_t height, std::int64_t width,
                  T* dst) {  // (C, H, W)
  const auto ax = static_cast<std::int64_t>(map.a), cx = static_cast<std::int64_t>(map.c);
  const auto ey = static_cast<std::int64_t>(map.e), fy = static_cast<std::int64_t>(map.f);
  // Output columns [lo, hi) read source columns inside the source; the columns before lo read
  // beyond the edge `edge_lo` (0 when ax = 1, the last column when ax = -1), those after hi
  // beyond the other edge.
  const std::int64_t lo_raw = ax == 1 ? -cx : cx - src.width + 1;
  const std::int64_t lo = std::clamp<std::int64_t>(lo_raw, 0, width);
  const std::int64_t hi = std::clamp<std::int64_t>(lo_raw + src.width, lo, width);
  const std::int64_t edge_lo = ax == 1 ? 0 : src.width - 1, edge_hi = src.width - 1 - edge_lo;
  const std::int64_t plane = height * width;
  for (std::int64_t y = 0; y < height; ++y) {
    const std::int64_t sy = ey * y + fy;
    const std::int64_t cl = std::clamp<std::int64_t>(sy, 0, src.height - 1);
    const bool row_valid = !fill_constant || sy == cl;
    for (std::int64_t c = 0; c < channels; ++c) {
      T* out = dst + c * plane + y * width;  // (W)
      if (!row_valid) {
        std::fill(out, out + width, T{0});
        continue;
      }
      const std::int64_t sc = src.channels == channels ? c : 0;
      const std::uint8_t* row = src.data + cl * src.stride_y + sc * src.stride_c;  // (W) strided
      const T before = fill_constant ? T{0} : static_cast<T>(row[edge_lo * src.stride_x]);
      const T after = fill_constant ? T{0} : static_cast<T>(row[edge_hi * src.stride_x]);
      std::fill(out, out + lo, before);
      copy_span(row, src.stride_x, ax * lo + cx, ax, hi - lo, out + lo);
      std::fill(out + hi, out + width, after);
    }
  }
}

/// Bilinear taps of up to kChunk output pixels of one row: four source byte offsets (always
/// inside the source) and four weights (0 for taps outside it under constant fill).
constexpr std::int64_t kChunk = 64;
struct alignas(32) Taps {  // every array 32-byte aligned: kChunk * 4 is a multiple of 32
  std::int32_t o00[kChunk], o01[kChunk], o10[kChunk], o11[kChunk];
  float w00[kChunk], w01[kChunk], w10[kChunk], w11[kChunk];
};

/// Taps of n output pixels of a row: pixel i reads the source at (sx + ax * i, sy + dy * i).
/// Branch-free and all in 32-bit lanes (float coordinates: below 1e-4 pixel of error for
/// sources up to 2000 pixels) and an int counter (int64 -> float does not vectorize on AVX2),
/// so the compiler vectorizes it.
void compute_taps(const ImageView& src, bool fill_constant, float sx, float sy, float ax, float dy,
                  int n, Taps& t) {
  const auto w = static_cast<float>(src.width), h = static_cast<float>(src.height);
  const auto stride_x = static_cast<std::int32_t>(src.stride_x);
  const auto stride_y = static_cast<std::int32_t>(src.stride_y);
  if (!fill_constant) {
    // Nearest: clamping the point to the source replicates the edge pixels exactly.
    const float x_cell = std::max(w - 2, 0.0f), y_cell = std::max(h - 2, 0.0f);
    const std::int32_t step_x = src.width > 1 ? stride_x : 0;
    const std::int32_t step_y = src.height > 1 ? stride_y : 0;
    for (int i = 0; i < n; ++i) {
      const auto k = static_cast<float>(i);
      const float px = std::min(std::max(sx + ax * k, 0.0f), w - 1);
      const float py = std::min(std::max(sy + dy * k, 0.0f), h - 1);
      const float fx = std::min(std::floor(px), x_cell), fy = std::min(std::floor(py), y_cell);
      const float wx = px - fx, wy = py - fy;
      const std::int32_t o =
          static_cast<std::int32_t>(fx) * stride_x + static_cast<std::int32_t>(fy) * stride_y;
      t.o00[i] = o;
      t.o01[i] = o + step_x;
      t.o10[i] = o + step_y;
      t.o11[i] = o + step_x + step_y;
      t.w00[i] = (1 - wx) * (1 - wy);
      t.w01[i] = wx * (1 - wy);
      t.w10[i] = (1 - wx) * wy;
      t.w11[i] = wx * wy;
    }
    return;
  }
  // Constant: taps outside the source weigh 0 (the image is zero-padded).
  for (int i = 0; i < n; ++i) {
    const auto k = static_cast<float>(i);
    const float px = std::min(std::max(sx + ax * k, -2.0f), w + 1);
    const float py = std::min(std::max(sy + dy * k, -2.0f), h + 1);
    const float fx = std::floor(px), fy = std::floor(py);
    const float wx = px - fx, wy = py - fy;
    const float vx0 = fx >= 0 && fx <= w - 1 ? 1.0f : 0.0f;
    const float vx1 = fx + 1 >= 0 && fx + 1 <= w - 1 ? 1.0f : 0.0f;
    const float vy0 = fy >= 0 && fy <= h - 1 ? 1.0f : 0.0f;
    const float vy1 = fy + 1 >= 0 && fy + 1 <= h - 1 ? 1.0f : 0.0f;
    const auto ix0 = static_cast<std::int32_t>(std::min(std::max(fx, 0.0f), w - 1));
    const auto ix1 = static_cast<std::int32_t>(std::min(std::max(fx + 1, 0.0f), w - 1));
    const auto iy0 = static_cast<std::int32_t>(std::min(std::max(fy, 0.0f), h - 1));
    const auto iy1 = static_cast<std::int32_t>(std::min(std::max(fy + 1, 0.0f), h - 1));
    const float wx0 = (1 - wx) * vx0, wx1 = wx * vx1, wy0 = (1 - wy) * vy0, wy1 = wy * vy1;
    t.o00[i] = iy0 * stride_y + ix0 * stride_x;
    t.o01[i] = iy0 * stride_y + ix1 * stride_x;
    t.o10[i] = iy1 * stride_y + ix0 * stride_x;
    t.o11[i] = iy1 * stride_y + ix1 * stride_x;
    t.w00[i] = wx0 * wy0;
    t.w01[i] = wx1 * wy0;
    t.w10[i] = wx0 * wy1;
    t.w11[i] = wx1 * wy1;
  }
}

/// One channel of pixels i0 .. n-1 through the taps (the portable loop).
void sample_plane(const std::uint8_t* s, const Taps& t, std::int64_t i0, std::int64_t n,
                  float* out) {  // (n)
  for (std::int64_t i = i0; i < n; ++i)
    out[i] = t.w00[i] * s[t.o00[i]] + t.w01[i] * s[t.o01[i]] + t.w10[i] * s[t.o10[i]] +
             t.w11[i] * s[t.o11[i]];
}

/// Pixels i0 .. n-1 of a chunk into the output planes, converting channels.
void sample_portable(const ImageView& src, const Taps& t, std::int64_t i0, std::int64_t n,
                     std::int64_t channels, float* const* out) {
  if (src.channels == channels) {
    for (std::int64_t c = 0; c < channels; ++c)
      sample_plane(src.data + c * src.stride_c, t, i0, n, out[c]);
  } else if (src.channels == 1) {  // gray -> RGB
    sample_plane(src.data, t, i0, n, out[0]);
    for (std::int64_t i = i0; i < n; ++i) out[1][i] = out[2][i] = out[0][i];
  } else {  // RGB -> gray
    float rgb[3][kChunk];
    for (std::int64_t c = 0; c < 3; ++c)
      sample_plane(src.data + c * src.stride_c, t, i0, n, rgb[c]);
    for (std::int64_t i = i0; i < n; ++i)
      out[0][i] = kLumaR * rgb[0][i] + kLumaG * rgb[1][i] + kLumaB * rgb[2][i];
  }
}

#if EPOCH_ISA_HAS_AVX2
/// The source bytes at offsets p (8 lanes): gathers the 32-bit word at min(p, last - 3), where
/// `limit` = last - 3 and last is the last addressable byte (so nothing past it is read), and
/// shifts it so that byte p lands in bits 0-7, p+1 in bits 8-15, p+2 in 16-23 (when <= last).
inline __m256i gather_bytes(const std::uint8_t* data, __m256i p, __m256i limit) {
  const __m256i base = _mm256_min_epi32(p, limit);
  const __m256i shift = _mm256_slli_epi32(_mm256_sub_epi32(p, base), 3);
  const __m256i word = _mm256_i32gather_epi32(reinterpret_cast<const int*>(data), base, 1);
  return _mm256_srlv_epi32(word, shift);
}

inline __m256 byte_at(__m256i word, int k) {
  return _mm256_cvtepi32_ps(
      _mm256_and_si256(_mm256_srlv_epi32(word, _mm256_set1_epi32(8 * k)), _mm256_set1_epi32(0xFF)));
}

/// Pixels 0 .. n8-1 (a multiple of 8) of a chunk with AVX2 gathers. Requires last >= 3.
void sample_avx2(const ImageView& src, const Taps& t, std::int64_t n8, std::int64_t channels,
                 float* const* out) {
  const __m256i limit = _mm256_set1_epi32(static_cast<std::int32_t>(last_byte(src) - 3));
  const bool interleaved = src.channels == 3 && src.stride_c == 1;
  for (std::int64_t i = 0; i < n8; i += 8) {
    const __m256i o[4] = {_mm256_load_si256(reinterpret_cast<const __m256i*>(t.o00 + i)),
                          _mm256_load_si256(reinterpret_cast<const __m256i*>(t.o01 + i)),
                          _mm256_load_si256(reinterpret_cast<const __m256i*>(t.o10 + i)),
                          _mm256_load_si256(reinterpret_cast<const __m256i*>(t.o11 + i))};
    const __m256 w[4] = {_mm256_load_ps(t.w00 + i), _mm256_load_ps(t.w01 + i),
                         _mm256_load_ps(t.w10 + i), _mm256_load_ps(t.w11 + i)};
    __m256 v[3] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    if (interleaved) {
      __m256i word[4];
      for (int k = 0; k < 4; ++k) word[k] = gather_bytes(src.data, o[k], limit);
      for (int c = 0; c < 3; ++c) {
        __m256 acc = _mm256_mul_ps(w[0], byte_at(word[0], c));
        for (int k = 1; k < 4; ++k) acc = _mm256_fmadd_ps(w[k], byte_at(word[k], c), acc);
        v[c] = acc;
      }
    } else {
      for (std::int64_t c = 0; c < src.channels; ++c) {
        const __m256i add = _mm256_set1_epi32(static_cast<std::int32_t>(c * src.stride_c));
        __m256 acc = _mm256_setzero_ps();
        for (int k = 0; k < 4; ++k) {
          const __m256i word = gather_bytes(src.data, _mm256_add_epi32(o[k], add), limit);
          acc = k == 0 ? _mm256_mul_ps(w[0], byte_at(word, 0))
                       : _mm256_fmadd_ps(w[k], byte_at(word, 0), acc);
        }
        v[c] = acc;
      }
    }
    if (src.channels == channels) {
      for (std::int64_t c = 0; c < channels; ++c) _mm256_storeu_ps(out[c] + i, v[c]);
    } else if (src.channels == 1) {
      for (std::int64_t c = 0; c < 3; ++c) _mm256_storeu_ps(out[c] + i, v[0]);
    } else {
      __m256 g = _mm256_mul_ps(_mm256_set1_ps(kLumaR), v[0]);
      g = _mm256_add_ps(g, _mm256_mul_ps(_mm256_set1_ps(kLumaG), v[1]));
      g = _mm256_add_ps(g, _mm256_mul_ps(_mm256_set1_ps(kLumaB), v[2]));
      _mm256_storeu_ps(out[0] + i, g);
    }
  }
}
#endif

/// Brightness, contrast and the rescale in one pass per channel, in place on x (C, H, W).
void photometric_and_rescale(const PhotometricDraw& ph, float rescale, std::int64_t channels,
                             std::int64_t plane, float* x) {
  const float delta = ph.brightness_delta, factor = ph.contrast_factor;
  for (std::int64_t c = 0; c < channels; ++c) {
    float* v = x + c * plane;  // (H, W)
    if (factor == 1.0f) {
      if (delta == 0.0f) {
        for (std::int64_t k = 0; k < plane; ++k) v[k] *= rescale;
      } else {
        for (std::int64_t k = 0; k < plane; ++k) v[k] = (v[k] + delta) * rescale;
      }
      continue;
    }
    // The channel mean: 8 double partial sums in a fixed pattern, combined in a fixed order
    // (vectorizes; independent of threads).
    double part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    std::int64_t k = 0;
    for (; k + 8 <= plane; k += 8)
      for (int j = 0; j < 8; ++j) part[j] += static_cast<double>(v[k + j]);
    for (; k < plane; ++k) part[0] += static_cast<double>(v[k]);
    const double sum =
        ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
    const auto mean = static_cast<float>(sum / static_cast<double>(plane) + delta);
    for (std::int64_t i = 0; i < plane; ++i)
      v[i] = ((v[i] + delta - mean) * factor + mean) * rescale;
  }
}

}  // namespace

void warp_affine_bilinear_kernel(const ImageView& src, const Affine2D& map, bool fill_constant,
                                 std::int64_t channels, std::int64_t height, std::int64_t width,
                                 float* dst) {  // (C, H, W)
  check_warp_args(src, map, channels, height, width);
  if (is_integer_map(map) && (src.channels == channels || src.channels == 1)) {
    warp_integer(src, map, fill_constant, channels, height, width, dst);
    return;
  }
  const std::int64_t plane = height * width;
#if EPOCH_ISA_HAS_AVX2
  const bool use_avx2 = last_byte(src) >= 3;
#endif
  Taps taps;
  for (std::int64_t y = 0; y < height; ++y) {
    const double yd = static_cast<double>(y);
    const double sx0 = map.b * yd + map.c, sy0 = map.e * yd + map.f;
    for (std::int64_t x0 = 0; x0 < width; x0 += kChunk) {
      const std::int64_t n = std::min(kChunk, width - x0);
      // The chunk's first point in double, the steps within it in float.
      const double xd = static_cast<double>(x0);
      compute_taps(src, fill_constant, static_cast<float>(sx0 + map.a * xd),
                   static_cast<float>(sy0 + map.d * xd), static_cast<float>(map.a),
                   static_cast<float>(map.d), static_cast<int>(n), taps);
      float* out[3] = {nullptr, nullptr, nullptr};
      for (std::int64_t c = 0; c < channels; ++c) out[c] = dst + c * plane + y * width + x0;
      std::int64_t done = 0;
#if EPOCH_ISA_HAS_AVX2
      if (use_avx2) {
        done = n - n % 8;
        sample_avx2(src, taps, done, channels, out);
      }
#endif
      sample_portable(src, taps, done, n, channels, out);
    }
  }
}

void transform_sample_kernel(const ImageView& src, const Preprocessing& pre,
                             const AugmentConfig* augment, RandomStream& rng, float* dst) {
  EPOCH_CHECK(pre.channels == 1 || pre.channels == 3, "transform_sample: output channels ",
              pre.channels, " (1 or 3 expected)");
  EPOCH_CHECK(src.channels == 1 || src.channels == 3, "transform_sample: source channels ",
              src.channels, " (1 or 3 expected)");
  const bool augmenting = augment != nullptr && augment->enabled();
  PhotometricDraw ph;
  const Affine2D map = augmenting
                           ? sample_augmentation(*augment, pre, src.width, src.height, rng, ph)
                           : base_transform(pre, src.width, src.height);
  // A padded crop's padding is 0, so its whole warp fills with 0 (the rim of a Keras transform
  // on top of it included).
  const bool fill_constant =
      augmenting && (augment->fill_mode == FillMode::constant || augment->crop_padding > 0);
  // Brightness and contrast are not clamped to 0-255 (TensorFlow on float images does not).
  const bool photometric = ph.brightness_delta != 0 || ph.contrast_factor != 1;
  const std::int64_t channels = pre.channels, plane = pre.height * pre.width;

  if (!photometric && is_integer_map(map) && (src.channels == channels || src.channels == 1)) {
    // Whole source pixels only: gather them as u8 and let preprocess_sample do the arithmetic,
    // so the result is bit-identical to preprocessing the copied/cropped/flipped image.
    check_warp_args(src, map, channels, pre.height, pre.width);
    const bool plain_chw = src.channels == channels && is_identity(map) && src.width == pre.width &&
                           src.height == pre.height && src.stride_x == 1 &&
                           src.stride_y == pre.width && (channels == 1 || src.stride_c == plane);
    if (plain_chw) {
      preprocess_sample(pre, src.data, dst);
      return;
    }
    std::vector<std::uint8_t>& pixels = scratch_pixels();
    pixels.resize(static_cast<std::size_t>(channels * plane));
    warp_integer(src, map, fill_constant, channels, pre.height, pre.width, pixels.data());
    preprocess_sample(pre, pixels.data(), dst);
    return;
  }
  warp_affine_bilinear_kernel(src, map, fill_constant, channels, pre.height, pre.width, dst);
  photometric_and_rescale(ph, pre.rescale, channels, plane, dst);
  finish_sample(pre, dst);
}

}  // namespace epoch::data::detail::EPOCH_ISA_NS

#if EPOCH_ISA_LEVEL == 0
namespace epoch::data {

namespace detail {
EPOCH_ISA_KERNEL(warp_affine_bilinear_kernel);
EPOCH_ISA_KERNEL(transform_sample_kernel);
}  // namespace detail

ImageView ImageView::of(const Image& image) {
  return {image.pixels.data(),
          image.width,
          image.height,
          image.channels,
          image.width * image.channels,
          image.channels,
          1};
}

ImageView ImageView::chw(const std::uint8_t* data, std::int64_t channels, std::int64_t height,
                         std::int64_t width) {
  return {data, width, height, channels, width, 1, height * width};
}

void warp_affine_bilinear(const ImageView& src, const Affine2D& map, bool fill_constant,
                          std::int64_t channels, std::int64_t height, std::int64_t width,
                          float* dst) {
  detail::warp_affine_bilinear_kernel(src, map, fill_constant, channels, height, width, dst);
}

void transform_sample(const ImageView& src, const Preprocessing& pre, const AugmentConfig* augment,
                      RandomStream& rng, float* dst) {
  detail::transform_sample_kernel(src, pre, augment, rng, dst);
}

}  // namespace epoch::data
#endif
