// Per-sample augmentation: the composed affine map against the transforms applied one after
// another (Keras's row/column matrices), the warp against a double-precision bilinear reference,
// exact copies and flips, crops, photometric formulas, the random streams and the config.
#include "epoch/data/augment.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "epoch/data/loader.h"
#include "epoch/tensor/cpu_isa.h"

namespace epoch::data {
namespace {

using Pixels = std::vector<std::uint8_t>;

/// (C, H, W) u8 pixels from a seeded stream.
Pixels random_pixels(std::int64_t c, std::int64_t h, std::int64_t w, std::uint64_t seed) {
  RandomStream rng(seed, 1);
  Pixels p(static_cast<std::size_t>(c * h * w));
  for (auto& v : p) v = static_cast<std::uint8_t>(rng.next_bits() & 0xFF);
  return p;
}

/// The same pixels interleaved (H, W, C).
Image to_hwc(const Pixels& chw, std::int64_t c, std::int64_t h, std::int64_t w) {
  Image im;
  im.width = w;
  im.height = h;
  im.channels = c;
  im.pixels.resize(chw.size());
  for (std::int64_t ch = 0; ch < c; ++ch)
    for (std::int64_t k = 0; k < h * w; ++k)
      im.pixels[static_cast<std::size_t>(k * c + ch)] =
          chw[static_cast<std::size_t>(ch * h * w + k)];
  return im;
}

Preprocessing make_pre(std::int64_t c, std::int64_t h, std::int64_t w) {
  Preprocessing p;
  p.channels = c;
  p.height = h;
  p.width = w;
  return p;
}

std::vector<float> run_transform(const ImageView& src, const Preprocessing& pre,
                                 const AugmentConfig* augment, RandomStream rng) {
  std::vector<float> out(static_cast<std::size_t>(pre.channels * pre.height * pre.width));
  transform_sample(src, pre, augment, rng, out.data());
  return out;
}

std::vector<float> run_preprocess(const Preprocessing& pre, const Pixels& chw) {
  std::vector<float> out(chw.size());
  preprocess_sample(pre, chw.data(), out.data());
  return out;
}

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::vector<float> run_warp(const ImageView& src, const Affine2D& m, bool fill_constant,
                            std::int64_t c, std::int64_t h, std::int64_t w) {
  std::vector<float> out(static_cast<std::size_t>(c * h * w), -1.0f);
  warp_affine_bilinear(src, m, fill_constant, c, h, w, out.data());
  return out;
}

double pixel(const ImageView& v, std::int64_t x, std::int64_t y, std::int64_t c) {
  return v.data[y * v.stride_y + x * v.stride_x + c * v.stride_c];
}

/// Double-precision bilinear sample of channel c at (x, y): nearest clamps the point, constant
/// counts taps outside the source as 0.
double reference_sample(const ImageView& v, double x, double y, std::int64_t c, bool constant) {
  if (!constant) {
    x = std::clamp(x, 0.0, static_cast<double>(v.width - 1));
    y = std::clamp(y, 0.0, static_cast<double>(v.height - 1));
  }
  const double fx = std::floor(x), fy = std::floor(y);
  double sum = 0;
  for (int dy = 0; dy < 2; ++dy)
    for (int dx = 0; dx < 2; ++dx) {
      const auto ix = static_cast<std::int64_t>(fx) + dx, iy = static_cast<std::int64_t>(fy) + dy;
      const double wgt = (dx ? x - fx : 1 - (x - fx)) * (dy ? y - fy : 1 - (y - fy));
      if (wgt == 0) continue;
      if (ix < 0 || iy < 0 || ix >= v.width || iy >= v.height) continue;  // only when constant
      sum += wgt * pixel(v, ix, iy, c);
    }
  return sum;
}

double reference_value(const ImageView& v, double x, double y, std::int64_t out_c,
                       std::int64_t out_channels, bool constant) {
  if (v.channels == out_channels) return reference_sample(v, x, y, out_c, constant);
  if (v.channels == 1) return reference_sample(v, x, y, 0, constant);
  return 0.299 * reference_sample(v, x, y, 0, constant) +
         0.587 * reference_sample(v, x, y, 1, constant) +
         0.114 * reference_sample(v, x, y, 2, constant);
}

void apply(const Affine2D& m, double x, double y, double& sx, double& sy) {
  sx = m.a * x + m.b * y + m.c;
  sy = m.d * x + m.e * y + m.f;
}

TEST(AugmentTest, IdentityEqualsPreprocessSampleBitForBit) {
  for (std::int64_t c : {1, 3}) {
    const std::int64_t h = 13, w = 21;
    const Pixels px = random_pixels(c, h, w, 11 + static_cast<std::uint64_t>(c));
    const Image hwc = to_hwc(px, c, h, w);
    for (int variant = 0; variant < 4; ++variant) {
      Preprocessing pre = make_pre(c, h, w);
      pre.standardize = variant & 1;
      if (variant & 2) {
        pre.mean.assign(static_cast<std::size_t>(c), 0.45f);
        pre.std.assign(static_cast<std::size_t>(c), 0.27f);
      }
      for (const char* resize : {"stretch", "center_crop"}) {
        pre.resize = parse_resize(resize);
        const std::vector<float> expected = run_preprocess(pre, px);
        const AugmentConfig none;
        AugmentConfig flip_only;
        flip_only.horizontal_flip = true;
        EXPECT_TRUE(bitwise_equal(
            run_transform(ImageView::chw(px.data(), c, h, w), pre, nullptr, RandomStream(1, 2)),
            expected));
        EXPECT_TRUE(bitwise_equal(run_transform(ImageView::of(hwc), pre, &none, RandomStream(1, 2)),
                                  expected));
        // A flip augmentation whose draw leaves the image unflipped is the identity too.
        int unflipped = 0;
        for (std::int64_t i = 0; i < 16; ++i) {
          RandomStream probe = sample_stream(5, 0, i);
          PhotometricDraw ph;
          const Affine2D m = sample_augmentation(flip_only, pre, w, h, probe, ph);
          if (m.a != 1) continue;
          ++unflipped;
          EXPECT_TRUE(bitwise_equal(
              run_transform(ImageView::of(hwc), pre, &flip_only, sample_stream(5, 0, i)),
              expected));
        }
        EXPECT_GT(unflipped, 0);
      }
    }
  }
}

TEST(AugmentTest, IdentityWarpCopiesExactly) {
  const Pixels px = random_pixels(3, 9, 11, 3);
  const Image hwc = to_hwc(px, 3, 9, 11);
  for (const ImageView& v : {ImageView::chw(px.data(), 3, 9, 11), ImageView::of(hwc)}) {
    for (bool constant : {false, true}) {
      const std::vector<float> out = run_warp(v, Affine2D{}, constant, 3, 9, 11);
      for (std::size_t k = 0; k < px.size(); ++k) ASSERT_EQ(out[k], static_cast<float>(px[k]));
    }
  }
}

TEST(AugmentTest, HorizontalFlipIsExact) {
  const std::int64_t c = 3, h = 7, w = 10;
  const Pixels px = random_pixels(c, h, w, 4);
  const Image hwc = to_hwc(px, c, h, w);
  const Affine2D flip{-1, 0, static_cast<double>(w - 1), 0, 1, 0};
  for (const ImageView& v : {ImageView::chw(px.data(), c, h, w), ImageView::of(hwc)}) {
    const std::vector<float> out = run_warp(v, flip, false, c, h, w);
    for (std::int64_t ch = 0; ch < c; ++ch)
      for (std::int64_t y = 0; y < h; ++y)
        for (std::int64_t x = 0; x < w; ++x)
          ASSERT_EQ(out[static_cast<std::size_t>((ch * h + y) * w + x)],
                    static_cast<float>(px[static_cast<std::size_t>((ch * h + y) * w + w - 1 - x)]));
  }
  // Through transform_sample: each sample is the image or its mirror, preprocessed bit for bit.
  Pixels mirrored(px.size());
  for (std::int64_t ch = 0; ch < c; ++ch)
    for (std::int64_t y = 0; y < h; ++y)
      for (std::int64_t x = 0; x < w; ++x)
        mirrored[static_cast<std::size_t>((ch * h + y) * w + x)] =
            px[static_cast<std::size_t>((ch * h + y) * w + w - 1 - x)];
  Preprocessing pre = make_pre(c, h, w);
  pre.mean = {0.5f, 0.4f, 0.3f};
  pre.std = {0.2f, 0.25f, 0.3f};
  AugmentConfig cfg;
  cfg.horizontal_flip = true;
  const std::vector<float> plain = run_preprocess(pre, px), flipped = run_preprocess(pre, mirrored);
  int n_plain = 0, n_flipped = 0;
  for (std::int64_t i = 0; i < 40; ++i) {
    const std::vector<float> out =
        run_transform(ImageView::of(hwc), pre, &cfg, sample_stream(9, 1, i));
    if (bitwise_equal(out, plain)) ++n_plain;
    if (bitwise_equal(out, flipped)) ++n_flipped;
  }
  EXPECT_EQ(n_plain + n_flipped, 40);
  EXPECT_GT(n_plain, 5);
  EXPECT_GT(n_flipped, 5);
}

TEST(AugmentTest, QuarterTurnOfASquareImageIsExact) {
  for (std::int64_t n : {8, 9, 17}) {
    const Pixels px = random_pixels(3, n, n, 20 + static_cast<std::uint64_t>(n));
    const Image hwc = to_hwc(px, 3, n, n);
    // Output (x, y) reads source (y, n-1-x): a 90-degree rotation about the centre.
    const Affine2D quarter{0, 1, 0, -1, 0, static_cast<double>(n - 1)};
    for (bool constant : {false, true}) {
      const std::vector<float> out = run_warp(ImageView::of(hwc), quarter, constant, 3, n, n);
      for (std::int64_t c = 0; c < 3; ++c)
        for (std::int64_t y = 0; y < n; ++y)
          for (std::int64_t x = 0; x < n; ++x)
            ASSERT_FLOAT_EQ(out[static_cast<std::size_t>((c * n + y) * n + x)],
                            px[static_cast<std::size_t>((c * n + (n - 1 - x)) * n + y)]);
    }
  }
  // sample_augmentation's rotations are rotations about the output centre.
  AugmentConfig cfg;
  cfg.rotation_deg = 90;
  const Preprocessing pre = make_pre(3, 16, 16);
  for (std::int64_t i = 0; i < 20; ++i) {
    RandomStream rng = sample_stream(3, 0, i);
    PhotometricDraw ph;
    const Affine2D m = sample_augmentation(cfg, pre, 16, 16, rng, ph);
    EXPECT_NEAR(m.a, m.e, 1e-12);
    EXPECT_NEAR(m.b, -m.d, 1e-12);
    EXPECT_NEAR(m.a * m.a + m.b * m.b, 1.0, 1e-12);
    double sx = 0, sy = 0;
    apply(m, 7.5, 7.5, sx, sy);
    EXPECT_NEAR(sx, 7.5, 1e-9);
    EXPECT_NEAR(sy, 7.5, 1e-9);
  }
}

/// 3x3 matrices in Keras's (row, col) coordinates.
using M3 = std::array<std::array<double, 3>, 3>;
M3 mul(const M3& p, const M3& q) {
  M3 r{};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 3; ++k) r[i][j] += p[i][k] * q[k][j];
  return r;
}

/// A uniform draw in [lo, hi) at stream position pos (computed in float, as RandomStream does).
double draw(const RandomStream& rng, std::uint64_t pos, float lo, float hi) {
  const float u = static_cast<float>(rng.bits_at(pos) >> 8) * (1.0f / 16777216.0f);
  return static_cast<double>(lo + (hi - lo) * u);
}

/// The output -> source point of sample_augmentation's documented draws (stream slots:
/// crop 0-23, rotation 24, height shift 25, width shift 26, shear 27, zoom 28-29, flips 30-31),
/// applying the steps one after another: flips of the output, Keras's matrix
/// rotation . shift . shear . zoom in (row, col) about the centre, then the stretch to the source.
void sequential_point(const AugmentConfig& cfg, std::int64_t sw, std::int64_t sh, std::int64_t w,
                      std::int64_t h, const RandomStream& rng, double x, double y, double& sx,
                      double& sy) {
  const double W = static_cast<double>(w), H = static_cast<double>(h);
  if (cfg.horizontal_flip && draw(rng, 30, 0, 1) < 0.5) x = W - 1 - x;
  if (cfg.vertical_flip && draw(rng, 31, 0, 1) < 0.5) y = H - 1 - y;
  const double theta = cfg.rotation_deg ? draw(rng, 24, -cfg.rotation_deg, cfg.rotation_deg) *
                                              3.14159265358979323846 / 180
                                        : 0.0;
  const double tx = cfg.height_shift ? draw(rng, 25, -cfg.height_shift, cfg.height_shift) * H : 0;
  const double ty = cfg.width_shift ? draw(rng, 26, -cfg.width_shift, cfg.width_shift) * W : 0;
  const double shear = cfg.shear ? draw(rng, 27, -cfg.shear, cfg.shear) : 0.0;
  const double zx = cfg.zoom ? draw(rng, 28, 1 - cfg.zoom, 1 + cfg.zoom) : 1.0;
  const double zy = cfg.zoom ? draw(rng, 29, 1 - cfg.zoom, 1 + cfg.zoom) : 1.0;
  const M3 rotation{
      {{std::cos(theta), -std::sin(theta), 0}, {std::sin(theta), std::cos(theta), 0}, {0, 0, 1}}};
  const M3 shift{{{1, 0, tx}, {0, 1, ty}, {0, 0, 1}}};
  const M3 shear_m{{{1, -std::sin(shear), 0}, {0, std::cos(shear), 0}, {0, 0, 1}}};
  const M3 zoom_m{{{zx, 0, 0}, {0, zy, 0}, {0, 0, 1}}};
  const double o_r = (H - 1) / 2, o_c = (W - 1) / 2;
  const M3 offset{{{1, 0, o_r}, {0, 1, o_c}, {0, 0, 1}}};
  const M3 reset{{{1, 0, -o_r}, {0, 1, -o_c}, {0, 0, 1}}};
  const M3 t = mul(mul(offset, mul(mul(mul(rotation, shift), shear_m), zoom_m)), reset);
  const double r = t[0][0] * y + t[0][1] * x + t[0][2];
  const double c = t[1][0] * y + t[1][1] * x + t[1][2];
  // The whole source stretched onto the output frame.
  sx = (c + 0.5) * static_cast<double>(sw) / W - 0.5;
  sy = (r + 0.5) * static_cast<double>(sh) / H - 0.5;
}

TEST(AugmentTest, ComposedMapEqualsTheStepsAppliedInTurn) {
  AugmentConfig cfg;
  cfg.rotation_deg = 25;
  cfg.width_shift = 0.1f;
  cfg.height_shift = 0.15f;
  cfg.shear = 0.3f;
  cfg.zoom = 0.2f;
  cfg.horizontal_flip = true;
  cfg.vertical_flip = true;
  const std::int64_t sw = 50, sh = 40, w = 32, h = 24;
  const Preprocessing pre = make_pre(1, h, w);
  // A linear ramp: bilinear interpolation reproduces it exactly, so the warped image is the ramp
  // at the sequentially computed source point wherever the point's 2x2 cell is inside.
  Pixels ramp(static_cast<std::size_t>(sw * sh));
  for (std::int64_t y = 0; y < sh; ++y)
    for (std::int64_t x = 0; x < sw; ++x)
      ramp[static_cast<std::size_t>(y * sw + x)] = static_cast<std::uint8_t>(2 * x + 3 * y);
  const ImageView view = ImageView::chw(ramp.data(), 1, sh, sw);
  int interior = 0;
  for (std::int64_t i = 0; i < 30; ++i) {
    RandomStream rng = sample_stream(17, 2, i);
    const RandomStream at_start = rng;
    PhotometricDraw ph;
    const Affine2D m = sample_augmentation(cfg, pre, sw, sh, rng, ph);
    const std::vector<float> out = run_warp(view, m, false, 1, h, w);
    for (std::int64_t y = 0; y < h; ++y)
      for (std::int64_t x = 0; x < w; ++x) {
        double ex = 0, ey = 0, sx = 0, sy = 0;
        sequential_point(cfg, sw, sh, w, h, at_start, static_cast<double>(x),
                         static_cast<double>(y), ex, ey);
        apply(m, static_cast<double>(x), static_cast<double>(y), sx, sy);
        ASSERT_NEAR(sx, ex, 1e-9) << "sample " << i << " at " << x << "," << y;
        ASSERT_NEAR(sy, ey, 1e-9) << "sample " << i << " at " << x << "," << y;
        if (ex < 0 || ey < 0 || ex > static_cast<double>(sw - 1) ||
            ey > static_cast<double>(sh - 1))
          continue;
        ++interior;
        ASSERT_NEAR(out[static_cast<std::size_t>(y * w + x)], 2 * ex + 3 * ey, 2e-3);
      }
  }
  EXPECT_GT(interior, 10000);
}

TEST(AugmentTest, WarpMatchesDoublePrecisionBilinear) {
  struct Case {
    std::int64_t src_c;
    bool hwc;
    std::int64_t out_c;
  };
  const Case cases[] = {{3, true, 3}, {3, false, 3}, {1, false, 1}, {1, false, 3},
                        {3, true, 1}, {1, true, 3},  {3, false, 1}};
  const std::pair<std::int64_t, std::int64_t> sizes[] = {{23, 17}, {1, 1}, {1, 6}, {5, 1}, {2, 2}};
  for (const Case& k : cases) {
    for (const auto& [sw, sh] : sizes) {
      const Pixels px = random_pixels(k.src_c, sh, sw, 77);
      const Image hwc = to_hwc(px, k.src_c, sh, sw);
      const ImageView v = k.hwc ? ImageView::of(hwc) : ImageView::chw(px.data(), k.src_c, sh, sw);
      for (int trial = 0; trial < 3; ++trial) {
        // Rotated and scaled so points fall inside, on the edges and outside the source.
        const double angle = 0.4 + trial, scale = 0.7 + 0.3 * trial;
        Affine2D m{scale * std::cos(angle),  scale * std::sin(angle), 0,
                   -scale * std::sin(angle), scale * std::cos(angle), 0};
        m.c = static_cast<double>(sw) / 2 - 10 * (m.a + m.b);
        m.f = static_cast<double>(sh) / 2 - 10 * (m.d + m.e);
        for (bool constant : {false, true}) {
          const std::int64_t h = 19, w = 37;  // 37: full 8-pixel groups and a tail
          const std::vector<float> out = run_warp(v, m, constant, k.out_c, h, w);
          for (std::int64_t c = 0; c < k.out_c; ++c)
            for (std::int64_t y = 0; y < h; ++y)
              for (std::int64_t x = 0; x < w; ++x) {
                double sx = 0, sy = 0;
                apply(m, static_cast<double>(x), static_cast<double>(y), sx, sy);
                ASSERT_NEAR(out[static_cast<std::size_t>((c * h + y) * w + x)],
                            reference_value(v, sx, sy, c, k.out_c, constant), 2e-3)
                    << "source " << sw << "x" << sh << "x" << k.src_c << " out c " << c << " at "
                    << x << "," << y << (constant ? " constant" : " nearest");
              }
        }
      }
    }
  }
}

TEST(AugmentTest, BaseTransformStretchAndCenterCrop) {
  Preprocessing pre = make_pre(3, 4, 4);
  Affine2D m = base_transform(pre, 8, 12);
  EXPECT_DOUBLE_EQ(m.a, 2.0);
  EXPECT_DOUBLE_EQ(m.c, 0.5);
  EXPECT_DOUBLE_EQ(m.e, 3.0);
  EXPECT_DOUBLE_EQ(m.f, 1.0);
  EXPECT_EQ(m.b, 0.0);
  EXPECT_EQ(m.d, 0.0);
  m = base_transform(pre, 2, 2);  // upscaling: centres map to centres
  EXPECT_DOUBLE_EQ(m.a, 0.5);
  EXPECT_DOUBLE_EQ(m.c, -0.25);
  EXPECT_DOUBLE_EQ(m.a * 3 + m.c, 1.25);
  pre.resize = Resize::center_crop;
  pre.height = 4;
  pre.width = 6;
  m = base_transform(pre, 10, 7);
  EXPECT_EQ(m.a, 1.0);
  EXPECT_EQ(m.e, 1.0);
  EXPECT_EQ(m.c, 2.0);
  EXPECT_EQ(m.f, 1.0);            // (7 - 4) / 2 rounded down
  m = base_transform(pre, 5, 7);  // narrower than the output: stretch
  EXPECT_DOUBLE_EQ(m.a, 5.0 / 6.0);
  EXPECT_DOUBLE_EQ(m.e, 7.0 / 4.0);
  // The crop through transform_sample equals preprocessing the cropped pixels.
  pre.height = 3;
  pre.width = 4;
  const Pixels px = random_pixels(3, 7, 8, 5);
  Pixels crop;
  for (std::int64_t c = 0; c < 3; ++c)
    for (std::int64_t y = 2; y < 5; ++y)
      for (std::int64_t x = 2; x < 6; ++x)
        crop.push_back(px[static_cast<std::size_t>((c * 7 + y) * 8 + x)]);
  EXPECT_TRUE(bitwise_equal(
      run_transform(ImageView::chw(px.data(), 3, 7, 8), pre, nullptr, RandomStream(0, 0)),
      run_preprocess(pre, crop)));
  EXPECT_THROW(base_transform(pre, 0, 5), InvalidArgument);
}

TEST(AugmentTest, ResizeCenterCropIsTorchvisionsResizeThenCenterCrop) {
  // 224 of 320x240: the short side to 256, the long one to floor(256 * 320 / 240) = 341; the
  // crop at left round(58.5) = 58 (half to even, as Python), top 16.
  Preprocessing pre = make_pre(3, 224, 224);
  pre.resize = Resize::resize_center_crop;
  const auto expect_window = [](const Affine2D& m, double fx, double left, double fy, double top) {
    EXPECT_DOUBLE_EQ(m.a, fx);
    EXPECT_DOUBLE_EQ(m.c, (left + 0.5) * fx - 0.5);
    EXPECT_DOUBLE_EQ(m.e, fy);
    EXPECT_DOUBLE_EQ(m.f, (top + 0.5) * fy - 0.5);
    EXPECT_EQ(m.b, 0.0);
    EXPECT_EQ(m.d, 0.0);
  };
  expect_window(base_transform(pre, 320, 240), 320.0 / 341.0, 58, 240.0 / 256.0, 16);
  expect_window(base_transform(pre, 240, 320), 240.0 / 256.0, 16, 320.0 / 341.0, 58);
  expect_window(base_transform(pre, 500, 500), 500.0 / 256.0, 16, 500.0 / 256.0, 16);
  expect_window(base_transform(pre, 100, 60), 100.0 / 426.0, 101, 60.0 / 256.0, 16);  // upscale
  // Through transform_sample on a horizontal ramp (bilinear is exact on it): 8 of 26x18 is
  // Resize(9) to 13x9, then the crop at left round(2.5) = 2: output x reads source
  // (x + 2.5) * 2 - 0.5, value 5 per source pixel.
  pre = make_pre(1, 8, 8);
  pre.resize = Resize::resize_center_crop;
  pre.rescale = 1.0f;
  Pixels ramp(26 * 18);
  for (std::int64_t y = 0; y < 18; ++y)
    for (std::int64_t x = 0; x < 26; ++x) ramp[static_cast<std::size_t>(y * 26 + x)] = 5 * x;
  const std::vector<float> out =
      run_transform(ImageView::chw(ramp.data(), 1, 18, 26), pre, nullptr, RandomStream(0, 0));
  for (std::int64_t y = 0; y < 8; ++y)
    for (std::int64_t x = 0; x < 8; ++x)
      EXPECT_FLOAT_EQ(out[static_cast<std::size_t>(y * 8 + x)],
                      5.0f * (2.0f * static_cast<float>(x) + 4.5f))
          << x << ", " << y;
  EXPECT_EQ(parse_resize(resize_name(Resize::resize_center_crop)), Resize::resize_center_crop);
  // And the decoder is asked for no less than the resized short side.
  const DecodeOptions hint = decode_hint(make_pre(3, 224, 224), nullptr);
  EXPECT_EQ(hint.min_width, 224);  // stretch: the model's size
  pre = make_pre(3, 224, 224);
  pre.resize = Resize::resize_center_crop;
  EXPECT_EQ(decode_hint(pre, nullptr).min_width, 256);
  EXPECT_EQ(decode_hint(pre, nullptr).min_height, 256);
}

TEST(AugmentTest, CropPaddingGivesZeroBordersAtEveryOffset) {
  const std::int64_t sw = 8, sh = 6;
  Pixels px(static_cast<std::size_t>(sw * sh), 200);
  Preprocessing pre = make_pre(1, sh, sw);
  pre.rescale = 1.0f;
  AugmentConfig cfg;
  cfg.crop_padding = 2;
  std::set<std::pair<int, int>> offsets;
  for (std::int64_t i = 0; i < 300; ++i) {
    RandomStream rng = sample_stream(1, 0, i);
    PhotometricDraw ph;
    const Affine2D m = sample_augmentation(cfg, pre, sw, sh, rng, ph);
    ASSERT_EQ(m.a, 1.0);
    ASSERT_EQ(m.e, 1.0);
    ASSERT_EQ(m.c, std::floor(m.c));
    ASSERT_EQ(m.f, std::floor(m.f));
    ASSERT_GE(m.c, -2);
    ASSERT_LE(m.c, 2);
    ASSERT_GE(m.f, -2);
    ASSERT_LE(m.f, 2);
    offsets.insert({static_cast<int>(m.c), static_cast<int>(m.f)});
    const std::vector<float> out =
        run_transform(ImageView::chw(px.data(), 1, sh, sw), pre, &cfg, sample_stream(1, 0, i));
    for (std::int64_t y = 0; y < sh; ++y)
      for (std::int64_t x = 0; x < sw; ++x) {
        const double sx = static_cast<double>(x) + m.c, sy = static_cast<double>(y) + m.f;
        const bool inside = sx >= 0 && sx < sw && sy >= 0 && sy < sh;
        ASSERT_EQ(out[static_cast<std::size_t>(y * sw + x)], inside ? 200.0f : 0.0f);
      }
  }
  EXPECT_EQ(offsets.size(), 25u);  // every (left, top) in [0, 4]^2
  // TensorFlow's random_crop (24x24 of 32x32, padding 0): an exact window at offsets 0..8.
  const Pixels big = random_pixels(3, 32, 32, 8);
  const Image big_hwc = to_hwc(big, 3, 32, 32);
  pre = make_pre(3, 24, 24);
  pre.rescale = 1.0f;
  cfg.crop_padding = 0;
  std::set<int> lefts;
  for (std::int64_t i = 0; i < 100; ++i) {
    RandomStream rng = sample_stream(2, 0, i);
    PhotometricDraw ph;
    const Affine2D m = sample_augmentation(cfg, pre, 32, 32, rng, ph);
    ASSERT_TRUE(m.c >= 0 && m.c <= 8 && m.f >= 0 && m.f <= 8);
    lefts.insert(static_cast<int>(m.c));
    const std::vector<float> out =
        run_transform(ImageView::of(big_hwc), pre, &cfg, sample_stream(2, 0, i));
    for (std::int64_t c = 0; c < 3; ++c)
      for (std::int64_t y = 0; y < 24; ++y)
        for (std::int64_t x = 0; x < 24; ++x)
          ASSERT_EQ(
              out[static_cast<std::size_t>((c * 24 + y) * 24 + x)],
              big[static_cast<std::size_t>((c * 32 + y + static_cast<std::int64_t>(m.f)) * 32 + x +
                                           static_cast<std::int64_t>(m.c))]);
  }
  EXPECT_EQ(lefts.size(), 9u);
  // A padded source smaller than the output is centred in it.
  pre = make_pre(1, 10, 10);
  cfg.crop_padding = 1;
  RandomStream rng = sample_stream(3, 0, 0);
  PhotometricDraw ph;
  const Affine2D m = sample_augmentation(cfg, pre, 4, 4, rng, ph);
  EXPECT_EQ(m.c, -3.0);
  EXPECT_EQ(m.f, -3.0);
}

TEST(AugmentTest, RandomResizedCropDrawsAreaAndRatioInRange) {
  AugmentConfig cfg;
  cfg.random_resized_crop = true;
  cfg.rrc_scale_min = 0.08f;
  cfg.rrc_scale_max = 0.5f;  // every first attempt fits a 1000x1000 source
  const Preprocessing pre = make_pre(3, 32, 32);
  const int n = 4000;
  double area_sum = 0;
  int below_quartile = 0, wide = 0;
  for (int i = 0; i < n; ++i) {
    RandomStream rng = sample_stream(4, 0, i);
    PhotometricDraw ph;
    const Affine2D m = sample_augmentation(cfg, pre, 1000, 1000, rng, ph);
    ASSERT_EQ(rng.position(), 34u);
    const double w = m.a * 32, h = m.e * 32;
    ASSERT_NEAR(w, std::round(w), 1e-9);
    ASSERT_NEAR(h, std::round(h), 1e-9);
    const double left = m.c - 0.5 * m.a + 0.5, top = m.f - 0.5 * m.e + 0.5;
    ASSERT_NEAR(left, std::round(left), 1e-9);
    ASSERT_GE(left, -1e-9);
    ASSERT_GE(top, -1e-9);
    ASSERT_LE(left + w, 1000 + 1e-9);
    ASSERT_LE(top + h, 1000 + 1e-9);
    const double area = w * h / 1e6, ratio = w / h;
    ASSERT_GE(area, 0.08 * 0.99);
    ASSERT_LE(area, 0.5 * 1.01);
    ASSERT_GE(ratio, 0.75 * 0.99);
    ASSERT_LE(ratio, 4.0 / 3.0 * 1.01);
    area_sum += area;
    if (area < 0.08 + 0.25 * 0.42) ++below_quartile;
    if (ratio > 1) ++wide;
  }
  EXPECT_NEAR(area_sum / n, 0.29, 0.01);  // uniform in [0.08, 0.5]
  EXPECT_NEAR(below_quartile / static_cast<double>(n), 0.25, 0.03);
  EXPECT_NEAR(wide / static_cast<double>(n), 0.5, 0.04);  // log-uniform ratio, symmetric
  // No attempt fits: the central crop with the ratio clamped into range.
  cfg.rrc_scale_min = cfg.rrc_scale_max = 1.0f;
  cfg.rrc_ratio_min = 2.0f;
  cfg.rrc_ratio_max = 3.0f;
  RandomStream rng(1, 1);
  PhotometricDraw ph;
  Affine2D m = sample_augmentation(cfg, pre, 60, 40, rng, ph);
  EXPECT_DOUBLE_EQ(m.a * 32, 60.0);
  EXPECT_DOUBLE_EQ(m.e * 32, 30.0);
  EXPECT_DOUBLE_EQ(m.f - 0.5 * m.e + 0.5, 5.0);
  EXPECT_EQ(rng.position(), 34u);
  cfg.rrc_ratio_min = 0.2f;
  cfg.rrc_ratio_max = 0.5f;
  m = sample_augmentation(cfg, pre, 60, 40, rng, ph);
  EXPECT_DOUBLE_EQ(m.a * 32, 20.0);
  EXPECT_DOUBLE_EQ(m.e * 32, 40.0);
  EXPECT_DOUBLE_EQ(m.c - 0.5 * m.a + 0.5, 20.0);
  EXPECT_EQ(rng.position(), 68u);
}

TEST(AugmentTest, BrightnessAndContrastFormulas) {
  const std::int64_t h = 6, w = 8, plane = h * w;
  // Channel 0: a constant 100; channel 1: columns alternating 20 / 60 (mean 40).
  Pixels px(static_cast<std::size_t>(2 * plane));
  for (std::int64_t k = 0; k < plane; ++k) {
    px[static_cast<std::size_t>(k)] = 100;
    px[static_cast<std::size_t>(plane + k)] = (k % 2) ? 60 : 20;
  }
  Pixels rgb(static_cast<std::size_t>(3 * plane));
  std::copy(px.begin(), px.end(), rgb.begin());
  std::fill(rgb.begin() + 2 * plane, rgb.end(), 7);
  Preprocessing pre = make_pre(3, h, w);
  pre.rescale = 0.5f;
  AugmentConfig cfg;
  cfg.brightness = 30;
  cfg.contrast_min = 0.2f;
  cfg.contrast_max = 1.8f;
  float lo = 1e9f, hi = -1e9f;
  for (std::int64_t i = 0; i < 60; ++i) {
    RandomStream probe = sample_stream(6, 0, i);
    PhotometricDraw ph;
    sample_augmentation(cfg, pre, w, h, probe, ph);
    ASSERT_LE(std::abs(ph.brightness_delta), 30.0f);
    ASSERT_GE(ph.contrast_factor, 0.2f);
    ASSERT_LE(ph.contrast_factor, 1.8f);
    lo = std::min(lo, ph.brightness_delta);
    hi = std::max(hi, ph.brightness_delta);
    const float d = ph.brightness_delta, f = ph.contrast_factor;
    const std::vector<float> out =
        run_transform(ImageView::chw(rgb.data(), 3, h, w), pre, &cfg, sample_stream(6, 0, i));
    for (std::int64_t k = 0; k < plane; ++k) {
      // A constant channel is unchanged by contrast: (100 + d) * 0.5.
      ASSERT_NEAR(out[static_cast<std::size_t>(k)], (100 + d) * 0.5f, 1e-3f);
      const float v = (k % 2) ? 60.0f : 20.0f;
      ASSERT_NEAR(out[static_cast<std::size_t>(plane + k)], ((v - 40) * f + 40 + d) * 0.5f, 1e-3f);
      ASSERT_NEAR(out[static_cast<std::size_t>(2 * plane + k)], (7 + d) * 0.5f, 1e-3f);
    }
  }
  EXPECT_LT(lo, -10.0f);
  EXPECT_GT(hi, 10.0f);
  // No clamping: a dark image can go negative.
  cfg.contrast_min = cfg.contrast_max = 1.0f;
  std::fill(rgb.begin(), rgb.end(), 0);
  bool negative = false;
  for (std::int64_t i = 0; i < 20; ++i) {
    const std::vector<float> out =
        run_transform(ImageView::chw(rgb.data(), 3, h, w), pre, &cfg, sample_stream(6, 1, i));
    negative = negative || out[0] < 0;
  }
  EXPECT_TRUE(negative);
}

TEST(AugmentTest, GrayToRgbAndRgbToGray) {
  const std::int64_t h = 5, w = 7;
  const Pixels gray = random_pixels(1, h, w, 30);
  std::vector<float> out =
      run_warp(ImageView::chw(gray.data(), 1, h, w), Affine2D{}, false, 3, h, w);
  for (std::int64_t c = 0; c < 3; ++c)
    for (std::int64_t k = 0; k < h * w; ++k)
      ASSERT_EQ(out[static_cast<std::size_t>(c * h * w + k)], gray[static_cast<std::size_t>(k)]);
  const Pixels rgb = random_pixels(3, h, w, 31);
  const Image rgb_hwc = to_hwc(rgb, 3, h, w);
  Preprocessing pre = make_pre(1, h, w);
  pre.rescale = 1.0f;
  for (const ImageView& v : {ImageView::chw(rgb.data(), 3, h, w), ImageView::of(rgb_hwc)}) {
    out = run_transform(v, pre, nullptr, RandomStream(0, 0));
    for (std::int64_t k = 0; k < h * w; ++k) {
      const auto s = static_cast<std::size_t>(k);
      const auto p = static_cast<std::size_t>(h * w);
      ASSERT_NEAR(out[s], 0.299 * rgb[s] + 0.587 * rgb[p + s] + 0.114 * rgb[2 * p + s], 1e-3);
    }
  }
  // Gray source, RGB model: replicated, then preprocessed like the replicated u8 image.
  pre = make_pre(3, h, w);
  pre.mean = {0.1f, 0.2f, 0.3f};
  pre.std = {0.5f, 0.6f, 0.7f};
  Pixels replicated;
  for (int c = 0; c < 3; ++c) replicated.insert(replicated.end(), gray.begin(), gray.end());
  EXPECT_TRUE(bitwise_equal(
      run_transform(ImageView::chw(gray.data(), 1, h, w), pre, nullptr, RandomStream(0, 0)),
      run_preprocess(pre, replicated)));
}

TEST(AugmentTest, FillNearestAndConstant) {
  const std::int64_t h = 5, w = 6;
  Pixels px(static_cast<std::size_t>(h * w));
  for (std::int64_t k = 0; k < h * w; ++k)
    px[static_cast<std::size_t>(k)] = static_cast<std::uint8_t>(10 + 7 * k);
  const ImageView v = ImageView::chw(px.data(), 1, h, w);
  const auto src = [&](std::int64_t x, std::int64_t y) {
    return static_cast<float>(px[static_cast<std::size_t>(y * w + x)]);
  };
  // Integer shift right by 2 (the exact path) and by 2.5 (the bilinear path).
  std::vector<float> near = run_warp(v, Affine2D{1, 0, -2, 0, 1, 0}, false, 1, h, w);
  std::vector<float> cons = run_warp(v, Affine2D{1, 0, -2, 0, 1, 0}, true, 1, h, w);
  for (std::int64_t y = 0; y < h; ++y)
    for (std::int64_t x = 0; x < w; ++x) {
      const auto k = static_cast<std::size_t>(y * w + x);
      EXPECT_EQ(near[k], src(std::max<std::int64_t>(x - 2, 0), y));
      EXPECT_EQ(cons[k], x >= 2 ? src(x - 2, y) : 0.0f);
    }
  near = run_warp(v, Affine2D{1, 0, -2.5, 0, 1, 0.5}, false, 1, h, w);
  cons = run_warp(v, Affine2D{1, 0, -2.5, 0, 1, 0.5}, true, 1, h, w);
  for (std::int64_t y = 0; y < h; ++y) {
    const std::int64_t y1 = std::min(y + 1, h - 1);
    const auto row = [&](std::int64_t x) { return 0.5f * (src(x, y) + src(x, y1)); };
    const auto k = static_cast<std::size_t>(y * w);
    EXPECT_NEAR(near[k + 0], row(0), 1e-4);
    EXPECT_NEAR(near[k + 2], row(0), 1e-4);
    EXPECT_NEAR(near[k + 3], 0.5f * (row(0) + row(1)), 1e-4);
    EXPECT_EQ(cons[k + 1], 0.0f);
    const float half_edge = y + 1 < h ? row(0) : 0.5f * src(0, y);
    EXPECT_NEAR(cons[k + 2], 0.5f * half_edge, 1e-4);
    EXPECT_NEAR(cons[k + 3], y + 1 < h ? 0.5f * (row(0) + row(1)) : 0.25f * (src(0, y) + src(1, y)),
                1e-4);
  }
  // transform_sample: crop padding always fills with 0, whatever fill_mode says.
  AugmentConfig cfg;
  cfg.crop_padding = 3;
  Preprocessing pre = make_pre(1, h, w);
  pre.rescale = 1.0f;
  int zero_seen = 0;
  for (std::int64_t i = 0; i < 20; ++i) {
    const std::vector<float> out = run_transform(v, pre, &cfg, sample_stream(8, 0, i));
    zero_seen += static_cast<int>(std::count(out.begin(), out.end(), 0.0f));
  }
  EXPECT_GT(zero_seen, 0);
}

TEST(AugmentTest, SampleStreamsAreDeterministicAndIndependent) {
  const auto words = [](RandomStream s) {
    std::vector<std::uint32_t> v;
    for (int i = 0; i < 8; ++i) v.push_back(s.next_bits());
    return v;
  };
  EXPECT_EQ(words(sample_stream(1, 2, 3)), words(sample_stream(1, 2, 3)));
  EXPECT_NE(words(sample_stream(1, 2, 3)), words(sample_stream(1, 2, 4)));
  EXPECT_NE(words(sample_stream(1, 2, 3)), words(sample_stream(1, 3, 3)));
  EXPECT_NE(words(sample_stream(1, 2, 3)), words(sample_stream(2, 2, 3)));
  EXPECT_NE(words(sample_stream(1, 0, 1)), words(sample_stream(1, 1, 0)));
  // Different indices give different augmentations; the same index the same output.
  AugmentConfig cfg;
  cfg.shear = 0.2f;
  cfg.zoom = 0.2f;
  cfg.horizontal_flip = true;
  cfg.brightness = 10;
  const Pixels px = random_pixels(3, 30, 40, 12);
  const Image hwc = to_hwc(px, 3, 30, 40);
  const Preprocessing pre = make_pre(3, 16, 16);
  std::set<std::vector<float>> distinct;
  for (std::int64_t i = 0; i < 10; ++i) {
    const std::vector<float> a =
        run_transform(ImageView::of(hwc), pre, &cfg, sample_stream(5, 1, i));
    EXPECT_TRUE(
        bitwise_equal(a, run_transform(ImageView::of(hwc), pre, &cfg, sample_stream(5, 1, i))));
    distinct.insert(a);
  }
  EXPECT_EQ(distinct.size(), 10u);
}

TEST(AugmentTest, EachOptionOwnsItsDraws) {
  AugmentConfig photometric_only;
  photometric_only.brightness = 20;
  photometric_only.contrast_min = 0.5f;
  photometric_only.contrast_max = 1.5f;
  AugmentConfig everything = photometric_only;
  everything.random_resized_crop = true;
  everything.rotation_deg = 10;
  everything.shear = 0.2f;
  everything.zoom = 0.1f;
  everything.horizontal_flip = true;
  const Preprocessing pre = make_pre(3, 16, 16);
  for (std::int64_t i = 0; i < 10; ++i) {
    RandomStream r1 = sample_stream(1, 0, i), r2 = sample_stream(1, 0, i);
    PhotometricDraw p1, p2;
    sample_augmentation(photometric_only, pre, 40, 30, r1, p1);
    sample_augmentation(everything, pre, 40, 30, r2, p2);
    EXPECT_EQ(p1.brightness_delta, p2.brightness_delta);
    EXPECT_EQ(p1.contrast_factor, p2.contrast_factor);
    EXPECT_EQ(r1.position(), 34u);
    EXPECT_EQ(r2.position(), 34u);
  }
  // A disabled config draws nothing and returns the base transform.
  RandomStream rng(3, 4);
  PhotometricDraw ph;
  const Affine2D m = sample_augmentation(AugmentConfig{}, pre, 32, 32, rng, ph);
  const Affine2D base = base_transform(pre, 32, 32);
  EXPECT_EQ(m.a, base.a);
  EXPECT_EQ(m.c, base.c);
  EXPECT_EQ(ph.brightness_delta, 0.0f);
  EXPECT_EQ(ph.contrast_factor, 1.0f);
}

TEST(AugmentTest, ValidateRejectsBadConfigs) {
  EXPECT_NO_THROW(AugmentConfig{}.validate());
  const std::vector<void (*)(AugmentConfig&)> bad = {
      [](AugmentConfig& c) { c.rotation_deg = -1; },
      [](AugmentConfig& c) { c.width_shift = -0.1f; },
      [](AugmentConfig& c) { c.height_shift = NAN; },
      [](AugmentConfig& c) { c.shear = -0.2f; },
      [](AugmentConfig& c) { c.zoom = 1.0f; },
      [](AugmentConfig& c) { c.zoom = -0.1f; },
      [](AugmentConfig& c) { c.crop_padding = -2; },
      [](AugmentConfig& c) {
        c.crop_padding = 4;
        c.random_resized_crop = true;
      },
      [](AugmentConfig& c) { c.rrc_scale_min = 0; },
      [](AugmentConfig& c) { c.rrc_scale_min = 0.9f, c.rrc_scale_max = 0.5f; },
      [](AugmentConfig& c) { c.rrc_scale_max = 1.5f; },
      [](AugmentConfig& c) { c.rrc_ratio_min = 0; },
      [](AugmentConfig& c) { c.rrc_ratio_min = 2, c.rrc_ratio_max = 1; },
      [](AugmentConfig& c) { c.fill_mode = static_cast<FillMode>(7); },
      [](AugmentConfig& c) { c.brightness = -1; },
      [](AugmentConfig& c) { c.contrast_min = 1.5f, c.contrast_max = 0.5f; },
      [](AugmentConfig& c) { c.contrast_min = -0.5f; },
      [](AugmentConfig& c) { c.contrast_max = INFINITY; },
  };
  for (std::size_t i = 0; i < bad.size(); ++i) {
    AugmentConfig c;
    bad[i](c);
    EXPECT_THROW(c.validate(), ConfigError) << "case " << i;
  }
  AugmentConfig good;
  good.crop_padding = 4;
  good.fill_mode = FillMode::constant;
  good.contrast_min = 0.2f;
  good.contrast_max = 1.8f;
  EXPECT_NO_THROW(good.validate());
}

TEST(AugmentTest, JsonRoundTrip) {
  AugmentConfig cfg;
  cfg.rotation_deg = 12.5f;
  cfg.width_shift = 0.1f;
  cfg.height_shift = 0.2f;
  cfg.shear = 0.2f;
  cfg.zoom = 0.3f;
  cfg.horizontal_flip = true;
  cfg.vertical_flip = true;
  cfg.random_resized_crop = true;
  cfg.rrc_scale_min = 0.3f;
  cfg.rrc_ratio_max = 1.7f;
  cfg.fill_mode = FillMode::constant;
  cfg.brightness = 63;
  cfg.contrast_min = 0.2f;
  cfg.contrast_max = 1.8f;
  EXPECT_EQ(AugmentConfig::from_json(cfg.to_json()), cfg);
  EXPECT_EQ(AugmentConfig::from_json(nlohmann::json::parse(cfg.to_json().dump())), cfg);
  AugmentConfig crop;
  crop.crop_padding = 4;
  EXPECT_EQ(AugmentConfig::from_json(nlohmann::json::parse(crop.to_json().dump())), crop);
  EXPECT_EQ(AugmentConfig::from_json(nlohmann::json::object()), AugmentConfig{});
  const AugmentConfig partial = AugmentConfig::from_json(nlohmann::json::parse(R"({"shear":0.2})"));
  EXPECT_EQ(partial.shear, 0.2f);
  EXPECT_EQ(partial.fill_mode, FillMode::nearest);
  EXPECT_FALSE(partial.horizontal_flip);
  for (const char* text :
       {R"({"shear":"big"})", R"({"horizontal_flip":1})", R"({"crop_padding":2.5})",
        R"({"fill_mode":3})", R"({"fill_mode":"reflect"})", R"({"sheer":0.2})", R"({"zoom":1.5})",
        R"([1,2])"})
    EXPECT_THROW(AugmentConfig::from_json(nlohmann::json::parse(text)), ConfigError) << text;
  EXPECT_THROW(parse_fill_mode("reflect"), ConfigError);
  EXPECT_EQ(parse_fill_mode(fill_mode_name(FillMode::constant)), FillMode::constant);
  EXPECT_THROW(parse_resize("squash"), ConfigError);
  EXPECT_EQ(parse_resize(resize_name(Resize::center_crop)), Resize::center_crop);
}

TEST(AugmentTest, Describe) {
  EXPECT_EQ(AugmentConfig{}.describe(), "none");
  AugmentConfig cfg;
  cfg.shear = 0.2f;
  cfg.zoom = 0.2f;
  cfg.horizontal_flip = true;
  EXPECT_EQ(cfg.describe(), "shear 0.2, zoom 0.2, horizontal flip");
  AugmentConfig tf;
  tf.crop_padding = 0;
  tf.horizontal_flip = true;
  tf.brightness = 63;
  tf.contrast_min = 0.2f;
  tf.contrast_max = 1.8f;
  EXPECT_EQ(tf.describe(),
            "random crop (padding 0), horizontal flip, brightness 63, contrast 0.2-1.8");
  AugmentConfig rrc;
  rrc.random_resized_crop = true;
  rrc.rotation_deg = 15;
  rrc.fill_mode = FillMode::constant;
  EXPECT_EQ(rrc.describe(),
            "random resized crop (scale 0.08-1, ratio 0.75-1.33333), rotation 15 deg, "
            "fill constant");
}

TEST(AugmentTest, BadArgumentsThrow) {
  const Pixels px = random_pixels(3, 4, 4, 1);
  std::vector<float> out(64);
  const ImageView v = ImageView::chw(px.data(), 3, 4, 4);
  EXPECT_THROW(warp_affine_bilinear(v, Affine2D{}, false, 2, 4, 4, out.data()), InvalidArgument);
  EXPECT_THROW(warp_affine_bilinear(v, Affine2D{}, false, 3, 0, 4, out.data()), InvalidArgument);
  EXPECT_THROW(warp_affine_bilinear(ImageView{}, Affine2D{}, false, 3, 4, 4, out.data()),
               InvalidArgument);
  EXPECT_THROW(warp_affine_bilinear(v, Affine2D{NAN, 0, 0, 0, 1, 0}, false, 3, 4, 4, out.data()),
               InvalidArgument);
  ImageView four = ImageView::chw(px.data(), 3, 4, 4);
  four.channels = 4;
  EXPECT_THROW(warp_affine_bilinear(four, Affine2D{}, false, 3, 4, 4, out.data()), InvalidArgument);
  Preprocessing pre = make_pre(2, 4, 4);
  RandomStream rng(0, 0);
  EXPECT_THROW(transform_sample(v, pre, nullptr, rng, out.data()), InvalidArgument);
}

/// FNV-1a of the bytes of some floats.
std::uint64_t checksum(const std::vector<float>& v, std::uint64_t h = 1469598103934665603ull) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(v.data());
  for (std::size_t i = 0; i < v.size() * sizeof(float); ++i) h = (h ^ bytes[i]) * 1099511628211ull;
  return h;
}

