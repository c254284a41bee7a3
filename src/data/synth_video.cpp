// `epoch data synth --kind video` (see synth_video.h). Each pixel is a ray from a pinhole camera
// at eye height: below the horizon it meets the ground plane, whose colour is value noise of the
// world position (octaves finer than the pixel's footprint fade out, so the texture does not
// shimmer) fading into haze; above it, a sky gradient, clouds and a mountain ridge that depend on
// the direction only, so they move with panning alone. Balls with their own velocities roll on
// the ground and are drawn far to near as shaded discs. Frames are drawn at 2x2 samples per
// pixel and averaged, the rows in parallel. All randomness comes from (seed, sequence, what is
// drawn).
#include "epoch/data/synth_video.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

#include "epoch/data/image_codec.h"
#include "epoch/tensor/error.h"
#include "epoch/tensor/file_io.h"
#include "epoch/tensor/random.h"

namespace epoch::data {
namespace {

namespace fs = std::filesystem;

constexpr std::int64_t kMinSize = 16, kMaxSize = 4096;
constexpr int kSamples = 2;  // per pixel and axis
constexpr float kTwoPi = 6.28318530718f;
constexpr float kRowPeriod = 1.2f;  // world units between furrows

struct Colour {
  float r, g, b;  // 0-1
};
Colour mix(Colour a, Colour b, float t) {
  return {a.r + (b.r - a.r) * t, a.g + (b.g - a.g) * t, a.b + (b.b - a.b) * t};
}
Colour scaled(Colour c, float s) { return {c.r * s, c.g * s, c.b * s}; }

// A uniform value in [0, 1) at integer lattice point (i, j) of noise layer `key`.
float lattice(std::uint64_t key, std::int64_t i, std::int64_t j) {
  const std::uint64_t h =
      mix64(mix64(key, static_cast<std::uint64_t>(i)), static_cast<std::uint64_t>(j));
  return static_cast<float>(h >> 40) * (1.0f / 16777216.0f);
}

float smooth(float t) { return t * t * (3.0f - 2.0f * t); }

// Value noise in [0, 1): the lattice values around (x, y), interpolated smoothly.
float value_noise(std::uint64_t key, float x, float y) {
  const float fx = std::floor(x), fy = std::floor(y);
  const auto i = static_cast<std::int64_t>(fx), j = static_cast<std::int64_t>(fy);
  const float tx = smooth(x - fx), ty = smooth(y - fy);
  const float a = lattice(key, i, j), b = lattice(key, i + 1, j);
  const float c = lattice(key, i, j + 1), d = lattice(key, i + 1, j + 1);
  return (a + (b - a) * tx) + ((c + (d - c) * tx) - (a + (b - a) * tx)) * ty;
}

// Octaves of value noise at frequencies base * 2^k, each faded out as its wavelength nears the
// footprint (world units per sample): the mean 0.5 stands in for what a pixel cannot resolve.
float layered_noise(std::uint64_t key, float x, float y, float base, int octaves, float footprint) {
  float total = 0.0f, weight = 0.0f, amplitude = 1.0f, frequency = base;
  for (int k = 0; k < octaves; ++k) {
    const float resolve = std::clamp(1.5f - 2.0f * footprint * frequency, 0.0f, 1.0f);
    const float v = value_noise(key + static_cast<std::uint64_t>(k), x * frequency, y * frequency);
    total += amplitude * (0.5f + (v - 0.5f) * resolve);
    weight += amplitude;
    amplitude *= 0.55f;
    frequency *= 2.0f;
  }
  return total / weight;
}

struct Ball {
  float x, z, vx, vz, radius;
  Colour colour;
  int respawns = 0;
};

// One sequence's world and camera, advanced a frame at a time.
class Walk {
 public:
  Walk(std::uint64_t seed, std::int64_t index, std::int64_t width, std::int64_t height)
      : width_(width),
        height_(height),
        key_(mix64(mix64(seed, hash_name("video")), static_cast<std::uint64_t>(index))) {
    RandomStream rng(key_, 1);
    x_ = rng.uniform(-1000.0f, 1000.0f);
    z_ = rng.uniform(-1000.0f, 1000.0f);
    yaw_ = rng.uniform(0.0f, kTwoPi);
    // World units are metres and a frame is a tenth of a second (KITTI's and the PredNet
    // evaluations' rate): 7.5-15 m/s is a car in town, which puts the previous-frame MSE near
    // the 8e-3 of car-mounted footage (Caltech Pedestrian at 128x160, Lotter et al. 2017).
    speed_ = rng.uniform(0.75f, 1.5f);
    turn_ = rng.uniform(-0.015f, 0.015f);
    sway_ = rng.uniform(0.01f, 0.03f);
    sway_period_ = rng.uniform(60.0f, 200.0f);
    sway_phase_ = rng.uniform(0.0f, kTwoPi);
    grass_ = {rng.uniform(0.20f, 0.35f), rng.uniform(0.40f, 0.55f), rng.uniform(0.12f, 0.22f)};
    soil_ = {rng.uniform(0.45f, 0.60f), rng.uniform(0.35f, 0.45f), rng.uniform(0.22f, 0.30f)};
    sky_ = {rng.uniform(0.35f, 0.55f), rng.uniform(0.55f, 0.70f), rng.uniform(0.80f, 0.95f)};
    const float rows_angle = rng.uniform(0.0f, kTwoPi);
    row_dx_ = std::cos(rows_angle);
    row_dz_ = std::sin(rows_angle);
    ridge_phase_ = {rng.uniform(0.0f, kTwoPi), rng.uniform(0.0f, kTwoPi),
                    rng.uniform(0.0f, kTwoPi)};
    const int balls = 3 + static_cast<int>(rng.uniform(0.0f, 4.0f));
    for (int b = 0; b < balls; ++b) {
      balls_.push_back({});
      spawn(balls_.back(), static_cast<std::uint64_t>(b), true);
    }
    focal_ = 0.9f * static_cast<float>(width);
    horizon_ = 0.42f * static_cast<float>(height);
  }

