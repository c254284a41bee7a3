// The imagenet-style classes of `epoch data synth`: shape x pattern x colour family (from the
// label's decimal digits) over textured, cluttered backgrounds.
#include <algorithm>
#include <cmath>

#include "data/synth_generators.h"
#include "data/synth_scene.h"

namespace epoch::data::synth {
namespace {

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

}  // namespace

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

}  // namespace epoch::data::synth
