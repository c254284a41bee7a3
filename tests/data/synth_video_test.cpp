// The generated video of `epoch data synth --kind video`: frames are pure functions of their
// arguments, move smoothly (a frame is closer to the next one than to one ten frames on), differ
// between sequences, and the written folders and baseline agree with the frames read back.
#include "epoch/data/synth_video.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "epoch/data/image.h"
#include "epoch/data/image_codec.h"
#include "testing/testing.h"

namespace epoch::data {
namespace {

std::vector<Image> render(std::uint64_t seed, std::int64_t index, std::int64_t frames,
                          std::int64_t w = 48, std::int64_t h = 32) {
  std::vector<Image> out;
  render_video_sequence(seed, index, frames, w, h, [&](std::int64_t t, const Image& image) {
    EXPECT_EQ(t, static_cast<std::int64_t>(out.size()));
    out.push_back(image);
  });
  return out;
}

double mse(const Image& a, const Image& b) {
  PreviousFrameMse m;
  m.add(a, b);
  return m.mean();
}

TEST(SynthVideo, FramesArePureFunctionsOfTheirArguments) {
  const std::vector<Image> a = render(3, 1, 6), b = render(3, 1, 6), shorter = render(3, 1, 3);
  for (std::size_t t = 0; t < a.size(); ++t) {
    EXPECT_EQ(a[t].width, 48);
    EXPECT_EQ(a[t].height, 32);
    EXPECT_EQ(a[t].channels, 3);
    EXPECT_EQ(a[t].pixels, b[t].pixels) << t;
  }
  for (std::size_t t = 0; t < shorter.size(); ++t) EXPECT_EQ(shorter[t].pixels, a[t].pixels) << t;
  EXPECT_NE(render(4, 1, 1)[0].pixels, a[0].pixels);  // another seed
  EXPECT_NE(render(3, 2, 1)[0].pixels, a[0].pixels);  // another sequence
}

TEST(SynthVideo, MotionIsSmoothSoThePastPredictsTheFuture) {
  for (std::int64_t seq = 0; seq < 3; ++seq) {
    const std::vector<Image> f = render(0, seq, 21, 64, 48);
    double near = 0.0, far = 0.0;
    for (int t = 0; t + 10 < 21; ++t) {
      near += mse(f[static_cast<std::size_t>(t)], f[static_cast<std::size_t>(t + 1)]);
      far += mse(f[static_cast<std::size_t>(t)], f[static_cast<std::size_t>(t + 10)]);
    }
    EXPECT_GT(near, 0.0) << "sequence " << seq << " does not move";
    EXPECT_LT(2.0 * near, far) << "sequence " << seq;
  }
}

TEST(SynthVideo, PreviousFrameMseIsTheMeanSquaredStep) {
  Image a, b;
  a.width = b.width = 2;
  a.height = b.height = 1;
  a.channels = b.channels = 1;
  a.pixels = {0, 255};
  b.pixels = {51, 255};
  PreviousFrameMse m;
  m.add(a, b);
  EXPECT_DOUBLE_EQ(m.mean(), 0.5 * 0.2 * 0.2);
  m.add(b, b);
  EXPECT_DOUBLE_EQ(m.mean(), 0.25 * 0.2 * 0.2);
  Image c = a;
  c.pixels = {1, 2, 3};
  EXPECT_THROW(m.add(a, c), InvalidArgument);
  EXPECT_THROW(render(0, 0, 1, 8, 8), InvalidArgument);
  EXPECT_THROW(render(0, 0, 0), InvalidArgument);
}

// Reads a written split back and measures its baseline as the writer should have.
double baseline_of(const std::filesystem::path& split, std::int64_t first, std::int64_t n,
                   std::int64_t frames, const char* ext) {
  PreviousFrameMse m;
  for (std::int64_t s = first; s < first + n; ++s) {
    Image previous;
    for (std::int64_t t = 0; t < frames; ++t) {
      char name[64];
      std::snprintf(name, sizeof name, "seq_%05lld/frame_%05lld.%s", static_cast<long long>(s),
                    static_cast<long long>(t), ext);
      const Image image = read_image((split / name).string());
      if (t > 0) m.add(previous, image);
      previous = image;
    }
  }
  return m.mean();
}

TEST(SynthVideo, WritesSequenceFoldersAndTheirMeasuredBaseline) {
  testing::TempDir dir;
  for (const char* format : {"png", "jpeg"}) {
    VideoSynthConfig c;
    c.out_dir = dir / format;
    c.sequences = 2;
    c.val_sequences = 1;
    c.frames = 4;
    c.width = 40;
    c.height = 24;
    c.format = format;
    const VideoSynthSummary s = write_synth_video(c);
    EXPECT_EQ(s.train_sequences, 2);
    EXPECT_EQ(s.val_sequences, 1);
    EXPECT_GT(s.bytes, 0);
    const char* ext = std::string(format) == "png" ? "png" : "jpg";
    const std::filesystem::path out(c.out_dir);
    EXPECT_NEAR(s.train_baseline_mse, baseline_of(out / "train", 0, 2, 4, ext), 1e-12) << format;
    EXPECT_NEAR(s.val_baseline_mse, baseline_of(out / "validation", 2, 1, 4, ext), 1e-12) << format;
    EXPECT_GT(s.train_baseline_mse, 0.0);
    std::ifstream f(out / "baseline.json");
    const auto j = nlohmann::json::parse(f);
    EXPECT_EQ(j["train"]["previous_frame_mse"].get<double>(), s.train_baseline_mse);
    EXPECT_EQ(j["validation"]["sequences"].get<int>(), 1);
    // The frames as rendered (PNG is lossless).
    if (std::string(format) == "png") {
      EXPECT_EQ(read_image((out / "train/seq_00001/frame_00003.png").string()).pixels,
                render(0, 1, 4, 40, 24)[3].pixels);
    }
  }
}

TEST(SynthVideo, RefusesBadConfigurations) {
  testing::TempDir dir;
  VideoSynthConfig c;
  c.out_dir = dir / "v";
  c.frames = 2;
  c.sequences = 1;
  c.width = c.height = 16;
  VideoSynthConfig bad = c;
  bad.frames = 1;
  EXPECT_THROW(write_synth_video(bad), ConfigError);
  bad = c;
  bad.width = 8;
  EXPECT_THROW(write_synth_video(bad), ConfigError);
  bad = c;
  bad.sequences = 0;
  EXPECT_THROW(write_synth_video(bad), ConfigError);
  bad = c;
  bad.format = "gif";
  EXPECT_THROW(write_synth_video(bad), ConfigError);
  bad = c;
  bad.out_dir = "";
  EXPECT_THROW(write_synth_video(bad), ConfigError);
  write_synth_video(c);
  EXPECT_THROW(write_synth_video(c), ConfigError);  // train/ exists: nothing is overwritten
}

}  // namespace
}  // namespace epoch::data