  Image frame() const {
    const std::int64_t sw = width_ * kSamples, sh = height_ * kSamples;
    std::vector<Colour> samples(static_cast<std::size_t>(sw * sh));
    const float f = focal_ * kSamples, horizon = horizon_ * kSamples;
    const float eye = 1.6f + 0.03f * std::sin(kTwoPi * static_cast<float>(t_) / 11.0f);
    const float fx = std::sin(yaw_), fz = std::cos(yaw_);   // forward
    const float rx = std::cos(yaw_), rz = -std::sin(yaw_);  // right
#pragma omp parallel for schedule(static)
    for (std::int64_t v = 0; v < sh; ++v)
      for (std::int64_t u = 0; u < sw; ++u) {
        const float x = (static_cast<float>(u) + 0.5f - 0.5f * static_cast<float>(sw)) / f;
        const float y = (static_cast<float>(v) + 0.5f - horizon) / f;  // down from the horizon
        Colour c;
        if (y > 0.002f) {
          const float depth = eye / y;
          const float wx = x_ + depth * (fx + x * rx), wz = z_ + depth * (fz + x * rz);
          const float footprint = depth / (f * y) * 0.5f + depth / f;
          c = ground(wx, wz, footprint);
          const float haze = 1.0f - std::exp(-depth / 45.0f);
          c = mix(c, mix(sky_, {0.8f, 0.82f, 0.85f}, 0.6f), haze);
        } else {
          c = sky(yaw_ + std::atan(x), -y);
        }
        samples[static_cast<std::size_t>(v * sw + u)] = c;
      }
    draw_balls(samples, sw, sh, f, horizon, eye, fx, fz, rx, rz);
    Image img;
    img.width = width_;
    img.height = height_;
    img.channels = 3;
    img.pixels.resize(static_cast<std::size_t>(width_ * height_ * 3));
    const float norm = 255.0f / (kSamples * kSamples);
    for (std::int64_t py = 0; py < height_; ++py)
      for (std::int64_t px = 0; px < width_; ++px) {
        float r = 0, g = 0, b = 0;
        for (int dy = 0; dy < kSamples; ++dy)
          for (int dx = 0; dx < kSamples; ++dx) {
            const Colour& s =
                samples[static_cast<std::size_t>((py * kSamples + dy) * sw + px * kSamples + dx)];
            r += s.r;
            g += s.g;
            b += s.b;
          }
        std::uint8_t* out = &img.pixels[static_cast<std::size_t>((py * width_ + px) * 3)];
        out[0] = static_cast<std::uint8_t>(std::clamp(std::lround(r * norm), 0L, 255L));
        out[1] = static_cast<std::uint8_t>(std::clamp(std::lround(g * norm), 0L, 255L));
        out[2] = static_cast<std::uint8_t>(std::clamp(std::lround(b * norm), 0L, 255L));
      }
    return img;
  }