/// transform_sample's exact output for fixed seeds under configs that together use every
/// augmentation (both crops, every Keras transform, flips, both fill modes, brightness and
/// contrast) and every warp path (integer, AVX2 and portable bilinear, channel conversions),
/// pinned so that a change of the arithmetic, the draws or their order shows. The values are
/// those of the Release build of the default target (GCC, -O3, baseline x86-64: the draws,
/// RandomStream::uniform(lo, hi) included, are not contracted to FMA) with its kernels at
/// x86-64-v3 or x86-64-v4 (AVX2 gathers, FMA; both give these values); other builds, an
/// EPOCH_MARCH one and the baseline level contract and vectorize the floating point
/// differently and skip. (Last change: the baseline target, 2026-12-08.)
TEST(AugmentTest, PinnedOutputChecksums) {
#if !(defined(__GNUC__) && !defined(__clang__) && defined(__OPTIMIZE__) && defined(NDEBUG)) || \
    defined(__AVX__)
  GTEST_SKIP() << "checksums pinned for the GCC Release build (-O3) of the default target";
#endif
  if (static_cast<int>(active_cpu_isa()) < static_cast<int>(CpuIsa::x86_64_v3))
    GTEST_SKIP() << "checksums pinned for the x86-64-v3 and x86-64-v4 levels (this process runs "
                 << cpu_isa_name(active_cpu_isa()) << ")";
  AugmentConfig keras;
  keras.rotation_deg = 15;
  keras.width_shift = 0.1f;
  keras.height_shift = 0.15f;
  keras.shear = 0.2f;
  keras.zoom = 0.2f;
  keras.horizontal_flip = true;
  keras.vertical_flip = true;
  keras.brightness = 20;
  keras.contrast_min = 0.6f;
  keras.contrast_max = 1.4f;
  AugmentConfig rrc = keras;
  rrc.random_resized_crop = true;
  rrc.rrc_scale_min = 0.3f;
  rrc.fill_mode = FillMode::constant;
  AugmentConfig padded = keras;
  padded.crop_padding = 4;
  AugmentConfig exact;  // whole-pixel moves only: the integer path
  exact.crop_padding = 3;
  exact.horizontal_flip = true;
  exact.vertical_flip = true;

  const Pixels rgb = random_pixels(3, 94, 125, 21);
  const Image rgb_hwc = to_hwc(rgb, 3, 94, 125);
  const Pixels gray = random_pixels(1, 37, 29, 22);
  Preprocessing rgb_out = make_pre(3, 64, 64);
  rgb_out.mean = {0.5f, 0.4f, 0.3f};
  rgb_out.std = {0.2f, 0.25f, 0.3f};
  Preprocessing gray_out = make_pre(1, 27, 21);
  gray_out.standardize = true;
  Preprocessing crop_out = make_pre(3, 24, 24);
  crop_out.resize = Resize::center_crop;

  struct Case {
    const char* name;
    ImageView src;
    const Preprocessing* pre;
    const AugmentConfig* cfg;
    std::uint64_t expected;
  };
  const Case cases[] = {
      {"keras rgb hwc", ImageView::of(rgb_hwc), &rgb_out, &keras, 12292703262422337517ull},
      {"rrc rgb chw", ImageView::chw(rgb.data(), 3, 94, 125), &rgb_out, &rrc,
       8600706755012242385ull},
      {"padded rgb -> gray", ImageView::of(rgb_hwc), &gray_out, &padded, 5100388995917930160ull},
      {"keras gray -> rgb", ImageView::chw(gray.data(), 1, 37, 29), &crop_out, &keras,
       3236787227531869976ull},
      {"rrc gray -> gray", ImageView::chw(gray.data(), 1, 37, 29), &gray_out, &rrc,
       6787919887668093812ull},
      {"exact rgb", ImageView::of(rgb_hwc), &crop_out, &exact, 9476725689168136545ull},
      {"none center crop", ImageView::of(rgb_hwc), &crop_out, nullptr, 3555905415694800067ull},
  };
  for (const Case& c : cases) {
    std::uint64_t h = 1469598103934665603ull;
    for (std::int64_t i = 0; i < 8; ++i)
      h = checksum(run_transform(c.src, *c.pre, c.cfg, sample_stream(7, 2, i)), h);
    EXPECT_EQ(h, c.expected) << c.name;
  }
}

