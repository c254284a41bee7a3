// The shared backgrounds and lighting of `epoch data synth` (see synth_scene.h): clutter,
// texture, sky, ground, the class-typical scenes and the per-image finish.
#include "data/synth_scene.h"

#include <algorithm>
#include <cmath>

namespace epoch::data::synth {
namespace {

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

}  // namespace

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

}  // namespace epoch::data::synth