  void advance() {
    ++t_;
    const float t = static_cast<float>(t_);
    yaw_ += turn_ + sway_ * std::sin(kTwoPi * t / sway_period_ + sway_phase_);
    x_ += speed_ * std::sin(yaw_);
    z_ += speed_ * std::cos(yaw_);
    for (std::size_t b = 0; b < balls_.size(); ++b) {
      Ball& ball = balls_[b];
      ball.x += ball.vx;
      ball.z += ball.vz;
      const float dx = ball.x - x_, dz = ball.z - z_;
      const float ahead = dx * std::sin(yaw_) + dz * std::cos(yaw_);
      if (ahead < 0.5f || dx * dx + dz * dz > 40.0f * 40.0f) spawn(ball, b, false);
    }
  }

 private:
  Colour ground(float x, float z, float footprint) const {
    const float patches = layered_noise(key_ + 100, x, z, 0.04f, 2, footprint);
    const float detail = layered_noise(key_ + 200, x, z, 0.5f, 4, footprint);
    const float paths = layered_noise(key_ + 300, x, z, 0.12f, 2, footprint);
    const float soil = std::clamp((patches - 0.45f) * 4.0f, 0.0f, 1.0f);
    Colour c = mix(grass_, soil_, soil);
    c = scaled(c, 0.45f + std::clamp((detail - 0.5f) * 2.5f + 0.5f, 0.0f, 1.0f) * 0.9f);
    // Furrows across the soil: parallel rows whose perspective shows the camera's motion, faded
    // where a sample cannot resolve them.
    const float rows = std::clamp(1.5f - 2.0f * footprint * (1.0f / kRowPeriod), 0.0f, 1.0f);
    const float furrow = 0.5f + 0.5f * std::sin(kTwoPi * (x * row_dx_ + z * row_dz_) / kRowPeriod);
    c = scaled(c, 1.0f - 0.35f * soil * rows * furrow);
    // Light stone paths where the path noise is high: sharp edges that move.
    if (paths > 0.58f)
      c = mix(c, {0.72f, 0.70f, 0.66f}, std::clamp((paths - 0.58f) * 25.0f, 0.0f, 1.0f));
    return c;
  }

  Colour sky(float azimuth, float elevation) const {
    Colour c =
        mix(mix(sky_, {0.85f, 0.87f, 0.9f}, 0.5f), sky_, std::clamp(elevation * 3.0f, 0.0f, 1.0f));
    const float ridge = 0.05f + 0.025f * std::sin(3.0f * azimuth + ridge_phase_[0]) +
                        0.015f * std::sin(7.0f * azimuth + ridge_phase_[1]) +
                        0.008f * std::sin(17.0f * azimuth + ridge_phase_[2]);
    if (elevation < ridge) {
      const float shade = 0.8f + 0.2f * std::sin(5.0f * azimuth + ridge_phase_[1]);
      c = mix(c, scaled({0.35f, 0.38f, 0.45f}, shade), 0.85f);
    } else {
      const float cloud = value_noise(key_ + 400, azimuth * 6.0f, elevation * 12.0f);
      c = mix(c, {0.95f, 0.95f, 0.97f}, std::clamp((cloud - 0.6f) * 2.5f, 0.0f, 0.8f));
    }
    return c;
  }

  // A ball ahead of the camera (anywhere in view at the start; beyond mid-distance later, so
  // it comes into view as the camera approaches), rolling slowly in a direction of its own.
  void spawn(Ball& ball, std::uint64_t which, bool first) {
    RandomStream rng(key_, mix64(1000 + which, static_cast<std::uint64_t>(ball.respawns)));
    const float ahead = first ? rng.uniform(4.0f, 25.0f) : rng.uniform(18.0f, 30.0f);
    const float side = rng.uniform(-0.5f, 0.5f) * ahead;
    ball.x = x_ + ahead * std::sin(yaw_) + side * std::cos(yaw_);
    ball.z = z_ + ahead * std::cos(yaw_) - side * std::sin(yaw_);
    const float heading = rng.uniform(0.0f, kTwoPi), pace = rng.uniform(0.02f, 0.12f);
    ball.vx = pace * std::sin(heading);
    ball.vz = pace * std::cos(heading);
    ball.radius = rng.uniform(0.3f, 0.8f);
    const float hue = rng.uniform(0.0f, 1.0f);
    ball.colour = {0.5f + 0.45f * std::sin(kTwoPi * hue),
                   0.5f + 0.45f * std::sin(kTwoPi * (hue + 0.33f)),
                   0.5f + 0.45f * std::sin(kTwoPi * (hue + 0.67f))};
    ++ball.respawns;
  }