/// Timings for the report (run with --gtest_also_run_disabled_tests); asserts nothing.
TEST(AugmentTest, DISABLED_Timing) {
  const Pixels px = random_pixels(3, 94, 125, 1);
  const Image hwc = to_hwc(px, 3, 94, 125);
  const Preprocessing pre = make_pre(3, 64, 64);
  std::vector<float> out(3 * 64 * 64);
  AugmentConfig keras;
  keras.shear = 0.2f;
  keras.zoom = 0.2f;
  keras.horizontal_flip = true;
  AugmentConfig flip_only;
  flip_only.horizontal_flip = true;
  AugmentConfig rrc;
  rrc.random_resized_crop = true;
  rrc.horizontal_flip = true;
  AugmentConfig tf;
  tf.crop_padding = 0;
  tf.horizontal_flip = true;
  tf.brightness = 63;
  tf.contrast_min = 0.2f;
  tf.contrast_max = 1.8f;
  Preprocessing tf_pre = make_pre(3, 24, 24);
  tf_pre.standardize = true;
  const Preprocessing tf_plain = make_pre(3, 24, 24);
  const Pixels cifar = random_pixels(3, 32, 32, 2);
  const Preprocessing same = make_pre(3, 94, 125);
  struct Case {
    const char* name;
    ImageView src;
    const Preprocessing* pre;
    const AugmentConfig* cfg;
  };
  const Case cases[] = {
      {"125x94 HWC -> 64x64 shear+zoom+flip", ImageView::of(hwc), &pre, &keras},
      {"125x94 HWC -> 64x64 resize only", ImageView::of(hwc), &pre, nullptr},
      {"125x94 HWC -> 64x64 random resized crop+flip", ImageView::of(hwc), &pre, &rrc},
      {"125x94 HWC -> 125x94 identity", ImageView::of(hwc), &same, nullptr},
      {"125x94 HWC -> 125x94 flip", ImageView::of(hwc), &same, &flip_only},
      {"32x32 CHW -> 24x24 cifar10-tf", ImageView::chw(cifar.data(), 3, 32, 32), &tf_pre, &tf},
      {"32x32 CHW -> 24x24 cifar10-tf, no standardize", ImageView::chw(cifar.data(), 3, 32, 32),
       &tf_plain, &tf},
  };
  out.resize(3 * 94 * 125);
  for (const Case& k : cases) {
    // The best of 20 batches: the machine may be shared.
    double us = 1e30;
    for (int batch = 0; batch < 20; ++batch) {
      const int reps = 500;
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < reps; ++i) {
        RandomStream rng = sample_stream(1, 0, batch * reps + i);
        transform_sample(k.src, *k.pre, k.cfg, rng, out.data());
      }
      const auto t1 = std::chrono::steady_clock::now();
      us = std::min(us, std::chrono::duration<double, std::micro>(t1 - t0).count() / reps);
    }
    std::printf("%-48s %8.2f us/sample\n", k.name, us);
  }
}

}  // namespace
}  // namespace epoch::data
