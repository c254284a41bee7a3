// Internal to the data layer: the tiny anti-aliased rasterizer behind `epoch data synth`. Shapes
// are signed-distance functions in pixel coordinates (coverage = clamp(0.5 - distance)), painted
// onto a float RGB canvas (0-255) that is finished into an 8-bit image (lighting, grain, an
// optional box-filter downsample for images drawn at a multiple of their size).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "epoch/data/image.h"
#include "epoch/tensor/random.h"

namespace epoch::data::draw {

struct Vec2 {
  float x = 0, y = 0;
};
inline Vec2 operator+(Vec2 a, Vec2 b) { return {a.x + b.x, a.y + b.y}; }
inline Vec2 operator-(Vec2 a, Vec2 b) { return {a.x - b.x, a.y - b.y}; }
inline Vec2 operator*(Vec2 a, float s) { return {a.x * s, a.y * s}; }
inline float dot(Vec2 a, Vec2 b) { return a.x * b.x + a.y * b.y; }
inline float length(Vec2 a) { return std::sqrt(dot(a, a)); }

/// A colour in 0-255 per channel (values outside are clamped when the image is finished).
struct Rgb {
  float r = 0, g = 0, b = 0;
};
inline Rgb operator*(Rgb c, float s) { return {c.r * s, c.g * s, c.b * s}; }
inline Rgb operator+(Rgb a, Rgb b) { return {a.r + b.r, a.g + b.g, a.b + b.b}; }
inline Rgb mix(Rgb a, Rgb b, float t) {
  return {a.r + (b.r - a.r) * t, a.g + (b.g - a.g) * t, a.b + (b.b - a.b) * t};
}
/// Hue in degrees, saturation and value in [0, 1].
Rgb hsv(float hue_deg, float saturation, float value);
/// Rec. 601 luma of a colour (0-255).
inline float luma(Rgb c) { return 0.299f * c.r + 0.587f * c.g + 0.114f * c.b; }

/// A pixel-aligned rectangle [x0, x1) x [y0, y1).
struct Box {
  std::int64_t x0 = 0, y0 = 0, x1 = 0, y1 = 0;
};
/// The pixels a shape spanning [lo, hi] (pixel coordinates) can touch, one pixel of margin for
/// the anti-aliasing band.
Box box_around(float x_lo, float y_lo, float x_hi, float y_hi);

/// A float RGB image (height, width, 3) in 0-255.
class Canvas {
 public:
  Canvas(std::int64_t width, std::int64_t height)
      : width_(width), height_(height), px_(static_cast<std::size_t>(width * height * 3), 0.0f) {}
  std::int64_t width() const { return width_; }
  std::int64_t height() const { return height_; }
  float* row(std::int64_t y) { return px_.data() + y * width_ * 3; }
  const float* row(std::int64_t y) const { return px_.data() + y * width_ * 3; }

  /// Blends colour(p) over every pixel whose centre p the shape covers: coverage
  /// clamp(0.5 - sdf(p), 0, 1) * alpha. sdf(p) is the signed distance in pixels (negative
  /// inside), colour(p) an Rgb; only pixels inside `box` are visited. Far from the outline the
  /// row is walked in steps of 0.4 |sdf| (every sdf used here is within 2.5x of the true
  /// distance there), fully covered or skipped without evaluating the sdf again.
  template <typename Sdf, typename Colour>
  void fill(Box box, const Sdf& sdf, const Colour& colour, float alpha = 1.0f) {
    box.x0 = std::max<std::int64_t>(box.x0, 0);
    box.y0 = std::max<std::int64_t>(box.y0, 0);
    box.x1 = std::min(box.x1, width_);
    box.y1 = std::min(box.y1, height_);
    for (std::int64_t y = box.y0; y < box.y1; ++y) {
      float* line = row(y);
      const float py = static_cast<float>(y) + 0.5f;
      for (std::int64_t x = box.x0; x < box.x1;) {
        const Vec2 p{static_cast<float>(x) + 0.5f, py};
        const float d = sdf(p);
        const auto run = std::max<std::int64_t>(static_cast<std::int64_t>(std::abs(d) * 0.4f), 1);
        if (d >= 0.5f) {
          x += run;
          continue;
        }
        const float cover = d <= -0.5f ? alpha : (0.5f - d) * alpha;
        const std::int64_t end = d <= -0.5f ? std::min(x + run, box.x1) : x + 1;
        for (; x < end; ++x) {
          const Rgb c = colour(Vec2{static_cast<float>(x) + 0.5f, py});
          float* q = line + x * 3;
          q[0] += (c.r - q[0]) * cover;
          q[1] += (c.g - q[1]) * cover;
          q[2] += (c.b - q[2]) * cover;
        }
      }
    }
  }

 private:
  std::int64_t width_, height_;
  std::vector<float> px_;
};

/// A solid colour, or a linear gradient from c0 at `origin` to c1 at origin + direction (the
/// colour is constant beyond either end).
struct Paint {
  Rgb c0, c1;
  Vec2 origin;
  Vec2 step;  // direction / |direction|^2, so t = dot(p - origin, step)
  bool solid = true;

