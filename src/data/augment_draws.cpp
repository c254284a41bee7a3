// The random draws of one augmented sample (a fixed block of stream positions, a slot per
// option) and their composition into one output->source affine map: torchvision crops or the
// base resize, Keras's transforms about the output centre, flips; plus each sample's stream.
#include <algorithm>
#include <cmath>

#include "epoch/data/augment.h"
#include "epoch/tensor/error.h"

namespace epoch::data {
namespace {

// Stream positions of one sample's draws, relative to the stream's position on entry. Every
// option owns a fixed slot, drawn only when the option is on, and the stream always advances by
// kDrawsPerSample: enabling one option never changes another's values.
constexpr std::uint64_t kSlotCrop = 0;  // crop_padding: top, left (2 words each);
                                        // random resized crop: 10 x (scale, log ratio),
                                        // then top, left (2 words each): 24 words
constexpr std::uint64_t kSlotRotation = 24;
constexpr std::uint64_t kSlotHeightShift = 25;
constexpr std::uint64_t kSlotWidthShift = 26;
constexpr std::uint64_t kSlotShear = 27;
constexpr std::uint64_t kSlotZoom = 28;  // row (height) factor, then column (width) factor
constexpr std::uint64_t kSlotHorizontalFlip = 30;
constexpr std::uint64_t kSlotVerticalFlip = 31;
constexpr std::uint64_t kSlotBrightness = 32;
constexpr std::uint64_t kSlotContrast = 33;
constexpr std::uint64_t kDrawsPerSample = 34;
constexpr int kRrcAttempts = 10;

/// Uniform in [0, 1) from the word at `pos` (the same mapping as RandomStream::uniform).
float uniform_at(const RandomStream& rng, std::uint64_t pos) {
  return static_cast<float>(rng.bits_at(pos) >> 8) * (1.0f / 16777216.0f);
}
float uniform_at(const RandomStream& rng, std::uint64_t pos, float lo, float hi) {
  return lo + (hi - lo) * uniform_at(rng, pos);
}
/// Uniform integer in [0, n) from the two words at pos, pos + 1 (as RandomStream::below).
std::int64_t below_at(const RandomStream& rng, std::uint64_t pos, std::int64_t n) {
  const std::uint64_t word = (std::uint64_t{rng.bits_at(pos)} << 32) | rng.bits_at(pos + 1);
  return static_cast<std::int64_t>(word % static_cast<std::uint64_t>(n));
}

/// Output pixel centres 0..out-1 spread over source centres of the span [lo, lo + len).
void stretch_axis(double lo, double len, std::int64_t out, double& scale, double& offset) {
  scale = len / static_cast<double>(out);
  offset = lo + 0.5 * scale - 0.5;
}

Affine2D scale_map(double x0, double w, double y0, double h, std::int64_t out_w,
                   std::int64_t out_h) {
  Affine2D m;
  stretch_axis(x0, w, out_w, m.a, m.c);
  stretch_axis(y0, h, out_h, m.e, m.f);
  return m;
}

/// torchvision's Resize(round(size / kResizeCropFraction)) then CenterCrop(size): the short side
/// scaled to that size (the long one truncated, as torchvision), the crop's offsets rounded half
/// to even (Python's round); the crop window expressed in the source's pixels.
Affine2D resize_center_crop(const Preprocessing& pre, std::int64_t sw, std::int64_t sh) {
  const double w = static_cast<double>(sw), h = static_cast<double>(sh);
  const double scale =
      std::max(static_cast<double>(pre.width) / w, static_cast<double>(pre.height) / h) /
      kResizeCropFraction;
  const bool wide = sw >= sh;
  const double short_side = std::nearbyint((wide ? h : w) * scale);
  // (short * long / short_source, in that order: exact where torchvision's is)
  const double long_side = std::floor(short_side * (wide ? w : h) / (wide ? h : w));
  const double rw = wide ? long_side : short_side, rh = wide ? short_side : long_side;
  const double left = std::nearbyint((rw - static_cast<double>(pre.width)) / 2.0);
  const double top = std::nearbyint((rh - static_cast<double>(pre.height)) / 2.0);
  const double fx = w / rw, fy = h / rh;  // source pixels per resized pixel
  return scale_map(left * fx, static_cast<double>(pre.width) * fx, top * fy,
                   static_cast<double>(pre.height) * fy, pre.width, pre.height);
}

/// torchvision RandomResizedCrop.get_params: (left, top, w, h) of the crop in the source.
Affine2D random_resized_crop(const AugmentConfig& cfg, std::int64_t sw, std::int64_t sh,
                             std::int64_t out_w, std::int64_t out_h, const RandomStream& rng,
                             std::uint64_t start) {
  const double area = static_cast<double>(sw) * static_cast<double>(sh);
  const double log_lo = std::log(static_cast<double>(cfg.rrc_ratio_min));
  const double log_hi = std::log(static_cast<double>(cfg.rrc_ratio_max));
  for (int k = 0; k < kRrcAttempts; ++k) {
    const std::uint64_t pos = start + kSlotCrop + 2 * static_cast<std::uint64_t>(k);
    const double target =
        area * static_cast<double>(uniform_at(rng, pos, cfg.rrc_scale_min, cfg.rrc_scale_max));
    const double ratio =
        std::exp(log_lo + (log_hi - log_lo) * static_cast<double>(uniform_at(rng, pos + 1)));
    const std::int64_t w = std::llround(std::sqrt(target * ratio));
    const std::int64_t h = std::llround(std::sqrt(target / ratio));
    if (w > 0 && w <= sw && h > 0 && h <= sh) {
      const std::uint64_t at = start + kSlotCrop + 2 * kRrcAttempts;
      const std::int64_t top = below_at(rng, at, sh - h + 1);
      const std::int64_t left = below_at(rng, at + 2, sw - w + 1);
      return scale_map(static_cast<double>(left), static_cast<double>(w), static_cast<double>(top),
                       static_cast<double>(h), out_w, out_h);
    }
  }
  // Fallback: the central crop, its aspect ratio clamped to the range.
  const double in_ratio = static_cast<double>(sw) / static_cast<double>(sh);
  std::int64_t w = sw, h = sh;
  if (in_ratio < cfg.rrc_ratio_min) {
    h = std::max<std::int64_t>(1, std::llround(static_cast<double>(w) / cfg.rrc_ratio_min));
  } else if (in_ratio > cfg.rrc_ratio_max) {
    w = std::max<std::int64_t>(1, std::llround(static_cast<double>(h) * cfg.rrc_ratio_max));
  }
  h = std::min(h, sh);
  w = std::min(w, sw);
  return scale_map(static_cast<double>((sw - w) / 2), static_cast<double>(w),
                   static_cast<double>((sh - h) / 2), static_cast<double>(h), out_w, out_h);
}

}  // namespace

Affine2D Affine2D::then(const Affine2D& o) const {
  return {a * o.a + b * o.d, a * o.b + b * o.e, a * o.c + b * o.f + c,
          d * o.a + e * o.d, d * o.b + e * o.e, d * o.c + e * o.f + f};
}

Affine2D base_transform(const Preprocessing& pre, std::int64_t src_width, std::int64_t src_height) {
  EPOCH_CHECK(src_width > 0 && src_height > 0 && pre.width > 0 && pre.height > 0,
              "base_transform: source ", src_width, "x", src_height, " and output ", pre.width, "x",
              pre.height, " must be non-empty");
  // center_crop stretches the whole source when it is smaller than the output in either
  // dimension (TensorFlow would pad instead).
  if (pre.resize == Resize::center_crop && src_width >= pre.width && src_height >= pre.height) {
    // The central window, its offset rounded down (TensorFlow's resize_image_with_crop_or_pad).
    return {1, 0, static_cast<double>((src_width - pre.width) / 2),
            0, 1, static_cast<double>((src_height - pre.height) / 2)};
  }
  if (pre.resize == Resize::resize_center_crop)
    return resize_center_crop(pre, src_width, src_height);
  return scale_map(0, static_cast<double>(src_width), 0, static_cast<double>(src_height), pre.width,
                   pre.height);
}

Affine2D sample_augmentation(const AugmentConfig& cfg, const Preprocessing& pre,
                             std::int64_t src_width, std::int64_t src_height, RandomStream& rng,
                             PhotometricDraw& photometric) {
  EPOCH_CHECK(src_width > 0 && src_height > 0 && pre.width > 0 && pre.height > 0,
              "sample_augmentation: source ", src_width, "x", src_height, " and output ", pre.width,
              "x", pre.height, " must be non-empty");
  const std::uint64_t start = rng.position();
  const std::int64_t out_w = pre.width, out_h = pre.height;
  const auto w = static_cast<double>(out_w), h = static_cast<double>(out_h);

  // 1. Which part of the source becomes the (output-sized) frame.
  Affine2D map;
  if (cfg.crop_padding >= 0) {
    // torchvision RandomCrop: top in [0, H + 2p - h], left in [0, W + 2p - w]; a padded source
    // smaller than the output is centred (its rim then is the zero padding).
    const std::int64_t p = cfg.crop_padding;
    const std::int64_t range_y = src_height + 2 * p - out_h, range_x = src_width + 2 * p - out_w;
    const std::int64_t top =
        below_at(rng, start + kSlotCrop, std::max<std::int64_t>(range_y, 0) + 1);
    const std::int64_t left =
        below_at(rng, start + kSlotCrop + 2, std::max<std::int64_t>(range_x, 0) + 1);
    const auto centred = [](std::int64_t range) {
      return static_cast<std::int64_t>(std::floor(static_cast<double>(range) / 2));
    };
    map.c = static_cast<double>((range_x >= 0 ? left : centred(range_x)) - p);
    map.f = static_cast<double>((range_y >= 0 ? top : centred(range_y)) - p);
  } else if (cfg.random_resized_crop) {
    map = random_resized_crop(cfg, src_width, src_height, out_w, out_h, rng, start);
  } else {
    map = base_transform(pre, src_width, src_height);
  }

  // 2. Keras's apply_affine_transform about the frame's centre. Being composed with the crop,
  // points that leave the frame read the source beyond it (real pixels, not the frame's edge).
  // Keras composes, in (row, col) coordinates, rotation . shift . shear . zoom (output -> input);
  // here in (x, y) = (col, row): q_in = R (S Z q + t) with q relative to the centre ((w-1)/2,
  // (h-1)/2) (Keras offsets by h/2 + 0.5, one pixel off the true centre; the true centre is used
  // here).
  if (cfg.rotation_deg != 0 || cfg.width_shift != 0 || cfg.height_shift != 0 || cfg.shear != 0 ||
      cfg.zoom != 0) {
    double theta = 0, tx = 0, ty = 0, shear = 0, zx = 1, zy = 1;
    if (cfg.rotation_deg != 0)
      theta = static_cast<double>(
                  uniform_at(rng, start + kSlotRotation, -cfg.rotation_deg, cfg.rotation_deg)) *
              (3.14159265358979323846 / 180.0);
    if (cfg.height_shift != 0)
      ty = static_cast<double>(
               uniform_at(rng, start + kSlotHeightShift, -cfg.height_shift, cfg.height_shift)) *
           h;
    if (cfg.width_shift != 0)
      tx = static_cast<double>(
               uniform_at(rng, start + kSlotWidthShift, -cfg.width_shift, cfg.width_shift)) *
           w;
    if (cfg.shear != 0)
      shear = static_cast<double>(uniform_at(rng, start + kSlotShear, -cfg.shear, cfg.shear));
    if (cfg.zoom != 0) {
      zy = static_cast<double>(uniform_at(rng, start + kSlotZoom, 1 - cfg.zoom, 1 + cfg.zoom));
      zx = static_cast<double>(uniform_at(rng, start + kSlotZoom + 1, 1 - cfg.zoom, 1 + cfg.zoom));
    }
    // S Z: Keras's shear (row' = row - sin(s) col, col' = cos(s) col) after the zoom.
    const double sz_a = std::cos(shear) * zx, sz_d = -std::sin(shear) * zx, sz_e = zy;
    // R: Keras's rotation (row' = cos row - sin col, col' = sin row + cos col) in (x, y).
    const double cs = std::cos(theta), sn = std::sin(theta);
    Affine2D k;
    k.a = cs * sz_a + sn * sz_d;
    k.b = sn * sz_e;
    k.d = -sn * sz_a + cs * sz_d;
    k.e = cs * sz_e;
    const double cx = (w - 1) / 2, cy = (h - 1) / 2;
    const double rtx = cs * tx + sn * ty, rty = -sn * tx + cs * ty;
    k.c = cx + rtx - (k.a * cx + k.b * cy);
    k.f = cy + rty - (k.d * cx + k.e * cy);
    map = map.then(k);
  }

  // 3. Flips of the output (Keras flips after the affine transform).
  if (cfg.horizontal_flip && uniform_at(rng, start + kSlotHorizontalFlip) < 0.5f)
    map = map.then(Affine2D{-1, 0, w - 1, 0, 1, 0});
  if (cfg.vertical_flip && uniform_at(rng, start + kSlotVerticalFlip) < 0.5f)
    map = map.then(Affine2D{1, 0, 0, 0, -1, h - 1});

  photometric = PhotometricDraw{};
  if (cfg.brightness != 0)
    photometric.brightness_delta =
        uniform_at(rng, start + kSlotBrightness, -cfg.brightness, cfg.brightness);
  if (cfg.contrast_min != 1 || cfg.contrast_max != 1)
    photometric.contrast_factor =
        uniform_at(rng, start + kSlotContrast, cfg.contrast_min, cfg.contrast_max);
  rng.set_position(start + kDrawsPerSample);
  return map;
}

RandomStream sample_stream(std::uint64_t seed, std::int64_t epoch, std::int64_t index) {
  static const std::uint64_t tag = hash_name("epoch.data.augment");
  return RandomStream(mix64(seed, tag),
                      mix64(static_cast<std::uint64_t>(epoch), static_cast<std::uint64_t>(index)));
}

}  // namespace epoch::data
