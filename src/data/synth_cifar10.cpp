// The ten CIFAR-10 motifs of `epoch data synth` (airplane ... truck) and the class-typical scenes
// they are drawn on; cat and dog are the faces of synth_catdog.cpp.
#include <algorithm>
#include <cmath>

#include "data/synth_generators.h"
#include "data/synth_scene.h"

namespace epoch::data::synth {
namespace {

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

}  // namespace

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

}  // namespace epoch::data::synth
