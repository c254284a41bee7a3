// The cat and dog faces of `epoch data synth` (kind catdog, and CIFAR-10's cat and dog): shared
// fur colours, so ears, eyes, nose, muzzle and whiskers tell the classes apart.
#include <algorithm>
#include <cmath>

#include "data/synth_generators.h"
#include "data/synth_scene.h"

namespace epoch::data::synth {
namespace {

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

}  // namespace

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

}  // namespace epoch::data::synth
