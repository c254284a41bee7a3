// The rasterizer of synth_draw.h: shape set-up (bounding boxes, edge normals), whole-canvas
// backgrounds, and the finish into 8-bit pixels.
#include "data/synth_draw.h"

namespace epoch::data::draw {

Rgb hsv(float hue_deg, float saturation, float value) {
  float h = std::fmod(hue_deg, 360.0f);
  if (h < 0) h += 360.0f;
  const float s = std::clamp(saturation, 0.0f, 1.0f), v = std::clamp(value, 0.0f, 1.0f) * 255.0f;
  const float c = v * s;
  const float hp = h / 60.0f;
  const float x = c * (1.0f - std::abs(std::fmod(hp, 2.0f) - 1.0f));
  const float m = v - c;
  Rgb out;
  switch (static_cast<int>(hp) % 6) {
    case 0:
      out = {c, x, 0};
      break;
    case 1:
      out = {x, c, 0};
      break;
    case 2:
      out = {0, c, x};
      break;
    case 3:
      out = {0, x, c};
      break;
    case 4:
      out = {x, 0, c};
      break;
    default:
      out = {c, 0, x};
      break;
  }
  return {out.r + m, out.g + m, out.b + m};
}

Box box_around(float x_lo, float y_lo, float x_hi, float y_hi) {
  // Clamped before the conversion so far-off shapes cannot overflow it.
  auto lo = [](float v) {
    return static_cast<std::int64_t>(std::floor(std::clamp(v, -1e7f, 1e7f))) - 1;
  };
  auto hi = [](float v) {
    return static_cast<std::int64_t>(std::ceil(std::clamp(v, -1e7f, 1e7f))) + 2;
  };
  return {lo(x_lo), lo(y_lo), hi(x_hi), hi(y_hi)};
}

Paint Paint::gradient(Rgb c0, Rgb c1, Vec2 from, Vec2 to) {
  const Vec2 d = to - from;
  const float len2 = dot(d, d);
  if (len2 < 1e-12f) return of(c0);
  return {c0, c1, from, d * (1.0f / len2), false};
}

ConvexPolygon::ConvexPolygon(std::span<const Vec2> points) {
  n_ = static_cast<int>(std::min<std::size_t>(points.size(), 8));
  float area = 0;
  float x_lo = 1e30f, y_lo = 1e30f, x_hi = -1e30f, y_hi = -1e30f;
  for (int i = 0; i < n_; ++i) {
    const Vec2 a = points[static_cast<std::size_t>(i)];
    const Vec2 b = points[static_cast<std::size_t>((i + 1) % n_)];
    area += a.x * b.y - b.x * a.y;
    x_lo = std::min(x_lo, a.x);
    y_lo = std::min(y_lo, a.y);
    x_hi = std::max(x_hi, a.x);
    y_hi = std::max(y_hi, a.y);
  }
  // Outward normals: for a positive (clockwise on screen, y down) winding the outside of edge
  // a->b is to its left in screen terms, i.e. normal (dy, -dx).
  const float sign = area >= 0 ? 1.0f : -1.0f;
  for (int i = 0; i < n_; ++i) {
    const Vec2 a = points[static_cast<std::size_t>(i)];
    const Vec2 b = points[static_cast<std::size_t>((i + 1) % n_)];
    const Vec2 d = b - a;
    const float len = length(d);
    if (len < 1e-6f) {  // a repeated point: an edge that never wins the max
      nx_[i] = ny_[i] = 0;
      off_[i] = 1e30f;
      continue;
    }
    nx_[i] = sign * d.y / len;
    ny_[i] = -sign * d.x / len;
    off_[i] = nx_[i] * a.x + ny_[i] * a.y;
  }
  if (n_ < 3 || std::abs(area) < 1e-6f) {
    n_ = 0;  // degenerate: covers nothing
    box_ = {};
    return;
  }
  box_ = box_around(x_lo, y_lo, x_hi, y_hi);
}

EllipseSdf::EllipseSdf(const Ellipse& e) {
  const float rx = std::max(e.rx, 1e-3f), ry = std::max(e.ry, 1e-3f);
  cx_ = e.c.x;
  cy_ = e.c.y;
  cs_ = std::cos(e.angle);
  sn_ = std::sin(e.angle);
  irx2_ = 1.0f / (rx * rx);
  iry2_ = 1.0f / (ry * ry);
  rmin_ = std::min(rx, ry);
  const float ex = std::sqrt(rx * rx * cs_ * cs_ + ry * ry * sn_ * sn_);
  const float ey = std::sqrt(rx * rx * sn_ * sn_ + ry * ry * cs_ * cs_);
  box_ = box_around(cx_ - ex, cy_ - ey, cx_ + ex, cy_ + ey);
}

CapsuleSdf::CapsuleSdf(Vec2 a, Vec2 b, float r) : a_(a), ab_(b - a), r_(r) {
  const float len2 = dot(ab_, ab_);
  inv_len2_ = len2 > 1e-12f ? 1.0f / len2 : 0.0f;
  box_ = box_around(std::min(a.x, b.x) - r, std::min(a.y, b.y) - r, std::max(a.x, b.x) + r,
                    std::max(a.y, b.y) + r);
}

ArcSdf::ArcSdf(Vec2 c, float r, float dir, float half, float w) : c_(c), r_(r), w_(w) {
  vx_ = std::cos(dir);
  vy_ = std::sin(dir);
  ux_ = -vy_;
  uy_ = vx_;
  sh_ = std::sin(half);
  ch_ = std::cos(half);
  const float e = r + w;
  box_ = box_around(c.x - e, c.y - e, c.x + e, c.y + e);
}

void linear_gradient(Canvas& cv, Rgb c0, Rgb c1, float angle) {
  const float dx = std::cos(angle), dy = std::sin(angle);
  const float w = static_cast<float>(cv.width()), h = static_cast<float>(cv.height());
  // t runs from 0 to 1 between the canvas corners furthest back and forward along (dx, dy).
  const float lo = std::min(0.0f, dx * w) + std::min(0.0f, dy * h);
  const float hi = std::max(0.0f, dx * w) + std::max(0.0f, dy * h);
  const float inv = 1.0f / std::max(hi - lo, 1e-6f);
  for (std::int64_t y = 0; y < cv.height(); ++y) {
    float* line = cv.row(y);
    const float ty = dy * (static_cast<float>(y) + 0.5f) - lo;
    for (std::int64_t x = 0; x < cv.width(); ++x) {
      const float t = (dx * (static_cast<float>(x) + 0.5f) + ty) * inv;
      line[3 * x] = c0.r + (c1.r - c0.r) * t;
      line[3 * x + 1] = c0.g + (c1.g - c0.g) * t;
      line[3 * x + 2] = c0.b + (c1.b - c0.b) * t;
    }
  }
}

void radial_gradient(Canvas& cv, Rgb c0, Rgb c1, Vec2 centre, float radius) {
  const float inv = 1.0f / std::max(radius, 1e-6f);
  for (std::int64_t y = 0; y < cv.height(); ++y) {
    float* line = cv.row(y);
    const float dy = static_cast<float>(y) + 0.5f - centre.y;
    for (std::int64_t x = 0; x < cv.width(); ++x) {
      const float dx = static_cast<float>(x) + 0.5f - centre.x;
      const float t = std::min(std::sqrt(dx * dx + dy * dy) * inv, 1.0f);
      line[3 * x] = c0.r + (c1.r - c0.r) * t;
      line[3 * x + 1] = c0.g + (c1.g - c0.g) * t;
      line[3 * x + 2] = c0.b + (c1.b - c0.b) * t;
    }
  }
}

namespace {

/// Per-column (or per-row) lattice cell and smoothstep weight of value noise.
void lattice_axis(std::int64_t n, float cell, std::int64_t cells, std::vector<std::int64_t>& idx,
                  std::vector<float>& weight) {
  idx.resize(static_cast<std::size_t>(n));
  weight.resize(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    const float f = (static_cast<float>(i) + 0.5f) / cell;
    const auto k = std::min(static_cast<std::int64_t>(f), cells - 1);
    const float t = std::clamp(f - static_cast<float>(k), 0.0f, 1.0f);
    idx[static_cast<std::size_t>(i)] = k;
    weight[static_cast<std::size_t>(i)] = t * t * (3.0f - 2.0f * t);
  }
}

}  // namespace

void value_noise(Canvas& cv, RandomStream& rng, int cells, Rgb colour, float alpha) {
  const float cell = static_cast<float>(std::max(cv.width(), cv.height())) /
                     static_cast<float>(std::max(cells, 1));
  const std::int64_t gx =
      static_cast<std::int64_t>(std::ceil(static_cast<float>(cv.width()) / cell));
  const std::int64_t gy =
      static_cast<std::int64_t>(std::ceil(static_cast<float>(cv.height()) / cell));
  std::vector<float> lattice(static_cast<std::size_t>((gx + 1) * (gy + 1)));
  for (float& v : lattice) v = rng.uniform() * alpha;
  std::vector<std::int64_t> xi, yi;
  std::vector<float> xw, yw;
  lattice_axis(cv.width(), cell, gx, xi, xw);
  lattice_axis(cv.height(), cell, gy, yi, yw);
  for (std::int64_t y = 0; y < cv.height(); ++y) {
    float* line = cv.row(y);
    const float* l0 = lattice.data() + yi[static_cast<std::size_t>(y)] * (gx + 1);
    const float* l1 = l0 + gx + 1;
    const float wy = yw[static_cast<std::size_t>(y)];
    for (std::int64_t x = 0; x < cv.width(); ++x) {
      const auto k = static_cast<std::size_t>(xi[static_cast<std::size_t>(x)]);
      const float wx = xw[static_cast<std::size_t>(x)];
      const float top = l0[k] + (l0[k + 1] - l0[k]) * wx;
      const float bottom = l1[k] + (l1[k + 1] - l1[k]) * wx;
      const float a = top + (bottom - top) * wy;
      float* q = line + 3 * x;
      q[0] += (colour.r - q[0]) * a;
      q[1] += (colour.g - q[1]) * a;
      q[2] += (colour.b - q[2]) * a;
    }
  }
}

void stripes(Canvas& cv, float period, float angle, Rgb colour, float alpha) {
  const float kx = std::cos(angle) * 6.2831853f / period,
              ky = std::sin(angle) * 6.2831853f / period;
  // sin(kx * x + phase) along a row by rotating (sin, cos) one pixel at a time, restarted from
  // the exact value every row.
  const float step_s = std::sin(kx), step_c = std::cos(kx);
  for (std::int64_t y = 0; y < cv.height(); ++y) {
    float* line = cv.row(y);
    const float phase = ky * (static_cast<float>(y) + 0.5f) + kx * 0.5f;
    float s = std::sin(phase), c = std::cos(phase);
    for (std::int64_t x = 0; x < cv.width(); ++x) {
      const float a = alpha * 0.5f * (1.0f + s);
      float* q = line + 3 * x;
      q[0] += (colour.r - q[0]) * a;
      q[1] += (colour.g - q[1]) * a;
      q[2] += (colour.b - q[2]) * a;
      const float s_next = s * step_c + c * step_s;
      c = c * step_c - s * step_s;
      s = s_next;
    }
  }
}

namespace {

/// 32 bits of per-pixel noise from (key, pixel index): multiply-xorshift rounds (the
/// multipliers are the golden ratio and Philox's) — plenty for film grain, and vectorizable.
inline std::uint32_t pixel_hash(std::uint32_t key, std::uint32_t i) {
  std::uint32_t h = (i ^ key) * 0x9E3779B9u;
  h ^= h >> 16;
  h *= 0xD2511F53u;
  h ^= h >> 15;
  h *= 0x9E3779B9u;
  return h ^ (h >> 16);
}

}  // namespace

Image finish(const Canvas& cv, const Finish& f) {
  const std::int64_t s = std::max<std::int64_t>(f.downsample, 1);
  Image out;
  out.width = cv.width() / s;
  out.height = cv.height() / s;
  out.channels = 3;
  out.pixels.resize(static_cast<std::size_t>(out.width * out.height * 3));
  const std::int64_t n = out.width * 3;
  const float inv = 1.0f / static_cast<float>(s * s);
  // Per element of a row: channel gain x contrast (x the box filter's 1/s^2), and the noise.
  std::vector<float> gain(static_cast<std::size_t>(n)), noise(static_cast<std::size_t>(n), 0.0f);
  for (std::int64_t i = 0; i < n; ++i) {
    const float g = i % 3 == 0 ? f.gain.r : i % 3 == 1 ? f.gain.g : f.gain.b;
    gain[static_cast<std::size_t>(i)] = g * f.contrast * inv;
  }
  const float shift = 128.0f - 128.0f * f.contrast + f.brightness + 0.5f;  // + 0.5: rounding
  const float grain = f.grain / 255.0f;
  const auto key = static_cast<std::uint32_t>(f.grain_key ^ (f.grain_key >> 32));
  std::vector<float> acc(static_cast<std::size_t>(s > 1 ? n : 0));
  for (std::int64_t y = 0; y < out.height; ++y) {
    const float* src = cv.row(y);
    if (s > 1) {
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (std::int64_t sy = 0; sy < s; ++sy) {
        const float* line = cv.row(y * s + sy);
        for (std::int64_t x = 0; x < out.width; ++x)
          for (std::int64_t sx = 0; sx < s; ++sx)
            for (std::int64_t c = 0; c < 3; ++c)
              acc[static_cast<std::size_t>(3 * x + c)] += line[3 * (x * s + sx) + c];
      }
      src = acc.data();
    }
    if (grain > 0) {
      // Triangular noise in [-grain, grain] (the sum of two bytes of the pixel's hash), the
      // same on all three channels like luminance grain.
      const auto base = static_cast<std::uint32_t>(y * out.width);
      for (std::int64_t x = 0; x < out.width; ++x) {
        const std::uint32_t h = pixel_hash(key, base + static_cast<std::uint32_t>(x));
        const float v =
            (static_cast<float>(h & 255u) + static_cast<float>((h >> 8) & 255u) - 255.0f) * grain;
        float* q = noise.data() + 3 * x;
        q[0] = q[1] = q[2] = v;
      }
    }
    std::uint8_t* dst = out.pixels.data() + y * n;
    const float* g = gain.data();
    const float* z = noise.data();
    for (std::int64_t i = 0; i < n; ++i) {
      const float v = std::clamp(src[i] * g[i] + shift + z[i], 0.0f, 255.0f);
      dst[i] = static_cast<std::uint8_t>(static_cast<std::int32_t>(v));
    }
  }
  return out;
}

}  // namespace epoch::data::draw