  void draw_balls(std::vector<Colour>& samples, std::int64_t sw, std::int64_t sh, float f,
                  float horizon, float eye, float fx, float fz, float rx, float rz) const {
    struct Seen {
      float depth, u, v, radius;
      const Ball* ball;
    };
    std::vector<Seen> seen;
    for (const Ball& b : balls_) {
      const float dx = b.x - x_, dz = b.z - z_;
      const float depth = dx * fx + dz * fz, side = dx * rx + dz * rz;
      if (depth < 0.5f) continue;
      seen.push_back({depth, 0.5f * static_cast<float>(sw) + f * side / depth,
                      horizon + f * (eye - b.radius) / depth, f * b.radius / depth, &b});
    }
    std::sort(seen.begin(), seen.end(),
              [](const Seen& a, const Seen& b) { return a.depth > b.depth; });
    for (const Seen& s : seen) {
      const auto u0 = static_cast<std::int64_t>(std::max(0.0f, std::floor(s.u - s.radius - 1)));
      const auto u1 = static_cast<std::int64_t>(
          std::min(static_cast<float>(sw - 1), std::ceil(s.u + s.radius + 1)));
      const auto v0 = static_cast<std::int64_t>(std::max(0.0f, std::floor(s.v - s.radius - 1)));
      const auto v1 = static_cast<std::int64_t>(
          std::min(static_cast<float>(sh - 1), std::ceil(s.v + s.radius + 1)));
      const float haze = 1.0f - std::exp(-s.depth / 45.0f);
      for (std::int64_t v = v0; v <= v1; ++v)
        for (std::int64_t u = u0; u <= u1; ++u) {
          const float du = (static_cast<float>(u) + 0.5f - s.u) / s.radius;
          const float dv = (static_cast<float>(v) + 0.5f - s.v) / s.radius;
          const float d2 = du * du + dv * dv;
          if (d2 >= 1.0f) continue;
          // Lit from the upper left: brighter where the sphere's normal faces the light.
          const float nz = std::sqrt(1.0f - d2);
          const float light =
              std::clamp(0.35f + 0.65f * (-0.5f * du - 0.6f * dv + 0.62f * nz), 0.15f, 1.0f);
          Colour c = scaled(s.ball->colour, light);
          c = mix(c, mix(sky_, {0.8f, 0.82f, 0.85f}, 0.6f), haze);
          const float edge =
              std::clamp((1.0f - std::sqrt(d2)) * s.radius, 0.0f, 1.0f);  // antialiased rim
          Colour& dst = samples[static_cast<std::size_t>(v * sw + u)];
          dst = mix(dst, c, edge);
        }
    }
  }

