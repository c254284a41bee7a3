// Per-sample image transformation: the random augmentation of one training sample (the Keras
// ImageDataGenerator set plus torchvision's crops) and the deterministic resize of evaluation
// and prediction. Every geometric step is composed into one affine map sampled once, bilinearly,
// straight into the model's f32 input; then photometric changes, rescale and normalization.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "epoch/data/dataset.h"
#include "epoch/data/image.h"
#include "epoch/tensor/random.h"

namespace epoch::data {

/// A read-only 8-bit image of any memory layout: pixel (x, y) channel c is at
/// data[y * stride_y + x * stride_x + c * stride_c]. HWC: strides (W*C, C, 1); CHW: (W, 1, H*W).
struct ImageView {
  const std::uint8_t* data = nullptr;
  std::int64_t width = 0, height = 0, channels = 0;  // channels 1 or 3
  std::int64_t stride_y = 0, stride_x = 0, stride_c = 0;

  static ImageView of(const Image& image);  // HWC
  /// One (C, H, W) u8 sample, e.g. a row of ImageDataset::images.
  static ImageView chw(const std::uint8_t* data, std::int64_t channels, std::int64_t height,
                       std::int64_t width);
};

/// Output pixel centre (x, y) (0-based, in pixels) reads the source at
/// (a*x + b*y + c, d*x + e*y + f), in source pixel coordinates where pixel centres are integers.
struct Affine2D {
  double a = 1, b = 0, c = 0;
  double d = 0, e = 1, f = 0;
  /// this ∘ other: first other, then this (both map output -> source coordinates).
  Affine2D then(const Affine2D& other) const;
};

/// Where a geometric transform samples outside the source: the nearest edge pixel (Keras's
/// default) or 0.
enum class FillMode { nearest, constant };
const char* fill_mode_name(FillMode m);
/// The mode named `name` (ConfigError naming "nearest or constant" for another).
FillMode parse_fill_mode(const std::string& name);

/// What is drawn at random for each training sample. Ranges are symmetric and uniform unless
/// said otherwise; everything off by default (the identity).
struct AugmentConfig {
  // Geometric, in the output frame (as Keras applies them after resizing to the target size).
  float rotation_deg = 0;        // angle in [-r, r] degrees
  float width_shift = 0;         // shift in [-s, s] x output width
  float height_shift = 0;        // shift in [-s, s] x output height
  float shear = 0;               // shear angle in [-s, s] radians (the source's Keras 1 units)
  float zoom = 0;                // x and y scale factors drawn independently in [1-z, 1+z]
  bool horizontal_flip = false;  // each with probability 1/2
  bool vertical_flip = false;
  // Crops choose which part of the source becomes the output (instead of the whole image):
  /// Random crop of the output size from the source padded by this many zero pixels on every
  /// side (torchvision RandomCrop(size, padding)); -1: off. With 0 and a source larger than the
  /// output it is TensorFlow's random_crop (cifar10-tf's 24x24 of 32x32).
  std::int64_t crop_padding = -1;
  /// torchvision RandomResizedCrop: area fraction in [scale_min, scale_max], aspect ratio
  /// log-uniform in [ratio_min, ratio_max], 10 tries then the central crop; then resized.
  bool random_resized_crop = false;
  float rrc_scale_min = 0.08f, rrc_scale_max = 1.0f;
  float rrc_ratio_min = 3.0f / 4.0f, rrc_ratio_max = 4.0f / 3.0f;
  /// Points that fall outside the source: "nearest" (Keras's default: the closest edge pixel)
  /// or "constant" (0). Crop padding always pads with 0.
  FillMode fill_mode = FillMode::nearest;
  // Photometric, in pixel units (0-255), before rescale; TensorFlow's semantics.
  float brightness = 0;       // add delta in [-b, b] to every pixel
  float contrast_min = 1.0f;  // per channel: (x - mean_c) * factor + mean_c,
  float contrast_max = 1.0f;  //   factor uniform in [contrast_min, contrast_max]

  bool geometric() const;  // any geometric transform or crop is on
  bool enabled() const;    // anything is on
  /// Throws ConfigError naming the field for negative ranges, zoom >= 1, contrast_min >
  /// contrast_max, or bad random-resized-crop ranges.
  void validate() const;
  nlohmann::json to_json() const;
  static AugmentConfig from_json(const nlohmann::json& j);  // missing fields keep defaults
  /// "shear 0.2, zoom 0.2, horizontal flip" or "none".
  std::string describe() const;
  bool operator==(const AugmentConfig&) const = default;
};

/// The deterministic output->source map of evaluation: Preprocessing::resize "stretch" maps
/// the whole source onto the output, "center_crop" takes the central output-sized window
/// (stretching instead when the source is smaller than the output).
Affine2D base_transform(const Preprocessing& pre, std::int64_t src_width, std::int64_t src_height);

/// The random photometric draws of one sample.
struct PhotometricDraw {
  float brightness_delta = 0;
  float contrast_factor = 1;
};

/// One sample's random draws: its composed output->source map (crop or base resize, then the
/// Keras transforms about the output centre, then flips) and its photometric draws. A pure
/// function of (config, pre, source size, rng state); draws a fixed number of values per
/// enabled option, so one option never shifts another's randomness.
Affine2D sample_augmentation(const AugmentConfig& config, const Preprocessing& pre,
                             std::int64_t src_width, std::int64_t src_height, RandomStream& rng,
                             PhotometricDraw& photometric);

/// Bilinear sampling of `src` through `map` into dst (C, H, W) f32 in pixel units 0-255,
/// converting channels (gray -> RGB by replication, RGB -> gray by luma 0.299/0.587/0.114).
/// Points outside the source per fill_mode ("nearest" or "constant" 0). An identity map with
/// equal sizes copies exactly.
void warp_affine_bilinear(const ImageView& src, const Affine2D& map, bool fill_constant,
                          std::int64_t channels, std::int64_t height, std::int64_t width,
                          float* dst);  // (C, H, W)

/// The whole per-sample transform into a model input, dst (pre.channels, pre.height,
/// pre.width) f32: augmentation (when `augment` is non-null and enabled, drawing from `rng`)
/// or the base resize, then brightness/contrast, then Preprocessing (rescale, per-image
/// standardization, mean/std) exactly as preprocess_sample would for an unchanged image.
/// Without augmentation and with a source already of the output size the result equals
/// preprocess_sample's bit for bit.
void transform_sample(const ImageView& src, const Preprocessing& pre, const AugmentConfig* augment,
                      RandomStream& rng, float* dst);

/// The stream sample `index` of epoch `epoch` draws its augmentation from: a pure function of
/// (seed, epoch, index), so batches are identical for any number of loader workers.
RandomStream sample_stream(std::uint64_t seed, std::int64_t epoch, std::int64_t index);

}  // namespace epoch::data
