// Internal to the data layer: what the generators of `epoch data synth` share. Colour draws, a
// subject's local frame, the backgrounds (generic and class-typical scenes, clutter, texture)
// and the lighting of a finished image. Every draw is its own statement, so the order of the
// random stream never depends on the compiler.
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <span>

#include "data/synth_draw.h"
#include "epoch/tensor/random.h"

namespace epoch::data::synth {

using draw::Box;
using draw::Canvas;
using draw::Paint;
using draw::Rgb;
using draw::Vec2;

inline constexpr float kPi = 3.14159265358979f;

inline float deg(float d) { return d * kPi / 180.0f; }

/// Draws hue, then saturation, then value (in that order) and returns the colour.
inline Rgb draw_hsv(RandomStream& rng, float h0, float h1, float s0, float s1, float v0, float v1) {
  const float h = rng.uniform(h0, h1);
  const float s = rng.uniform(s0, s1);
  const float v = rng.uniform(v0, v1);
  return draw::hsv(h, s, v);
}

inline bool chance(RandomStream& rng, float p) { return rng.uniform() < p; }

inline Rgb scale(Rgb c, float s) { return c * s; }

/// A subject's frame: local coordinates (y down, the subject facing +x) scaled by `unit`
/// pixels, mirrored when `flip`, turned by `angle` and centred on `centre`.
class Frame {
 public:
  Frame(Vec2 centre, float unit, float angle, bool flip)
      : c_(centre),
        unit_(unit),
        angle_(angle),
        cs_(std::cos(angle)),
        sn_(std::sin(angle)),
        flip_(flip) {}

  Vec2 at(float x, float y) const {
    const float lx = flip_ ? -x : x;
    return {c_.x + unit_ * (lx * cs_ - y * sn_), c_.y + unit_ * (lx * sn_ + y * cs_)};
  }
  Vec2 at(Vec2 p) const { return at(p.x, p.y); }
  /// Pixel -> local coordinates (the inverse of at()).
  Vec2 local(Vec2 p) const {
    const float dx = (p.x - c_.x) / unit_, dy = (p.y - c_.y) / unit_;
    const float lx = dx * cs_ + dy * sn_, ly = dy * cs_ - dx * sn_;
    return {flip_ ? -lx : lx, ly};
  }
  float len(float l) const { return l * unit_; }
  float unit() const { return unit_; }
  /// A local direction angle (radians from +x towards +y) in pixel space.
  float dir(float a) const { return (flip_ ? kPi - a : a) + angle_; }
  Vec2 centre() const { return c_; }

  draw::Ellipse ellipse_px(float x, float y, float rx, float ry, float a) const {
    return {at(x, y), len(rx), len(ry), dir(a)};
  }
  void ellipse(Canvas& cv, float x, float y, float rx, float ry, float a, const Paint& p,
               float alpha = 1.0f) const {
    draw::fill_ellipse(cv, ellipse_px(x, y, rx, ry, a), p, alpha);
  }
  void circle(Canvas& cv, float x, float y, float r, const Paint& p, float alpha = 1.0f) const {
    ellipse(cv, x, y, r, r, 0.0f, p, alpha);
  }
  void poly(Canvas& cv, std::initializer_list<Vec2> pts, const Paint& p, float alpha = 1.0f) const {
    Vec2 px[8];
    std::size_t n = 0;
    for (const Vec2& q : pts)
      if (n < 8) px[n++] = at(q);
    draw::fill_polygon(cv, std::span<const Vec2>(px, n), p, alpha);
  }
  void line(Canvas& cv, float x0, float y0, float x1, float y1, float r, const Paint& p,
            float alpha = 1.0f) const {
    draw::fill_capsule(cv, at(x0, y0), at(x1, y1), len(r), p, alpha);
  }
  /// An arc of radius r around (x, y), its middle in local direction `a`.
  void arc(Canvas& cv, float x, float y, float r, float a, float half, float w, const Paint& p,
           float alpha = 1.0f) const {
    draw::stroke_arc(cv, at(x, y), len(r), dir(a), half, len(w), p, alpha);
  }
  /// A linear gradient between two local points.
  Paint gradient(Rgb c0, Rgb c1, float x0, float y0, float x1, float y1) const {
    return Paint::gradient(c0, c1, at(x0, y0), at(x1, y1));
  }

 private:
  Vec2 c_;
  float unit_, angle_, cs_, sn_;
  bool flip_;
};

/// The backgrounds: any (gradients, texture, stripes, clutter) or a class-typical place.
enum class Scene { any, sky, indoor, road, water, grass, forest };

inline Rgb random_muted(RandomStream& rng) {
  return draw_hsv(rng, 0, 360, 0.05f, 0.6f, 0.25f, 0.95f);
}

/// Generic clutter: ellipses, rotated boxes and lines of random colours; `blobs` false keeps
/// only lines (where ellipses and boxes would look like a class's subject).
void clutter(Canvas& cv, RandomStream& rng, int count, bool blobs);

/// Soft textures over whatever is on the canvas: large blotches and fine grain-like noise.
void texture(Canvas& cv, RandomStream& rng);

/// Paints a whole background; `horizon` (pixels) places the ground line of outdoor scenes.
void paint_scene(Canvas& cv, RandomStream& rng, Scene scene, float horizon);

/// Brightness, contrast, colour cast and grain of one image.
draw::Finish lighting(RandomStream& rng, std::int64_t downsample);

}  // namespace epoch::data::synth