  std::int64_t width_, height_;
  std::uint64_t key_;
  std::int64_t t_ = 0;
  float x_ = 0, z_ = 0, yaw_ = 0, speed_ = 0, turn_ = 0, sway_ = 0, sway_period_ = 100,
        sway_phase_ = 0;
  float focal_ = 1, horizon_ = 0, row_dx_ = 1, row_dz_ = 0;
  Colour grass_{}, soil_{}, sky_{};
  std::array<float, 3> ridge_phase_{};
  std::vector<Ball> balls_;
};

void check_size(std::int64_t width, std::int64_t height) {
  if (width < kMinSize || height < kMinSize || width > kMaxSize || height > kMaxSize)
    EPOCH_THROW(ConfigError, "synth video: frame size ", width, "x", height, " outside ", kMinSize,
                "-", kMaxSize, " pixels");
}

std::string numbered(const char* prefix, std::int64_t i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%s_%05lld", prefix, static_cast<long long>(i));
  return buf;
}

}  // namespace

void render_video_sequence(std::uint64_t seed, std::int64_t index, std::int64_t frames,
                           std::int64_t width, std::int64_t height,
                           const std::function<void(std::int64_t, const Image&)>& frame) {
  EPOCH_CHECK(width >= kMinSize && height >= kMinSize && width <= kMaxSize && height <= kMaxSize,
              "render_video_sequence: frame size ", width, "x", height, " outside ", kMinSize, "-",
              kMaxSize);
  EPOCH_CHECK(frames >= 1 && index >= 0, "render_video_sequence: needs frames >= 1 and index >= 0");
  Walk walk(seed, index, width, height);
  for (std::int64_t t = 0; t < frames; ++t) {
    frame(t, walk.frame());
    walk.advance();
  }
}

void PreviousFrameMse::add(const Image& previous, const Image& current) {
  EPOCH_CHECK(previous.pixels.size() == current.pixels.size(),
              "previous-frame MSE: frames of different sizes");
  double s = 0.0;
  for (std::size_t i = 0; i < current.pixels.size(); ++i) {
    const double d = (static_cast<double>(current.pixels[i]) - previous.pixels[i]) / 255.0;
    s += d * d;
  }
  sum += s;
  count += static_cast<std::int64_t>(current.pixels.size());
}

VideoSynthSummary write_synth_video(const VideoSynthConfig& config) {
  check_size(config.width, config.height);
  if (config.sequences < 1)
    EPOCH_THROW(ConfigError, "synth video: needs at least 1 training sequence, got ",
                config.sequences);
  if (config.val_sequences < -1)
    EPOCH_THROW(ConfigError, "synth video: validation sequences ", config.val_sequences,
                " is negative");
  if (config.frames < 2 || config.frames > 1000000)
    EPOCH_THROW(ConfigError, "synth video: frames per sequence ", config.frames,
                " outside 2-1000000 (a baseline needs two)");
  if (config.format != "png" && config.format != "jpeg")
    EPOCH_THROW(ConfigError, "synth video: unknown format '", config.format,
                "' (valid: png, jpeg)");
  if (config.quality < 1 || config.quality > 100)
    EPOCH_THROW(ConfigError, "synth video: JPEG quality ", config.quality, " outside 1-100");
  if (config.out_dir.empty()) EPOCH_THROW(ConfigError, "synth video: no output directory given");
  const std::int64_t train_n = config.sequences;
  const std::int64_t val_n = config.val_sequences < 0 ? std::max<std::int64_t>(1, (train_n + 3) / 4)
                                                      : config.val_sequences;
  const fs::path out(config.out_dir);
  std::error_code ec;
  for (const char* sub : {"train", "validation"})
    if (fs::exists(out / sub, ec))
      EPOCH_THROW(ConfigError, (out / sub).string(), " already exists; choose a new output ",
                  "directory or remove it");
  const std::int64_t total = train_n + val_n;
  for (std::int64_t i = 0; i < total; ++i) {
    const fs::path dir = out / (i < train_n ? "train" : "validation") / numbered("seq", i);
    fs::create_directories(dir, ec);
    if (ec) EPOCH_THROW(IoError, dir.string(), ": cannot create: ", ec.message());
  }
  const bool png = config.format == "png";
  // Sequences one after the other, each frame's rows in parallel (frame(): one long sequence
  // uses every core too).
  std::vector<std::int64_t> bytes(static_cast<std::size_t>(total), 0);
  std::vector<PreviousFrameMse> baseline(static_cast<std::size_t>(total));
  for (std::int64_t i = 0; i < total; ++i) {
    const fs::path dir = out / (i < train_n ? "train" : "validation") / numbered("seq", i);
    Image previous;
    render_video_sequence(
        config.seed, i, config.frames, config.width, config.height,
        [&](std::int64_t t, const Image& image) {
          const std::vector<std::uint8_t> data =
              png ? encode_png(image) : encode_jpeg(image, config.quality);
          const fs::path file = dir / (numbered("frame", t) + (png ? ".png" : ".jpg"));
          write_file_atomic(file.string(), data, /*durable=*/false);
          bytes[static_cast<std::size_t>(i)] += static_cast<std::int64_t>(data.size());
          // The baseline of the frames as written (JPEG: as decoded).
          Image written = png ? image : decode_image(data, file.string());
          if (t > 0) baseline[static_cast<std::size_t>(i)].add(previous, written);
          previous = std::move(written);
        });
  }

  VideoSynthSummary s;
  s.train_sequences = train_n;
  s.val_sequences = val_n;
  s.frames = config.frames;
  s.width = config.width;
  s.height = config.height;
  PreviousFrameMse train_mse, val_mse;
  for (std::int64_t i = 0; i < total; ++i) {
    s.bytes += bytes[static_cast<std::size_t>(i)];
    PreviousFrameMse& m = i < train_n ? train_mse : val_mse;
    m.sum += baseline[static_cast<std::size_t>(i)].sum;
    m.count += baseline[static_cast<std::size_t>(i)].count;
  }
  s.train_baseline_mse = train_mse.mean();
  s.val_baseline_mse = val_mse.mean();
  const nlohmann::json j{
      {"kind", "video"},
      {"seed", config.seed},
      {"width", config.width},
      {"height", config.height},
      {"frames_per_sequence", config.frames},
      {"format", config.format},
      {"train", {{"sequences", train_n}, {"previous_frame_mse", s.train_baseline_mse}}},
      {"validation", {{"sequences", val_n}, {"previous_frame_mse", s.val_baseline_mse}}}};
  const std::string text = j.dump(1) + "\n";
  write_file_atomic((out / "baseline.json").string(),
                    std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()),
                    /*durable=*/false);
  s.bytes += static_cast<std::int64_t>(text.size());
  return s;
}

}  // namespace epoch::data