  static Paint of(Rgb c) { return {c, c, {}, {}, true}; }
  static Paint gradient(Rgb c0, Rgb c1, Vec2 from, Vec2 to);
  Rgb operator()(Vec2 p) const {
    if (solid) return c0;
    return mix(c0, c1, std::clamp(dot(p - origin, step), 0.0f, 1.0f));
  }
};

// ---------------------------------------------------------------- signed distances (pixels)

/// A filled ellipse with radii rx, ry, its x axis turned by `angle` radians.
struct Ellipse {
  Vec2 c;
  float rx, ry, angle;
};
/// A convex polygon (either winding), at most 8 points.
class ConvexPolygon {
 public:
  explicit ConvexPolygon(std::span<const Vec2> points);
  float operator()(Vec2 p) const {
    float d = -1e30f;
    for (int i = 0; i < n_; ++i) d = std::max(d, p.x * nx_[i] + p.y * ny_[i] - off_[i]);
    return d;
  }
  Box box() const { return box_; }

 private:
  int n_ = 0;
  float nx_[8] = {}, ny_[8] = {}, off_[8] = {};
  Box box_;
};

/// Signed distance to a rotated ellipse (a first-order approximation, exact on the outline).
struct EllipseSdf {
  explicit EllipseSdf(const Ellipse& e);
  float operator()(Vec2 p) const {
    const float dx = p.x - cx_, dy = p.y - cy_;
    const float u = dx * cs_ + dy * sn_, v = dy * cs_ - dx * sn_;
    const float f = std::sqrt(u * u * irx2_ + v * v * iry2_);
    const float gx = u * irx2_, gy = v * iry2_;
    const float g = std::sqrt(gx * gx + gy * gy);
    return g > 1e-12f ? (f - 1.0f) * f / g : -rmin_;
  }
  Box box() const { return box_; }

 private:
  float cx_, cy_, cs_, sn_, irx2_, iry2_, rmin_;
  Box box_;
};

/// Signed distance to a thick segment with round caps (radius r).
struct CapsuleSdf {
  CapsuleSdf(Vec2 a, Vec2 b, float r);
  float operator()(Vec2 p) const {
    const Vec2 pa = p - a_;
    const float t = std::clamp(dot(pa, ab_) * inv_len2_, 0.0f, 1.0f);
    return length(pa - ab_ * t) - r_;
  }
  Box box() const { return box_; }

 private:
  Vec2 a_, ab_;
  float inv_len2_, r_;
  Box box_;
};

/// Signed distance to a circular arc of radius r (stroke half-width w) centred on direction
/// `dir` (radians, 0 = +x, pi/2 = +y downwards) with half-aperture `half` radians.
struct ArcSdf {
  ArcSdf(Vec2 c, float r, float dir, float half, float w);
  float operator()(Vec2 p) const {
    const Vec2 d = p - c_;
    // Into the arc's frame: its middle on +y.
    const float x = std::abs(d.x * ux_ + d.y * uy_), y = d.x * vx_ + d.y * vy_;
    if (x * ch_ - y * sh_ <= 0.0f) return std::abs(std::sqrt(x * x + y * y) - r_) - w_;
    const float ex = x - r_ * sh_, ey = y - r_ * ch_;
    return std::sqrt(ex * ex + ey * ey) - w_;
  }
  Box box() const { return box_; }

 private:
  Vec2 c_;
  float r_, w_, ux_, uy_, vx_, vy_, sh_, ch_;
  Box box_;
};

inline void fill_ellipse(Canvas& cv, const Ellipse& e, const Paint& paint, float alpha = 1.0f) {
  const EllipseSdf sdf(e);
  cv.fill(sdf.box(), sdf, paint, alpha);
}
inline void fill_polygon(Canvas& cv, std::span<const Vec2> points, const Paint& paint,
                         float alpha = 1.0f) {
  const ConvexPolygon sdf(points);
  cv.fill(sdf.box(), sdf, paint, alpha);
}
inline void fill_capsule(Canvas& cv, Vec2 a, Vec2 b, float r, const Paint& paint,
                         float alpha = 1.0f) {
  const CapsuleSdf sdf(a, b, r);
  cv.fill(sdf.box(), sdf, paint, alpha);
}
inline void stroke_arc(Canvas& cv, Vec2 c, float r, float dir, float half, float w,
                       const Paint& paint, float alpha = 1.0f) {
  const ArcSdf sdf(c, r, dir, half, w);
  cv.fill(sdf.box(), sdf, paint, alpha);
}

// ---------------------------------------------------------------- whole-canvas layers

/// Fills the canvas with a linear gradient from c0 to c1 across it along `angle` radians.
void linear_gradient(Canvas& cv, Rgb c0, Rgb c1, float angle);
/// Fills the canvas with a radial gradient: c0 at `centre`, c1 at distance `radius` and beyond.
void radial_gradient(Canvas& cv, Rgb c0, Rgb c1, Vec2 centre, float radius);
/// Blends `colour` over the canvas with a smooth value-noise mask of about `cells` cells
/// across the longer side, at most `alpha` strong; the noise lattice is drawn from `rng`.
void value_noise(Canvas& cv, RandomStream& rng, int cells, Rgb colour, float alpha);
/// Soft stripes of `colour` (period in pixels, direction `angle`) at most `alpha` strong.
void stripes(Canvas& cv, float period, float angle, Rgb colour, float alpha);

/// How the float canvas becomes 8-bit pixels.
struct Finish {
  std::int64_t downsample = 1;  // box filter of downsample x downsample canvas pixels
  float brightness = 0;         // added, 0-255 units
  float contrast = 1;           // about mid-grey 128
  Rgb gain{1, 1, 1};            // per-channel colour cast
  float grain = 0;              // amplitude of per-pixel noise, 0-255 units
  std::uint64_t grain_key = 0;  // the noise is a pure function of (grain_key, pixel)
};

/// The finished RGB image of (canvas size / downsample).
Image finish(const Canvas& cv, const Finish& f);

}  // namespace epoch::data::draw
