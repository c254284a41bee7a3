// `epoch data synth`: the drawn subjects of each kind (cat and dog faces, the ten CIFAR-10
// motifs, generic shape x pattern x colour classes), their scenes and lighting, and the writer
// of whole datasets as JPEG folders (plus CIFAR-10 binary files). Every image is a pure function
// of (kind, label, index, seed, size); every random draw comes from one Philox stream per image,
// each in its own statement so the order never depends on the compiler.
#include "epoch/data/synth.h"

#include <atomic>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <functional>
#include <limits>
#include <mutex>

#include "data/synth_draw.h"
#include "epoch/data/cifar10.h"
#include "epoch/data/image_codec.h"
#include "epoch/tensor/error.h"

namespace epoch::data {
namespace {

namespace fs = std::filesystem;
using draw::Box;
using draw::Canvas;
using draw::ConvexPolygon;
using draw::Paint;
using draw::Rgb;
using draw::Vec2;

constexpr float kPi = 3.14159265358979f;
constexpr std::int64_t kMinSize = 8, kMaxSize = 4096;  // a 4096^2 canvas is 200 MB of floats
constexpr std::int64_t kMaxImagenetClasses = 1000;

float deg(float d) { return d * kPi / 180.0f; }

/// Draws hue, then saturation, then value (in that order) and returns the colour.
Rgb draw_hsv(RandomStream& rng, float h0, float h1, float s0, float s1, float v0, float v1) {
  const float h = rng.uniform(h0, h1);
  const float s = rng.uniform(s0, s1);
  const float v = rng.uniform(v0, v1);
  return draw::hsv(h, s, v);
}

bool chance(RandomStream& rng, float p) { return rng.uniform() < p; }

Rgb scale(Rgb c, float s) { return c * s; }

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

// ---------------------------------------------------------------- scenes

enum class Scene { any, sky, indoor, road, water, grass, forest };

Rgb random_muted(RandomStream& rng) { return draw_hsv(rng, 0, 360, 0.05f, 0.6f, 0.25f, 0.95f); }

/// Generic clutter: ellipses, rotated boxes and lines of random colours; `blobs` false keeps
/// only lines (where ellipses and boxes would look like a class's subject).
void clutter(Canvas& cv, RandomStream& rng, int count, bool blobs) {
  const float w = static_cast<float>(cv.width()), h = static_cast<float>(cv.height());
  const float m = std::min(w, h);
  for (int i = 0; i < count; ++i) {
    const Rgb c = random_muted(rng);
    const float alpha = rng.uniform(0.35f, 0.95f);
    const Vec2 p{rng.uniform(0, w), rng.uniform(0, h)};
    const float size = rng.uniform(0.04f, 0.25f) * m;
    const float angle = rng.uniform(0, kPi);
    const auto type = blobs ? rng.below(3) : 2;
    if (type == 0) {
      const float aspect = rng.uniform(0.3f, 1.0f);
      draw::fill_ellipse(cv, {p, size, size * aspect, angle}, Paint::of(c), alpha);
    } else if (type == 1) {
      const float aspect = rng.uniform(0.2f, 1.0f);
      const Frame f(p, size, angle, false);
      Vec2 q[4] = {f.at(-1, -aspect), f.at(1, -aspect), f.at(1, aspect), f.at(-1, aspect)};
      draw::fill_polygon(cv, q, Paint::of(c), alpha);
    } else {
      const float thick = rng.uniform(0.004f, 0.02f) * m;
      const Vec2 d{std::cos(angle) * size * 2, std::sin(angle) * size * 2};
      draw::fill_capsule(cv, p - d, p + d, thick, Paint::of(c), alpha);
    }
  }
}

/// Soft textures over whatever is on the canvas: large blotches and fine grain-like noise.
void texture(Canvas& cv, RandomStream& rng) {
  if (chance(rng, 0.75f)) {
    const int cells = 2 + static_cast<int>(rng.below(6));
    const Rgb c = random_muted(rng);
    const float a = rng.uniform(0.15f, 0.55f);
    draw::value_noise(cv, rng, cells, c, a);
  }
  if (chance(rng, 0.5f)) {
    const int cells = 12 + static_cast<int>(rng.below(30));
    const Rgb c = random_muted(rng);
    const float a = rng.uniform(0.08f, 0.3f);
    draw::value_noise(cv, rng, cells, c, a);
  }
}

/// Sky from `top` to the horizon colour, with soft clouds.
void sky(Canvas& cv, RandomStream& rng) {
  const Rgb top = draw_hsv(rng, 195, 225, 0.35f, 0.75f, 0.6f, 0.95f);
  const Rgb low = draw_hsv(rng, 190, 215, 0.05f, 0.35f, 0.8f, 1.0f);
  const bool overcast = chance(rng, 0.2f);
  draw::linear_gradient(cv, overcast ? scale(low, 0.8f) : top, low, kPi / 2);
  const int cells = 3 + static_cast<int>(rng.below(5));
  const float a = rng.uniform(0.1f, overcast ? 0.8f : 0.6f);
  draw::value_noise(cv, rng, cells, Rgb{245, 245, 248}, a);
}

/// Fills the rows from `horizon` down with `c0` fading to `c1`.
void ground(Canvas& cv, float horizon, Rgb c0, Rgb c1) {
  const float w = static_cast<float>(cv.width()), h = static_cast<float>(cv.height());
  const Vec2 q[4] = {{-2, horizon}, {w + 2, horizon}, {w + 2, h + 2}, {-2, h + 2}};
  draw::fill_polygon(cv, q, Paint::gradient(c0, c1, {0, horizon}, {0, h}));
}

/// Paints a whole background; `horizon` (pixels) places the ground line of outdoor scenes.
void paint_scene(Canvas& cv, RandomStream& rng, Scene scene, float horizon) {
  const float w = static_cast<float>(cv.width()), h = static_cast<float>(cv.height());
  const float m = std::min(w, h);
  switch (scene) {
    case Scene::any: {
      const Rgb c0 = random_muted(rng);
      const Rgb c1 = random_muted(rng);
      if (chance(rng, 0.25f)) {
        const Vec2 centre{rng.uniform(0, w), rng.uniform(0, h)};
        draw::radial_gradient(cv, c0, c1, centre, rng.uniform(0.5f, 1.2f) * std::max(w, h));
      } else {
        draw::linear_gradient(cv, c0, c1, rng.uniform(0, 2 * kPi));
      }
      texture(cv, rng);
      if (chance(rng, 0.2f)) {
        const float period = rng.uniform(0.03f, 0.15f) * m;
        const float angle = rng.uniform(0, kPi);
        const Rgb c = random_muted(rng);
        draw::stripes(cv, period, angle, c, rng.uniform(0.1f, 0.35f));
      }
      clutter(cv, rng, 2 + static_cast<int>(rng.below(7)), true);
      return;
    }
    case Scene::indoor: {
      const Rgb wall = draw_hsv(rng, 20, 60, 0.05f, 0.35f, 0.5f, 0.95f);
      draw::linear_gradient(cv, wall, scale(wall, rng.uniform(0.6f, 0.95f)), rng.uniform(0, kPi));
      if (chance(rng, 0.4f)) {
        const float period = rng.uniform(0.04f, 0.12f) * m;
        const Rgb c = random_muted(rng);
        draw::stripes(cv, period, kPi * static_cast<float>(rng.below(2)) / 2, c, 0.2f);
      }
      const Rgb floor = draw_hsv(rng, 15, 45, 0.2f, 0.6f, 0.25f, 0.7f);
      ground(cv, horizon, floor, scale(floor, 0.8f));
      texture(cv, rng);
      clutter(cv, rng, 1 + static_cast<int>(rng.below(4)), true);
      return;
    }
    case Scene::sky:
      sky(cv, rng);
      if (chance(rng, 0.3f)) {
        const Rgb land = draw_hsv(rng, 60, 140, 0.2f, 0.6f, 0.2f, 0.6f);
        ground(cv, h * rng.uniform(0.8f, 0.95f), land, scale(land, 0.8f));
      }
      return;
    case Scene::road: {
      sky(cv, rng);
      for (int i = 0, n = static_cast<int>(rng.below(5)); i < n; ++i) {  // buildings
        const float x = rng.uniform(0, w), bw = rng.uniform(0.1f, 0.3f) * w;
        const float top = horizon - rng.uniform(0.1f, 0.5f) * h;
        const Rgb c = draw_hsv(rng, 0, 360, 0.0f, 0.25f, 0.3f, 0.85f);
        const Vec2 q[4] = {{x, top}, {x + bw, top}, {x + bw, horizon + 1}, {x, horizon + 1}};
        draw::fill_polygon(cv, q, Paint::of(c));
      }
      const Rgb asphalt = draw_hsv(rng, 0, 360, 0.0f, 0.1f, 0.25f, 0.55f);
      ground(cv, horizon, asphalt, scale(asphalt, 0.85f));
      if (chance(rng, 0.6f)) {
        const float y = horizon + (h - horizon) * rng.uniform(0.5f, 0.9f);
        draw::fill_capsule(cv, {-5, y}, {w + 5, y}, 0.01f * m, Paint::of({230, 225, 200}), 0.8f);
      }
      texture(cv, rng);
      return;
    }
    case Scene::water: {
      sky(cv, rng);
      const Rgb sea = draw_hsv(rng, 185, 225, 0.35f, 0.8f, 0.3f, 0.75f);
      ground(cv, horizon, scale(sea, 1.15f), scale(sea, 0.7f));
      for (int i = 0; i < 12; ++i) {  // wave glints
        const Vec2 p{rng.uniform(0, w), rng.uniform(horizon, h)};
        const float len = rng.uniform(0.03f, 0.12f) * w;
        draw::fill_capsule(cv, p, p + Vec2{len, 0}, 0.006f * m, Paint::of({235, 240, 245}), 0.45f);
      }
      return;
    }
    case Scene::grass: {
      sky(cv, rng);
      const Rgb grass = draw_hsv(rng, 70, 120, 0.35f, 0.75f, 0.3f, 0.7f);
      ground(cv, horizon, grass, scale(grass, 0.7f));
      const Rgb tint = draw_hsv(rng, 40, 110, 0.3f, 0.7f, 0.2f, 0.8f);
      draw::value_noise(cv, rng, 20, tint, 0.3f);
      return;
    }
    case Scene::forest: {
      const Rgb leaves = draw_hsv(rng, 70, 130, 0.3f, 0.7f, 0.15f, 0.5f);
      const Rgb light = draw_hsv(rng, 50, 110, 0.2f, 0.6f, 0.5f, 0.85f);
      draw::linear_gradient(cv, light, leaves, kPi / 2);
      draw::value_noise(cv, rng, 10, scale(leaves, 0.6f), 0.6f);
      for (int i = 0, n = 2 + static_cast<int>(rng.below(5)); i < n; ++i) {  // trunks
        const float x = rng.uniform(0, w);
        const Rgb bark = draw_hsv(rng, 15, 35, 0.3f, 0.6f, 0.15f, 0.4f);
        draw::fill_capsule(cv, {x, -5}, {x + rng.uniform(-0.05f, 0.05f) * w, h + 5},
                           rng.uniform(0.01f, 0.05f) * m, Paint::of(bark));
      }
      const Rgb soil = draw_hsv(rng, 20, 60, 0.3f, 0.6f, 0.2f, 0.5f);
      ground(cv, horizon, soil, scale(soil, 0.8f));
      return;
    }
  }
}

/// Brightness, contrast, colour cast and grain of one image.
draw::Finish lighting(RandomStream& rng, std::int64_t downsample) {
  draw::Finish f;
  f.downsample = downsample;
  f.brightness = rng.uniform(-25.0f, 25.0f);
  f.contrast = rng.uniform(0.75f, 1.2f);
  f.gain.r = rng.uniform(0.92f, 1.08f);
  f.gain.g = rng.uniform(0.92f, 1.08f);
  f.gain.b = rng.uniform(0.92f, 1.08f);
  f.grain = rng.uniform(0.0f, 6.0f);
  f.grain_key = (std::uint64_t{rng.next_bits()} << 32) | rng.next_bits();
  return f;
}

// ---------------------------------------------------------------- cats and dogs

/// Fur colours shared by both classes, so colour alone never tells them apart.
Rgb fur_colour(RandomStream& rng) {
  switch (rng.below(7)) {
    case 0:
      return draw_hsv(rng, 20, 35, 0.55f, 0.8f, 0.75f, 0.95f);  // ginger
    case 1:
      return draw_hsv(rng, 18, 32, 0.45f, 0.7f, 0.35f, 0.55f);  // brown
    case 2:
      return draw_hsv(rng, 0, 360, 0.0f, 0.08f, 0.45f, 0.7f);  // grey
    case 3:
      return draw_hsv(rng, 0, 360, 0.0f, 0.15f, 0.1f, 0.22f);  // black
    case 4:
      return draw_hsv(rng, 30, 50, 0.0f, 0.1f, 0.88f, 0.97f);  // white
    case 5:
      return draw_hsv(rng, 32, 42, 0.25f, 0.45f, 0.75f, 0.9f);  // cream
    default:
      return draw_hsv(rng, 38, 46, 0.5f, 0.75f, 0.7f, 0.88f);  // golden
  }
}

/// What a face is drawn with: fur, a second colour for patches and ears, the frame.
struct Face {
  Frame f;
  Rgb fur, fur2;
};

/// The lit head ellipse: lighter towards a random light direction.
Paint head_paint(const Face& face, RandomStream& rng) {
  const float a = rng.uniform(0, 2 * kPi);
  const float lift = rng.uniform(1.05f, 1.2f), shade = rng.uniform(0.7f, 0.9f);
  return face.f.gradient(scale(face.fur, lift), scale(face.fur, shade), std::cos(a), std::sin(a),
                         -std::cos(a), -std::sin(a));
}

/// A patch of the second fur colour, clipped to the head ellipse.
void head_patch(Canvas& cv, const Face& face, RandomStream& rng, const draw::Ellipse& head) {
  const float x = rng.uniform(-0.6f, 0.6f), y = rng.uniform(-0.6f, 0.4f);
  const float rx = rng.uniform(0.25f, 0.6f), ry = rng.uniform(0.2f, 0.5f);
  const float a = rng.uniform(0, kPi);
  const draw::EllipseSdf patch(face.f.ellipse_px(x, y, rx, ry, a));
  const draw::EllipseSdf clip(head);
  cv.fill(
      patch.box(), [&](Vec2 p) { return std::max(patch(p), clip(p)); }, Paint::of(face.fur2));
}

/// A body below the head (both classes alike).
void body(Canvas& cv, const Face& face, RandomStream& rng) {
  if (!chance(rng, 0.7f)) return;
  const float rx = rng.uniform(1.0f, 1.5f), ry = rng.uniform(0.8f, 1.1f);
  face.f.ellipse(cv, rng.uniform(-0.3f, 0.3f), 1.5f, rx, ry, 0,
                 face.f.gradient(face.fur, scale(face.fur, 0.7f), 0, 0.8f, 0, 2.5f));
}

Rgb feature_dark(RandomStream& rng) { return draw_hsv(rng, 0, 40, 0.2f, 0.5f, 0.05f, 0.18f); }

void draw_cat(Canvas& cv, const Face& face, RandomStream& rng) {
  const Frame& f = face.f;
  body(cv, face, rng);
  // Pointed ears, drawn before the head so it covers their bases.
  const float ear_h = rng.uniform(1.3f, 1.6f), tip_x = rng.uniform(0.5f, 0.8f);
  const Rgb inner = draw::mix(face.fur, draw_hsv(rng, 340, 360, 0.3f, 0.5f, 0.8f, 0.95f),
                              rng.uniform(0.5f, 0.85f));
  const Rgb ear_fur = chance(rng, 0.3f) ? face.fur2 : face.fur;
  for (const float side : {-1.0f, 1.0f}) {
    const float lean = rng.uniform(-0.12f, 0.12f);
    const Vec2 b0{side * 0.97f, -0.2f}, b1{side * 0.22f, -0.8f};
    const Vec2 tip{side * (tip_x + lean), -ear_h};
    f.poly(cv, {b0, b1, tip}, Paint::of(ear_fur));
    const Vec2 mid{(b0.x + b1.x + tip.x) / 3, (b0.y + b1.y + tip.y) / 3};
    auto shrink = [&](Vec2 p) { return mid + (p - mid) * 0.55f; };
    f.poly(cv, {shrink(b0) + Vec2{0, 0.08f}, shrink(b1) + Vec2{0, 0.08f}, shrink(tip)},
           Paint::of(inner));
  }
  const draw::Ellipse head = f.ellipse_px(0, 0, 1.0f, rng.uniform(0.8f, 0.95f), 0);
  draw::fill_ellipse(cv, head, head_paint(face, rng));
  if (chance(rng, 0.4f)) head_patch(cv, face, rng, head);
  if (chance(rng, 0.5f)) {  // tabby stripes on the forehead
    const draw::EllipseSdf clip(head);
    const Rgb c = scale(face.fur, 0.55f);
    for (int k = -1; k <= 1; ++k) {
      const float x = 0.18f * static_cast<float>(k);
      const draw::CapsuleSdf s(f.at(x, -0.85f), f.at(x * 0.7f, -0.5f), f.len(0.045f));
      cv.fill(
          s.box(), [&](Vec2 p) { return std::max(s(p), clip(p)); }, Paint::of(c));
    }
  }
  const float nose_y = rng.uniform(0.12f, 0.22f);
  if (chance(rng, 0.7f)) {  // muzzle puffs
    const Rgb puff = draw::mix(face.fur, {240, 235, 225}, rng.uniform(0.3f, 0.7f));
    for (const float side : {-1.0f, 1.0f})
      f.ellipse(cv, side * 0.13f, nose_y + 0.16f, 0.17f, 0.12f, 0, Paint::of(puff));
  }
  // Almond eyes, outer corners up, with a vertical slit pupil.
  const float ex = rng.uniform(0.3f, 0.42f), ey = rng.uniform(-0.25f, -0.08f);
  const float erx = rng.uniform(0.16f, 0.22f), ery = erx * rng.uniform(0.5f, 0.68f);
  const float tilt = rng.uniform(0.12f, 0.35f);
  const Rgb iris = [&] {
    switch (rng.below(4)) {
      case 0:
        return draw_hsv(rng, 75, 110, 0.55f, 0.9f, 0.6f, 0.9f);
      case 1:
        return draw_hsv(rng, 45, 58, 0.6f, 0.9f, 0.75f, 0.95f);
      case 2:
        return draw_hsv(rng, 28, 40, 0.6f, 0.9f, 0.65f, 0.9f);
      default:
        return draw_hsv(rng, 190, 210, 0.4f, 0.8f, 0.7f, 0.95f);
    }
  }();
  const float slit = rng.uniform(0.025f, 0.06f);
  const Rgb dark = feature_dark(rng);
  for (const float side : {-1.0f, 1.0f}) {
    const float a = -tilt * side;
    f.ellipse(cv, side * ex, ey, erx + 0.035f, ery + 0.03f, a, Paint::of(dark));
    f.ellipse(cv, side * ex, ey, erx, ery, a, Paint::of(iris));
    f.ellipse(cv, side * ex, ey, slit, ery * 0.95f, 0, Paint::of({8, 8, 8}));
    f.circle(cv, side * ex + 0.05f, ey - ery * 0.35f, 0.03f, Paint::of({250, 250, 250}));
  }
  // Small downward triangle nose, the mouth below it, whiskers.
  const Rgb nose =
      chance(rng, 0.7f) ? draw_hsv(rng, 345, 360, 0.35f, 0.6f, 0.7f, 0.9f) : scale(dark, 1.5f);
  const float nw = rng.uniform(0.07f, 0.11f);
  f.poly(cv, {{-nw, nose_y - 0.05f}, {nw, nose_y - 0.05f}, {0, nose_y + 0.06f}}, Paint::of(nose));
  const float lw = rng.uniform(0.012f, 0.02f);
  f.line(cv, 0, nose_y + 0.05f, 0, nose_y + 0.12f, lw, Paint::of(dark));
  for (const float side : {-1.0f, 1.0f})
    f.arc(cv, side * 0.07f, nose_y + 0.12f, 0.07f, kPi / 2, kPi / 2, lw, Paint::of(dark));
  const Rgb whisker = draw::luma(face.fur) < 110 ? Rgb{235, 235, 230} : Rgb{35, 30, 28};
  const float ww = rng.uniform(0.008f, 0.016f);
  for (const float side : {-1.0f, 1.0f})
    for (int k = 0; k < 3; ++k) {
      const float kf = static_cast<float>(k);
      const float x1 = side * rng.uniform(1.05f, 1.4f);
      const float y1 = nose_y + 0.0f + kf * 0.14f + rng.uniform(-0.05f, 0.05f);
      f.line(cv, side * 0.2f, nose_y + 0.12f + kf * 0.045f, x1, y1, ww, Paint::of(whisker));
    }
}

void draw_dog(Canvas& cv, const Face& face, RandomStream& rng) {
  const Frame& f = face.f;
  body(cv, face, rng);
  const draw::Ellipse head =
      f.ellipse_px(0, 0, rng.uniform(0.85f, 1.0f), rng.uniform(0.9f, 1.05f), 0);
  draw::fill_ellipse(cv, head, head_paint(face, rng));
  if (chance(rng, 0.4f)) head_patch(cv, face, rng, head);
  // Floppy ears hanging down the sides, their lower ends swinging out.
  const Rgb ear = [&] {
    switch (rng.below(3)) {
      case 0:
        return scale(face.fur, rng.uniform(0.45f, 0.7f));
      case 1:
        return face.fur2;
      default:
        return scale(face.fur, 0.85f);
    }
  }();
  const float ear_x = rng.uniform(0.78f, 0.95f), ear_y = rng.uniform(-0.05f, 0.2f);
  const float ear_rx = rng.uniform(0.24f, 0.34f), ear_ry = rng.uniform(0.55f, 0.75f);
  for (const float side : {-1.0f, 1.0f}) {
    const float swing = rng.uniform(0.1f, 0.45f);
    f.ellipse(cv, side * ear_x, ear_y, ear_ry, ear_rx, kPi / 2 - side * swing,
              f.gradient(scale(ear, 1.1f), scale(ear, 0.8f), 0, ear_y - ear_ry, 0, ear_y + ear_ry));
  }
  // Round eyes with a highlight, sometimes on white, sometimes with brows.
  const float ex = rng.uniform(0.28f, 0.4f), ey = rng.uniform(-0.32f, -0.15f);
  const float er = rng.uniform(0.08f, 0.12f);
  const Rgb iris = draw_hsv(rng, 15, 35, 0.4f, 0.8f, 0.1f, 0.35f);
  const bool sclera = chance(rng, 0.4f);
  const bool brows = chance(rng, 0.3f);
  const Rgb brow = draw_hsv(rng, 25, 40, 0.4f, 0.7f, 0.55f, 0.85f);
  for (const float side : {-1.0f, 1.0f}) {
    if (brows) f.ellipse(cv, side * ex, ey - er - 0.08f, 0.09f, 0.055f, 0, Paint::of(brow));
    if (sclera) f.circle(cv, side * ex, ey, er + 0.04f, Paint::of({245, 245, 240}));
    f.circle(cv, side * ex, ey, er, Paint::of(iris));
    f.circle(cv, side * ex, ey, er * 0.55f, Paint::of({10, 8, 8}));
    f.circle(cv, side * ex + er * 0.35f, ey - er * 0.35f, er * 0.3f, Paint::of({250, 250, 250}));
  }
  // A big muzzle with a large dark nose, the mouth, maybe a tongue.
  const float my = rng.uniform(0.32f, 0.45f);
  const float mrx = rng.uniform(0.42f, 0.55f), mry = rng.uniform(0.28f, 0.36f);
  const Rgb muzzle = draw::mix(face.fur, {238, 228, 210}, rng.uniform(0.3f, 0.8f));
  f.ellipse(cv, 0, my, mrx, mry, 0,
            f.gradient(muzzle, scale(muzzle, 0.85f), 0, my - mry, 0, my + mry));
  const float nrx = rng.uniform(0.16f, 0.22f), nry = nrx * rng.uniform(0.6f, 0.75f);
  const float ny = my - mry * 0.45f;
  const Rgb nose = draw_hsv(rng, 0, 360, 0.0f, 0.2f, 0.04f, 0.14f);
  const Rgb dark = feature_dark(rng);
  const float lw = rng.uniform(0.015f, 0.025f);
  const float mouth_y = my + mry * 0.35f;
  if (chance(rng, 0.5f)) {
    const Rgb tongue = draw_hsv(rng, 345, 360, 0.45f, 0.65f, 0.8f, 0.95f);
    const float tr = rng.uniform(0.1f, 0.15f);
    f.ellipse(cv, 0, mouth_y + tr * 1.1f, tr, tr * 1.4f, 0, Paint::of(tongue));
    f.line(cv, 0, mouth_y + 0.02f, 0, mouth_y + tr * 1.8f, lw * 0.6f,
           Paint::of(scale(tongue, 0.75f)));
  }
  f.line(cv, 0, ny, 0, mouth_y, lw, Paint::of(dark));
  for (const float side : {-1.0f, 1.0f})
    f.arc(cv, side * 0.13f, mouth_y - 0.13f, 0.13f, kPi / 2, kPi / 2.2f, lw, Paint::of(dark));
  f.ellipse(cv, 0, ny, nrx, nry, 0, Paint::of(nose));
  f.ellipse(cv, -nrx * 0.3f, ny - nry * 0.4f, nrx * 0.3f, nry * 0.25f, 0,
            Paint::of(scale(nose, 1.0f) + Rgb{90, 90, 90}), 0.7f);
}

/// A cat or dog face of random size (0.5-1.0 of the frame), position (possibly cropped),
/// rotation (+-20 degrees), mirroring and colours.
void draw_pet(Canvas& cv, RandomStream& rng, bool dog, float size_lo, float size_hi) {
  const float w = static_cast<float>(cv.width()), h = static_cast<float>(cv.height());
  const float m = std::min(w, h);
  const float size = rng.uniform(size_lo, size_hi);
  const float unit = size * m / 2.6f;
  auto place = [&](float lo, float hi, float extent) {
    return lo <= hi ? rng.uniform(lo, hi) : rng.uniform(extent * 0.45f, extent * 0.55f);
  };
  const float cx = place(unit * 0.75f, w - unit * 0.75f, w);
  const float cy = place(unit * 1.25f, h - unit * 0.6f, h);
  const float angle = deg(rng.uniform(-20.0f, 20.0f));
  const bool flip = rng.below(2) == 1;
  const Rgb fur = fur_colour(rng);
  const Rgb fur2 = fur_colour(rng);
  const Face face{Frame({cx, cy}, unit, angle, flip), fur, fur2};
  if (dog)
    draw_dog(cv, face, rng);
  else
    draw_cat(cv, face, rng);
}

void draw_catdog(Canvas& cv, RandomStream& rng, std::int64_t label) {
  const float h = static_cast<float>(cv.height());
  const Scene scene = chance(rng, 0.5f) ? Scene::indoor : Scene::any;
  paint_scene(cv, rng, scene, h * rng.uniform(0.55f, 0.85f));
  draw_pet(cv, rng, label == 1, 0.5f, 1.0f);
}

// ---------------------------------------------------------------- CIFAR-10 motifs

Rgb vehicle_colour(RandomStream& rng) {
  switch (rng.below(6)) {
    case 0:
      return draw_hsv(rng, 350, 370, 0.7f, 0.9f, 0.6f, 0.9f);  // red
    case 1:
      return draw_hsv(rng, 205, 230, 0.6f, 0.9f, 0.45f, 0.85f);  // blue
    case 2:
      return draw_hsv(rng, 45, 55, 0.7f, 0.9f, 0.8f, 0.95f);  // yellow
    case 3:
      return draw_hsv(rng, 0, 360, 0.0f, 0.05f, 0.85f, 0.97f);  // white
    case 4:
      return draw_hsv(rng, 0, 360, 0.0f, 0.1f, 0.08f, 0.2f);  // black
    default:
      return draw_hsv(rng, 0, 360, 0.0f, 0.08f, 0.55f, 0.75f);  // silver
  }
}

void wheel(Canvas& cv, const Frame& f, float x, float y, float r) {
  f.circle(cv, x, y, r, Paint::of({20, 20, 22}));
  f.circle(cv, x, y, r * 0.45f, Paint::of({170, 170, 175}));
}

void airplane(Canvas& cv, const Frame& f, RandomStream& rng) {
  const Rgb body =
      chance(rng, 0.8f) ? draw_hsv(rng, 0, 360, 0.0f, 0.1f, 0.6f, 0.95f) : vehicle_colour(rng);
  const Rgb wing = scale(body, 0.85f);
  const float sweep = rng.uniform(0.05f, 0.35f), span = rng.uniform(0.75f, 0.95f);
  for (const float side : {-1.0f, 1.0f}) {
    f.poly(cv,
           {{0.2f, side * 0.05f},
            {0.2f - sweep, side * span},
            {-0.02f - sweep, side * span},
            {-0.15f, side * 0.05f}},
           Paint::of(wing));
    f.poly(cv,
           {{-0.62f, side * 0.04f},
            {-0.8f, side * 0.33f},
            {-0.92f, side * 0.33f},
            {-0.86f, side * 0.04f}},
           Paint::of(wing));
    if (chance(rng, 0.5f))
      f.line(cv, 0.05f - sweep * 0.5f, side * 0.4f, -0.12f - sweep * 0.5f, side * 0.4f, 0.06f,
             Paint::of(scale(body, 0.6f)));
  }
  f.line(cv, -0.9f, 0, 0.82f, 0, 0.11f, f.gradient(body, scale(body, 0.75f), 0, -0.1f, 0, 0.1f));
  f.ellipse(cv, 0.62f, 0, 0.12f, 0.06f, 0, Paint::of({50, 60, 80}));
}

void automobile(Canvas& cv, const Frame& f, RandomStream& rng) {
  const Rgb c = vehicle_colour(rng);
  const Paint paint = f.gradient(scale(c, 1.1f), scale(c, 0.75f), 0, -0.45f, 0, 0.35f);
  const float roof = rng.uniform(-0.5f, -0.38f);
  f.poly(cv, {{-0.55f, -0.02f}, {-0.32f, roof}, {0.28f, roof}, {0.55f, -0.02f}}, paint);
  f.poly(cv,
         {{-0.95f, -0.05f},
          {0.9f, -0.05f},
          {0.98f, 0.12f},
          {0.95f, 0.3f},
          {-0.97f, 0.3f},
          {-0.98f, 0.05f}},
         paint);
  const Paint glass = Paint::of({120, 150, 175});
  f.poly(cv, {{-0.45f, -0.06f}, {-0.29f, roof + 0.07f}, {-0.04f, roof + 0.07f}, {-0.04f, -0.06f}},
         glass);
  f.poly(cv, {{0.02f, -0.06f}, {0.02f, roof + 0.07f}, {0.25f, roof + 0.07f}, {0.44f, -0.06f}},
         glass);
  f.ellipse(cv, 0.9f, 0.05f, 0.06f, 0.04f, 0, Paint::of({250, 235, 160}));
  wheel(cv, f, -0.58f, 0.3f, 0.21f);
  wheel(cv, f, 0.58f, 0.3f, 0.21f);
}

void truck(Canvas& cv, const Frame& f, RandomStream& rng) {
  const Rgb box =
      chance(rng, 0.5f) ? draw_hsv(rng, 0, 360, 0.0f, 0.08f, 0.75f, 0.95f) : vehicle_colour(rng);
  const Rgb cab = vehicle_colour(rng);
  const float top = rng.uniform(-0.8f, -0.6f);
  f.poly(cv, {{-0.97f, top}, {0.3f, top}, {0.3f, 0.28f}, {-0.97f, 0.28f}},
         f.gradient(box, scale(box, 0.8f), 0, top, 0, 0.3f));
  f.poly(cv, {{0.34f, -0.38f}, {0.78f, -0.38f}, {0.96f, -0.05f}, {0.96f, 0.28f}, {0.34f, 0.28f}},
         Paint::of(cab));
  f.poly(cv, {{0.42f, -0.31f}, {0.74f, -0.31f}, {0.86f, -0.08f}, {0.42f, -0.08f}},
         Paint::of({120, 150, 175}));
  f.line(cv, -0.97f, 0.3f, 0.96f, 0.3f, 0.03f, Paint::of({60, 60, 60}));
  wheel(cv, f, -0.72f, 0.34f, 0.17f);
  wheel(cv, f, -0.36f, 0.34f, 0.17f);
  wheel(cv, f, 0.68f, 0.34f, 0.17f);
}

void bird(Canvas& cv, const Frame& f, RandomStream& rng) {
  const Rgb c = draw_hsv(rng, 0, 360, 0.4f, 0.9f, 0.35f, 0.9f);
  const Rgb belly = draw::mix(c, {240, 230, 200}, rng.uniform(0.3f, 0.7f));
  const Rgb beak = draw_hsv(rng, 30, 50, 0.7f, 0.95f, 0.8f, 0.95f);
  const Paint dark = Paint::of({40, 30, 25});
  f.line(cv, 0, 0.3f, -0.02f, 0.62f, 0.025f, dark);
  f.line(cv, 0.14f, 0.3f, 0.16f, 0.62f, 0.025f, dark);
  f.poly(cv, {{-0.45f, -0.02f}, {-0.97f, -0.22f}, {-0.97f, 0.14f}}, Paint::of(scale(c, 0.7f)));
  f.ellipse(cv, -0.05f, 0.05f, 0.55f, 0.32f, -0.15f, Paint::of(c));
  f.ellipse(cv, 0.02f, 0.17f, 0.4f, 0.16f, -0.1f, Paint::of(belly));
  if (chance(rng, 0.3f))  // wings up
    f.poly(cv, {{0.1f, -0.1f}, {-0.35f, -0.95f}, {-0.5f, -0.85f}, {-0.3f, -0.05f}},
           Paint::of(scale(c, 0.75f)));
  else
    f.ellipse(cv, -0.15f, -0.02f, 0.38f, 0.16f, -0.3f, Paint::of(scale(c, 0.75f)));
  f.circle(cv, 0.48f, -0.26f, 0.22f, Paint::of(c));
  f.poly(cv, {{0.65f, -0.32f}, {0.66f, -0.18f}, {0.93f, -0.24f}}, Paint::of(beak));
  f.circle(cv, 0.55f, -0.3f, 0.045f, Paint::of({10, 10, 10}));
}

void deer(Canvas& cv, const Frame& f, RandomStream& rng) {
  const Rgb c = draw_hsv(rng, 20, 32, 0.45f, 0.7f, 0.45f, 0.72f);
  const Paint fur = Paint::of(c), legs = Paint::of(scale(c, 0.8f));
  const Rgb antler = draw_hsv(rng, 30, 40, 0.2f, 0.4f, 0.7f, 0.85f);
  for (const float x : {-0.45f, -0.3f, 0.2f, 0.35f})
    f.line(cv, x, 0.15f, x + rng.uniform(-0.08f, 0.08f), 0.88f, 0.04f, legs);
  f.ellipse(cv, -0.05f, 0.05f, 0.55f, 0.26f, 0, fur);
  f.ellipse(cv, -0.02f, 0.2f, 0.4f, 0.08f, 0, Paint::of(draw::mix(c, {240, 235, 220}, 0.5f)));
  f.line(cv, 0.35f, -0.05f, 0.55f, -0.42f, 0.1f, fur);
  f.ellipse(cv, 0.66f, -0.48f, 0.2f, 0.1f, 0.5f, fur);
  f.ellipse(cv, 0.48f, -0.6f, 0.09f, 0.04f, -0.8f, fur);
  const Paint a = Paint::of(antler);
  f.line(cv, 0.55f, -0.55f, 0.42f, -0.95f, 0.025f, a);
  f.line(cv, 0.6f, -0.55f, 0.75f, -0.95f, 0.025f, a);
  f.line(cv, 0.46f, -0.8f, 0.33f, -0.88f, 0.02f, a);
  f.line(cv, 0.69f, -0.8f, 0.85f, -0.86f, 0.02f, a);
  f.circle(cv, -0.58f, -0.08f, 0.06f, Paint::of({240, 240, 235}));
  f.circle(cv, 0.7f, -0.5f, 0.025f, Paint::of({15, 12, 10}));
}

void frog(Canvas& cv, const Frame& f, RandomStream& rng) {
  const Rgb c = draw_hsv(rng, 75, 135, 0.5f, 0.85f, 0.4f, 0.8f);
  const Paint skin = f.gradient(scale(c, 1.1f), scale(c, 0.7f), 0, -0.4f, 0, 0.6f);
  for (const float side : {-1.0f, 1.0f}) {
    f.ellipse(cv, side * 0.62f, 0.38f, 0.34f, 0.15f, side * 0.3f, Paint::of(scale(c, 0.8f)));
    f.ellipse(cv, side * 0.3f, 0.55f, 0.13f, 0.07f, 0, Paint::of(scale(c, 0.8f)));
  }
  f.ellipse(cv, 0, 0.1f, 0.75f, 0.45f, 0, skin);
  if (chance(rng, 0.5f))
    for (int i = 0; i < 5; ++i) {
      const float x = rng.uniform(-0.5f, 0.5f), y = rng.uniform(0.0f, 0.35f);
      f.circle(cv, x, y, rng.uniform(0.04f, 0.08f), Paint::of(scale(c, 0.45f)));
    }
  const Rgb eye = draw_hsv(rng, 40, 60, 0.6f, 0.9f, 0.7f, 0.95f);
  for (const float side : {-1.0f, 1.0f}) {
    f.circle(cv, side * 0.35f, -0.28f, 0.19f, Paint::of(c));
    f.circle(cv, side * 0.35f, -0.31f, 0.12f, Paint::of(eye));
    f.ellipse(cv, side * 0.35f, -0.31f, 0.08f, 0.04f, 0, Paint::of({10, 10, 10}));
  }
  f.arc(cv, 0, -0.2f, 0.45f, kPi / 2, 0.7f, 0.02f, Paint::of(scale(c, 0.4f)));
}

void horse(Canvas& cv, const Frame& f, RandomStream& rng) {
  const Rgb c = [&] {
    switch (rng.below(4)) {
      case 0:
        return draw_hsv(rng, 15, 28, 0.55f, 0.8f, 0.35f, 0.6f);  // bay / chestnut
      case 1:
        return draw_hsv(rng, 0, 360, 0.0f, 0.1f, 0.1f, 0.2f);  // black
      case 2:
        return draw_hsv(rng, 30, 40, 0.0f, 0.1f, 0.8f, 0.95f);  // white / grey
      default:
        return draw_hsv(rng, 25, 35, 0.3f, 0.55f, 0.6f, 0.8f);  // dun
    }
  }();
  const Paint fur = Paint::of(c);
  const Paint mane = Paint::of(scale(c, 0.45f) + Rgb{10, 8, 6});
  f.line(cv, -0.65f, -0.1f, -0.85f, 0.45f, 0.07f, mane);
  for (const float x : {-0.5f, -0.35f, 0.15f, 0.3f}) {
    const float foot = x + rng.uniform(-0.1f, 0.1f);
    f.line(cv, x, 0.1f, foot, 0.88f, 0.055f, fur);
    f.line(cv, foot, 0.84f, foot, 0.9f, 0.06f, Paint::of({30, 25, 20}));
  }
  f.ellipse(cv, -0.1f, 0, 0.58f, 0.29f, 0, f.gradient(c, scale(c, 0.8f), 0, -0.3f, 0, 0.3f));
  f.line(cv, 0.3f, -0.08f, 0.6f, -0.55f, 0.16f, fur);
  f.line(cv, 0.26f, -0.25f, 0.53f, -0.72f, 0.06f, mane);
  f.ellipse(cv, 0.76f, -0.46f, 0.26f, 0.12f, 0.9f, fur);
  f.poly(cv, {{0.56f, -0.7f}, {0.62f, -0.88f}, {0.66f, -0.68f}}, fur);
  f.circle(cv, 0.72f, -0.55f, 0.03f, Paint::of({10, 10, 10}));
}

void ship(Canvas& cv, const Frame& f, RandomStream& rng) {
  const Rgb hull = vehicle_colour(rng);
  const Rgb deck = draw_hsv(rng, 0, 360, 0.0f, 0.08f, 0.8f, 0.97f);
  const Rgb funnel = vehicle_colour(rng);
  f.line(cv, 0.5f, -0.1f, 0.5f, -0.7f, 0.02f, Paint::of({60, 60, 60}));
  f.poly(cv, {{-0.25f, -0.78f}, {-0.05f, -0.78f}, {-0.05f, -0.4f}, {-0.25f, -0.4f}},
         Paint::of(funnel));
  f.poly(cv, {{-0.55f, -0.45f}, {0.25f, -0.45f}, {0.25f, -0.08f}, {-0.55f, -0.08f}},
         Paint::of(deck));
  f.line(cv, -0.48f, -0.3f, 0.18f, -0.3f, 0.03f, Paint::of({50, 60, 70}));
  f.poly(cv, {{-0.95f, -0.12f}, {0.98f, -0.12f}, {0.75f, 0.3f}, {-0.82f, 0.3f}},
         f.gradient(hull, scale(hull, 0.7f), 0, -0.1f, 0, 0.3f));
  if (chance(rng, 0.5f))
    f.poly(cv, {{-0.88f, 0.15f}, {0.85f, 0.15f}, {0.75f, 0.3f}, {-0.82f, 0.3f}},
           Paint::of({150, 35, 30}));
}

Scene cifar_scene(std::int64_t label, RandomStream& rng) {
  const bool usual = chance(rng, 0.75f);
  const bool alt = chance(rng, 0.5f);
  if (!usual) return Scene::any;
  switch (label) {
    case 0:
      return Scene::sky;
    case 1:
    case 9:
      return Scene::road;
    case 2:
      return alt ? Scene::sky : Scene::forest;
    case 3:
      return Scene::indoor;
    case 4:
      return alt ? Scene::forest : Scene::grass;
    case 5:
      return alt ? Scene::indoor : Scene::grass;
    case 6:
      return alt ? Scene::grass : Scene::water;
    case 7:
      return Scene::grass;
    default:
      return Scene::water;
  }
}

void draw_cifar(Canvas& cv, RandomStream& rng, std::int64_t label) {
  const float w = static_cast<float>(cv.width()), h = static_cast<float>(cv.height());
  const float m = std::min(w, h);
  const Scene scene = cifar_scene(label, rng);
  if (label == 3 || label == 5) {  // the faces of the cat-vs-dog kind
    paint_scene(cv, rng, scene, h * rng.uniform(0.55f, 0.85f));
    draw_pet(cv, rng, label == 5, 0.65f, 1.0f);
    return;
  }
  const float unit = rng.uniform(0.3f, 0.46f) * m;
  const Vec2 centre{rng.uniform(0.38f, 0.62f) * w, rng.uniform(0.38f, 0.62f) * h};
  const float spin = label == 0 ? 35.0f : 20.0f;
  const float angle = deg(rng.uniform(-spin, spin));
  const bool flip = rng.below(2) == 1;
  const float horizon = centre.y + unit * (label == 8 ? 0.12f : rng.uniform(-0.1f, 0.3f));
  paint_scene(cv, rng, scene, horizon);
  const Frame f(centre, unit, angle, flip);
  switch (label) {
    case 0:
      airplane(cv, f, rng);
      break;
    case 1:
      automobile(cv, f, rng);
      break;
    case 2:
      bird(cv, f, rng);
      break;
    case 4:
      deer(cv, f, rng);
      break;
    case 6:
      frog(cv, f, rng);
      break;
    case 7:
      horse(cv, f, rng);
      break;
    case 8:
      ship(cv, f, rng);
      break;
    default:
      truck(cv, f, rng);
      break;
  }
}

// ---------------------------------------------------------------- imagenet-style classes

/// A local shape of the imagenet kind: signed distance in local units (radius about 1).
float shape_sd(int shape, Vec2 q) {
  auto box = [](Vec2 p, float bx, float by) {
    const float dx = std::abs(p.x) - bx, dy = std::abs(p.y) - by;
    const float ox = std::max(dx, 0.0f), oy = std::max(dy, 0.0f);
    return std::sqrt(ox * ox + oy * oy) + std::min(std::max(dx, dy), 0.0f);
  };
  auto regular = [](Vec2 p, int n, float r, float rot) {  // regular n-gon, inradius-based
    float d = -1e30f;
    for (int i = 0; i < n; ++i) {
      const float a = rot + 2 * kPi * static_cast<float>(i) / static_cast<float>(n);
      d = std::max(d, p.x * std::cos(a) + p.y * std::sin(a) - r);
    }
    return d;
  };
  switch (shape) {
    case 0:
      return draw::length(q) - 0.95f;  // disc
    case 1:
      return box(q, 0.78f, 0.78f);  // square
    case 2:
      return regular(q, 3, 0.5f, kPi / 2);  // triangle
    case 3: {                               // five-point star
      const float r = draw::length(q);
      const float a = std::atan2(q.y, q.x) + kPi / 2;
      const float sector = 2 * kPi / 5;
      const float t = std::abs(std::fmod(a + 100 * sector, sector) - sector / 2) / (sector / 2);
      return (r - (0.42f + 0.55f * t)) * 0.7f;
    }
    case 4:
      return std::min(box(q, 0.9f, 0.28f), box(q, 0.28f, 0.9f));  // plus
    case 5:
      return std::abs(draw::length(q) - 0.7f) - 0.25f;  // ring
    case 6:
      return regular(q, 6, 0.85f, 0.0f);  // hexagon
    case 7: {                             // crescent
      const Vec2 o{0.45f, -0.2f};
      return std::max(draw::length(q) - 0.95f, -(draw::length(q - o) - 0.8f));
    }
    case 8:
      return (std::abs(q.x) * 0.95f + std::abs(q.y) * 0.6f - 0.6f);  // diamond
    default: {                                                       // three bars
      float d = 1e30f;
      for (const float x : {-0.6f, 0.0f, 0.6f}) d = std::min(d, box(q - Vec2{x, 0}, 0.17f, 0.9f));
      return d;
    }
  }
}

/// The pattern's mix between a shape's two colours at local point q (0: first colour).
float pattern_mix(int pattern, Vec2 q, float freq, float px_per_unit) {
  auto soft = [&](float signed_units) {
    return std::clamp(0.5f + signed_units * px_per_unit, 0.0f, 1.0f);
  };
  switch (pattern) {
    case 0:
      return 0.0f;  // solid
    case 1:
      return soft(std::sin(q.x * freq) / freq);  // stripes
    case 2: {                                    // dots
      const float cell = 2 * kPi / freq;
      const float fx = q.x / cell - std::floor(q.x / cell) - 0.5f;
      const float fy = q.y / cell - std::floor(q.y / cell) - 0.5f;
      return soft((0.3f - std::sqrt(fx * fx + fy * fy)) * cell);
    }
    case 3:
      return soft(std::sin(q.x * freq) * std::sin(q.y * freq) / freq);  // checks
    default:
      return soft(std::sin(draw::length(q) * freq) / freq);  // rings
  }
}

void draw_imagenet(Canvas& cv, RandomStream& rng, std::int64_t label) {
  // label = d2 d1 d0 in decimal: shape d0, colour family (d0 + d1) % 10, pattern and count
  // from (d0 + d2): a bijection on 0..999, and classes 0-9 differ in shape, colour and pattern.
  const int d0 = static_cast<int>(label % 10), d1 = static_cast<int>(label / 10 % 10);
  const int d2 = static_cast<int>(label / 100 % 10);
  const int shape = d0, family = (d0 + d1) % 10, pattern = (d0 + d2) % 5;
  const int count = 1 + d2 / 5;
  const float w = static_cast<float>(cv.width()), h = static_cast<float>(cv.height());
  const float m = std::min(w, h);

  const Rgb b0 = random_muted(rng);
  const Rgb b1 = random_muted(rng);
  draw::linear_gradient(cv, b0, b1, rng.uniform(0, 2 * kPi));
  texture(cv, rng);
  if (chance(rng, 0.3f)) {
    const float period = rng.uniform(0.02f, 0.1f) * m;
    const float angle = rng.uniform(0, kPi);
    const Rgb c = random_muted(rng);
    draw::stripes(cv, period, angle, c, rng.uniform(0.1f, 0.3f));
  }
  clutter(cv, rng, 3 + static_cast<int>(rng.below(8)), false);

  for (int k = 0; k < count; ++k) {
    const float unit = rng.uniform(0.2f, 0.4f) * m / (count == 1 ? 1.0f : 1.5f);
    const float x = count == 1 ? rng.uniform(0.3f, 0.7f) : rng.uniform(0.2f, 0.45f) + 0.35f * k;
    const Vec2 centre{x * w, rng.uniform(0.3f, 0.7f) * h};
    const float angle = deg(rng.uniform(-20.0f, 20.0f));
    const Frame f(centre, unit, angle, rng.below(2) == 1);
    const float hue = static_cast<float>(family) * 36.0f + rng.uniform(-8.0f, 8.0f);
    const Rgb c0 = draw_hsv(rng, hue, hue, 0.6f, 0.9f, 0.6f, 0.95f);
    const Rgb c1 = chance(rng, 0.5f) ? draw::mix(c0, {250, 250, 250}, rng.uniform(0.45f, 0.7f))
                                     : scale(c0, rng.uniform(0.3f, 0.5f));
    const float freq = rng.uniform(7.0f, 11.0f);
    const float light = rng.uniform(0, 2 * kPi);
    const Vec2 ldir{std::cos(light), std::sin(light)};
    const float px = f.unit();
    const Box box = draw::box_around(centre.x - 1.05f * px * 1.42f, centre.y - 1.05f * px * 1.42f,
                                     centre.x + 1.05f * px * 1.42f, centre.y + 1.05f * px * 1.42f);
    cv.fill(
        box, [&](Vec2 p) { return shape_sd(shape, f.local(p)) * px; },
        [&](Vec2 p) {
          const Vec2 q = f.local(p);
          const Rgb c = draw::mix(c0, c1, pattern_mix(pattern, q, freq, px));
          return c * (1.0f + 0.15f * draw::dot(q, ldir));
        });
  }
}

/// Canvas pixels per image pixel: small images are drawn at up to 4x and box-filtered down.
std::int64_t supersample(std::int64_t width, std::int64_t height) {
  const std::int64_t m = std::min(width, height);
  return std::clamp<std::int64_t>((128 + m - 1) / m, 1, 4);
}

int kind_classes(const std::string& kind, std::int64_t classes) {
  if (kind == "catdog") return 2;
  if (kind == "cifar10") return 10;
  return static_cast<int>(classes == 0 ? 10 : classes);
}

std::string valid_kinds() { return "catdog, cifar10, imagenet"; }

}  // namespace

std::vector<std::string> synth_class_names(const std::string& kind, std::int64_t classes) {
  if (kind == "catdog") {
    EPOCH_CHECK(classes == 0 || classes == 2, "synth: kind catdog has 2 classes, not ", classes);
    return {"cat", "dog"};
  }
  if (kind == "cifar10") {
    EPOCH_CHECK(classes == 0 || classes == 10, "synth: kind cifar10 has 10 classes, not ", classes);
    return cifar10_class_names();
  }
  EPOCH_CHECK(kind == "imagenet", "synth: unknown kind '", kind, "' (valid: ", valid_kinds(), ")");
  const std::int64_t n = classes == 0 ? 10 : classes;
  EPOCH_CHECK(n >= 2 && n <= kMaxImagenetClasses, "synth: kind imagenet takes 2-",
              kMaxImagenetClasses, " classes, not ", classes);
  std::vector<std::string> names;
  for (std::int64_t k = 0; k < n; ++k) {
    char wnid[16];
    std::snprintf(wnid, sizeof wnid, "n%08lld", static_cast<long long>(k));
    names.emplace_back(wnid);
  }
  return names;
}

Image draw_synth_image(const std::string& kind, std::int64_t label, std::int64_t index,
                       std::uint64_t seed, std::int64_t width, std::int64_t height) {
  EPOCH_CHECK(kind == "catdog" || kind == "cifar10" || kind == "imagenet",
              "draw_synth_image: unknown kind '", kind, "' (valid: ", valid_kinds(), ")");
  const std::int64_t classes = kind == "imagenet" ? kMaxImagenetClasses : kind_classes(kind, 0);
  EPOCH_CHECK(label >= 0 && label < classes, "draw_synth_image: label ", label, " outside [0, ",
              classes, ") for kind ", kind);
  EPOCH_CHECK(index >= 0, "draw_synth_image: negative index ", index);
  EPOCH_CHECK(width >= kMinSize && width <= kMaxSize && height >= kMinSize && height <= kMaxSize,
              "draw_synth_image: size ", width, "x", height, " outside ", kMinSize, "-", kMaxSize);
  const std::int64_t s = supersample(width, height);
  Canvas cv(width * s, height * s);
  RandomStream rng(seed, mix64(hash_name(kind), mix64(static_cast<std::uint64_t>(label),
                                                      static_cast<std::uint64_t>(index))));
  if (kind == "catdog")
    draw_catdog(cv, rng, label);
  else if (kind == "cifar10")
    draw_cifar(cv, rng, label);
  else
    draw_imagenet(cv, rng, label);
  return draw::finish(cv, lighting(rng, s));
}

SynthSummary write_synth_dataset(const SynthConfig& config) {
  const std::string& kind = config.kind;
  if (kind != "catdog" && kind != "cifar10" && kind != "imagenet")
    EPOCH_THROW(ConfigError, "unknown synth kind '", kind, "' (valid: ", valid_kinds(), ")");
  std::vector<std::string> names;
  try {
    names = synth_class_names(kind, config.classes);
  } catch (const InvalidArgument& e) {
    const std::string what = e.what();
    EPOCH_THROW(ConfigError, what.substr(0, what.rfind(" [")));
  }
  const auto classes = static_cast<std::int64_t>(names.size());
  const std::int64_t def_w = kind == "catdog" ? 500 : kind == "cifar10" ? 32 : 256;
  const std::int64_t def_h = kind == "catdog" ? 375 : kind == "cifar10" ? 32 : 256;
  if ((config.width == 0) != (config.height == 0))
    EPOCH_THROW(ConfigError, "synth: give both width and height, or neither (got ", config.width,
                "x", config.height, ")");
  const std::int64_t width = config.width == 0 ? def_w : config.width;
  const std::int64_t height = config.height == 0 ? def_h : config.height;
  // imagenet sizes vary by up to 25% either way, and must stay in range.
  const std::int64_t lo = kind == "imagenet" ? (kMinSize * 4 + 2) / 3 : kMinSize;
  const std::int64_t hi = kind == "imagenet" ? kMaxSize * 4 / 5 : kMaxSize;
  if (width < lo || height < lo || width > hi || height > hi)
    EPOCH_THROW(ConfigError, "synth: image size ", width, "x", height, " outside ", lo, "-", hi,
                " pixels");
  if (config.count < classes)
    EPOCH_THROW(ConfigError, "synth: count ", config.count, " is below the number of classes (",
                classes, "): every class needs a training image");
  if (config.val_count < -1)
    EPOCH_THROW(ConfigError, "synth: validation count ", config.val_count, " is negative");
  if (config.quality < 1 || config.quality > 100)
    EPOCH_THROW(ConfigError, "synth: JPEG quality ", config.quality, " outside 1-100");
  if (config.out_dir.empty()) EPOCH_THROW(ConfigError, "synth: no output directory given");
  const bool binary = kind == "cifar10" && config.cifar_binary;
  if (binary && (width != 32 || height != 32))
    EPOCH_THROW(ConfigError, "synth: CIFAR-10 binary files hold 32x32 images, not ", width, "x",
                height, " (turn the binary files off for other sizes)");
  const std::int64_t train_n = config.count;
  const std::int64_t val_n = config.val_count < 0 ? config.count / 5 : config.val_count;
  const std::int64_t total = train_n + val_n;
  const fs::path out(config.out_dir);
  std::error_code ec;
  for (const char* sub : {"train", "validation"})
    if (fs::exists(out / sub, ec))
      EPOCH_THROW(ConfigError, (out / sub).string(), " already exists; choose a new output ",
                  "directory or remove it");
  for (const char* sub : {"train", "validation"})
    for (const std::string& name : names) {
      fs::create_directories(out / sub / name, ec);
      if (ec) EPOCH_THROW(IoError, (out / sub / name).string(), ": cannot create: ", ec.message());
    }

  const std::int64_t train_per_class = (train_n + classes - 1) / classes;
  ImageDataset train_set, test_set;
  if (binary) {
    train_set.images = Tensor::empty({train_n, 3, 32, 32}, DType::u8);
    train_set.labels = Tensor::empty({train_n}, DType::i32);
    test_set.images = Tensor::empty({val_n, 3, 32, 32}, DType::u8);
    test_set.labels = Tensor::empty({val_n}, DType::i32);
    train_set.class_names = test_set.class_names = names;
    train_set.num_classes = test_set.num_classes = 10;
  }
  std::vector<std::int64_t> bytes(static_cast<std::size_t>(total), 0);
  std::atomic<bool> failed{false};
  std::mutex error_mutex;
  std::int64_t error_at = std::numeric_limits<std::int64_t>::max();
  std::exception_ptr error;
#pragma omp parallel for schedule(dynamic, 2)
  for (std::int64_t i = 0; i < total; ++i) {
    if (failed.load(std::memory_order_relaxed)) continue;
    try {
      const bool train = i < train_n;
      const std::int64_t j = train ? i : i - train_n;
      const std::int64_t label = j % classes;
      const std::int64_t number = (train ? 0 : train_per_class) + j / classes;
      std::int64_t w = width, h = height;
      if (kind == "imagenet") {  // photo-like sizes, +-25% in each dimension
        RandomStream size_rng(config.seed, mix64(hash_name("imagenet-size"),
                                                 mix64(static_cast<std::uint64_t>(label),
                                                       static_cast<std::uint64_t>(number))));
        w = std::lround(static_cast<float>(width) * size_rng.uniform(0.75f, 1.25f));
        h = std::lround(static_cast<float>(height) * size_rng.uniform(0.75f, 1.25f));
      }
      const Image image = draw_synth_image(kind, label, number, config.seed, w, h);
      const std::string& name = names[static_cast<std::size_t>(label)];
      const std::string file = kind == "imagenet" ? name + "_" + std::to_string(number) + ".JPEG"
                                                  : name + "." + std::to_string(number) + ".jpg";
      const fs::path path = out / (train ? "train" : "validation") / name / file;
      write_jpeg(path.string(), image, config.quality);
      bytes[static_cast<std::size_t>(i)] = static_cast<std::int64_t>(fs::file_size(path));
      if (binary) {
        ImageDataset& set = train ? train_set : test_set;
        std::uint8_t* dst = set.images.data<std::uint8_t>() + j * 3 * 32 * 32;  // (3, 32, 32)
        for (std::int64_t c = 0; c < 3; ++c)
          for (std::int64_t p = 0; p < 32 * 32; ++p)
            dst[c * 1024 + p] = image.pixels[static_cast<std::size_t>(p * 3 + c)];
        set.labels.data<std::int32_t>()[j] = static_cast<std::int32_t>(label);
      }
    } catch (...) {
      // The error of the lowest index wins, so the message does not depend on scheduling.
      std::lock_guard<std::mutex> lock(error_mutex);
      failed = true;
      if (i < error_at) {
        error_at = i;
        error = std::current_exception();
      }
    }
  }
  if (error) std::rethrow_exception(error);

  SynthSummary summary;
  summary.train_images = train_n;
  summary.val_images = val_n;
  summary.class_names = names;
  summary.width = width;
  summary.height = height;
  for (std::int64_t b : bytes) summary.bytes += b;
  if (binary) {
    const fs::path bin = out / "cifar-10-batches-bin";
    write_cifar10(bin.string(), "train", train_set);
    if (val_n > 0) write_cifar10(bin.string(), "test", test_set);
    for (const auto& entry : fs::directory_iterator(bin))
      if (entry.is_regular_file()) summary.bytes += static_cast<std::int64_t>(entry.file_size());
  }
  return summary;
}

}  // namespace epoch::data
