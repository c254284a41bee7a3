// `epoch data synth`: images are pure functions of their arguments, classes are told apart by
// a trivial classifier, and whole datasets land as decodable JPEG files (plus CIFAR-10 binary
// files) in the right folders, identically for any thread count.
#include "epoch/data/synth.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "epoch/data/cifar10.h"
#include "epoch/data/image_codec.h"
#include "testing/testing.h"

namespace epoch::data {
namespace {

namespace fs = std::filesystem;

std::vector<std::uint8_t> file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(Synth, ClassNames) {
  EXPECT_EQ(synth_class_names("catdog", 0), (std::vector<std::string>{"cat", "dog"}));
  EXPECT_EQ(synth_class_names("cifar10", 10), cifar10_class_names());
  const auto names = synth_class_names("imagenet", 12);
  ASSERT_EQ(names.size(), 12u);
  EXPECT_EQ(names[0], "n00000000");
  EXPECT_EQ(names[11], "n00000011");
  EXPECT_EQ(synth_class_names("imagenet", 0).size(), 10u);
  EXPECT_THROW(synth_class_names("catdog", 3), InvalidArgument);
  EXPECT_THROW(synth_class_names("cifar10", 2), InvalidArgument);
  EXPECT_THROW(synth_class_names("imagenet", 1), InvalidArgument);
  EXPECT_THROW(synth_class_names("imagenet", 1001), InvalidArgument);
  EXPECT_THROW(synth_class_names("mnist", 0), InvalidArgument);
}

TEST(Synth, ImagesArePureFunctionsOfTheirArguments) {
  for (const std::string kind : {"catdog", "cifar10", "imagenet"}) {
    const Image a = draw_synth_image(kind, 1, 5, 42, 61, 37);
    EXPECT_EQ(a.width, 61);
    EXPECT_EQ(a.height, 37);
    EXPECT_EQ(a.channels, 3);
    ASSERT_EQ(a.pixels.size(), 61u * 37u * 3u);
    EXPECT_EQ(a.pixels, draw_synth_image(kind, 1, 5, 42, 61, 37).pixels) << kind;
    EXPECT_NE(a.pixels, draw_synth_image(kind, 1, 6, 42, 61, 37).pixels) << kind;
    EXPECT_NE(a.pixels, draw_synth_image(kind, 1, 5, 43, 61, 37).pixels) << kind;
    EXPECT_NE(a.pixels, draw_synth_image(kind, 0, 5, 42, 61, 37).pixels) << kind;
  }
  const Image big = draw_synth_image("catdog", 0, 0, 0, 500, 375);
  EXPECT_EQ(big.pixels.size(), 500u * 375u * 3u);
  // Not a flat image: the pixels use much of the range.
  const auto [lo, hi] = std::minmax_element(big.pixels.begin(), big.pixels.end());
  EXPECT_GT(*hi - *lo, 100);
}

TEST(Synth, BadDrawArgumentsThrow) {
  EXPECT_THROW(draw_synth_image("dogcat", 0, 0, 0, 32, 32), InvalidArgument);
  EXPECT_THROW(draw_synth_image("catdog", 2, 0, 0, 32, 32), InvalidArgument);
  EXPECT_THROW(draw_synth_image("cifar10", -1, 0, 0, 32, 32), InvalidArgument);
  EXPECT_THROW(draw_synth_image("cifar10", 0, -1, 0, 32, 32), InvalidArgument);
  EXPECT_THROW(draw_synth_image("cifar10", 0, 0, 0, 4, 32), InvalidArgument);
  EXPECT_THROW(draw_synth_image("imagenet", 1000, 0, 0, 32, 32), InvalidArgument);
}

/// (R, G, B) means over a g x g grid of cells, a crude feature vector.
std::vector<double> cell_means(const Image& im, int g) {
  std::vector<double> f(static_cast<std::size_t>(g * g * 3), 0.0);
  for (std::int64_t y = 0; y < im.height; ++y)
    for (std::int64_t x = 0; x < im.width; ++x)
      for (int c = 0; c < 3; ++c) {
        const auto cell =
            static_cast<std::size_t>(((y * g / im.height) * g + x * g / im.width) * 3 + c);
        f[cell] += im.pixels[static_cast<std::size_t>((y * im.width + x) * 3 + c)];
      }
  const double n = static_cast<double>(im.width * im.height) / (g * g);
  for (double& v : f) v /= n;
  return f;
}

/// A histogram of gradient orientations (modulo pi, 12 bins, weighted by magnitude) over a
/// g x g grid, each cell normalized: shape without colour or position detail.
std::vector<double> orientations(const Image& im, int g) {
  constexpr int kBins = 12;
  std::vector<double> f(static_cast<std::size_t>(g * g * kBins), 0.0);
  auto luma = [&](std::int64_t x, std::int64_t y) {
    const std::uint8_t* p = im.pixels.data() + (y * im.width + x) * 3;
    return 0.299 * p[0] + 0.587 * p[1] + 0.114 * p[2];
  };
  for (std::int64_t y = 1; y + 1 < im.height; ++y)
    for (std::int64_t x = 1; x + 1 < im.width; ++x) {
      const double gx = luma(x + 1, y) - luma(x - 1, y), gy = luma(x, y + 1) - luma(x, y - 1);
      const double mag = std::sqrt(gx * gx + gy * gy);
      double a = std::atan2(gy, gx);
      if (a < 0) a += M_PI;
      const int bin = std::min(kBins - 1, static_cast<int>(a / M_PI * kBins));
      const auto cell = (y * g / im.height) * g + x * g / im.width;
      f[static_cast<std::size_t>(cell * kBins + bin)] += mag;
    }
  for (std::size_t c = 0; c < f.size(); c += kBins) {
    double sum = 1e-9;
    for (int b = 0; b < kBins; ++b) sum += f[c + static_cast<std::size_t>(b)];
    for (int b = 0; b < kBins; ++b) f[c + static_cast<std::size_t>(b)] /= sum;
  }
  return f;
}

/// Held-out accuracy of a nearest-class-centroid classifier on features(image, g): far above
/// chance only when the drawing depends on the label in a consistent way.
template <typename Features>
double nearest_centroid_accuracy(const std::string& kind, int classes, int per_class,
                                 std::int64_t w, std::int64_t h, int g, Features features) {
  std::vector<std::vector<double>> centroid(static_cast<std::size_t>(classes));
  for (int k = 0; k < classes; ++k)
    for (int i = 0; i < per_class; ++i) {
      const auto f = features(draw_synth_image(kind, k, i, 1, w, h), g);
      auto& c = centroid[static_cast<std::size_t>(k)];
      if (c.empty()) c.assign(f.size(), 0.0);
      for (std::size_t d = 0; d < f.size(); ++d) c[d] += f[d] / per_class;
    }
  int correct = 0;
  for (int k = 0; k < classes; ++k)
    for (int i = 0; i < per_class; ++i) {
      const auto f = features(draw_synth_image(kind, k, 1000 + i, 1, w, h), g);
      int best = 0;
      double best_d = 1e300;
      for (int j = 0; j < classes; ++j) {
        double d = 0;
        for (std::size_t e = 0; e < f.size(); ++e) {
          const double diff = f[e] - centroid[static_cast<std::size_t>(j)][e];
          d += diff * diff;
        }
        if (d < best_d) {
          best_d = d;
          best = j;
        }
      }
      correct += best == k;
    }
  return static_cast<double>(correct) / (classes * per_class);
}

TEST(Synth, ClassesAreSeparableByATrivialClassifier) {
  // Measured: 0.34, 0.40, 0.43 and 0.72 (chance 0.1, 0.1, 0.1 and 0.5); cat and dog differ in
  // shape, not colour or layout, so only the orientation features tell them apart.
  EXPECT_GT(nearest_centroid_accuracy("cifar10", 10, 40, 32, 32, 4, cell_means), 0.25);
  EXPECT_GT(nearest_centroid_accuracy("imagenet", 10, 40, 48, 48, 4, cell_means), 0.25);
  EXPECT_GT(nearest_centroid_accuracy("cifar10", 10, 40, 32, 32, 2, orientations), 0.3);
  EXPECT_GT(nearest_centroid_accuracy("catdog", 2, 100, 96, 72, 2, orientations), 0.6);
}

/// Every regular file under dir, relative, with its size.
std::map<std::string, std::uintmax_t> listing(const fs::path& dir) {
  std::map<std::string, std::uintmax_t> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) files[fs::relative(e.path(), dir).string()] = e.file_size();
  return files;
}

TEST(Synth, WritesCatDogFoldersOfDecodableJpegs) {
  testing::TempDir dir;
  SynthConfig c;
  c.kind = "catdog";
  c.out_dir = dir / "cd";
  c.count = 7;
  c.val_count = 3;
  c.width = 40;
  c.height = 30;
  const SynthSummary s = write_synth_dataset(c);
  EXPECT_EQ(s.train_images, 7);
  EXPECT_EQ(s.val_images, 3);
  EXPECT_EQ(s.class_names, (std::vector<std::string>{"cat", "dog"}));
  const auto files = listing(c.out_dir);
  const std::vector<std::string> expected = {
      "train/cat/cat.0.jpg",     "train/cat/cat.1.jpg",      "train/cat/cat.2.jpg",
      "train/cat/cat.3.jpg",     "train/dog/dog.0.jpg",      "train/dog/dog.1.jpg",
      "train/dog/dog.2.jpg",     "validation/cat/cat.4.jpg", "validation/cat/cat.5.jpg",
      "validation/dog/dog.4.jpg"};
  std::uintmax_t total = 0;
  for (const auto& [name, size] : files) total += size;
  EXPECT_EQ(files.size(), expected.size());
  for (const std::string& name : expected) EXPECT_TRUE(files.count(name)) << name;
  EXPECT_EQ(static_cast<std::uintmax_t>(s.bytes), total);
  const Image im = read_image(c.out_dir + "/validation/dog/dog.4.jpg");
  EXPECT_EQ(im.width, 40);
  EXPECT_EQ(im.height, 30);
  EXPECT_EQ(im.channels, 3);
  // The file holds draw_synth_image(dog, index 4) up to JPEG's loss.
  const Image drawn = draw_synth_image("catdog", 1, 4, 0, 40, 30);
  double err = 0;
  for (std::size_t i = 0; i < drawn.pixels.size(); ++i)
    err += std::abs(static_cast<double>(drawn.pixels[i]) - im.pixels[i]);
  EXPECT_LT(err / static_cast<double>(drawn.pixels.size()), 8.0);

  // A second run into the same folder is refused and changes nothing.
  EXPECT_THROW(write_synth_dataset(c), ConfigError);
  EXPECT_EQ(listing(c.out_dir), files);
}

TEST(Synth, DatasetsAreIdenticalForAnyThreadCount) {
  testing::TempDir dir;
  SynthConfig c;
  c.kind = "imagenet";
  c.classes = 3;
  c.count = 9;
  c.val_count = 0;
  c.width = 48;
  c.height = 40;
  c.seed = 11;
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  c.out_dir = dir / "one";
  write_synth_dataset(c);
  omp_set_num_threads(std::max(threads, 3));
  c.out_dir = dir / "many";
  write_synth_dataset(c);
  omp_set_num_threads(threads);
  const auto one = listing(dir / "one");
  ASSERT_EQ(one, listing(dir / "many"));
  ASSERT_EQ(one.size(), 9u);
  std::set<std::pair<std::int64_t, std::int64_t>> sizes;
  for (const auto& [name, size] : one) {
    EXPECT_EQ(name.find("train/n0000000"), 0u) << name;
    EXPECT_EQ(name.substr(name.size() - 5), ".JPEG") << name;
    EXPECT_EQ(file_bytes(dir / ("one/" + name)), file_bytes(dir / ("many/" + name))) << name;
    const Image im = read_image(dir / ("one/" + name));
    EXPECT_GE(im.width, 36);  // 48 +- 25%
    EXPECT_LE(im.width, 60);
    EXPECT_GE(im.height, 30);  // 40 +- 25%
    EXPECT_LE(im.height, 50);
    sizes.insert({im.width, im.height});
  }
  EXPECT_GT(sizes.size(), 1u);
  EXPECT_TRUE(one.count("train/n00000002/n00000002_2.JPEG"));
  EXPECT_FALSE(fs::exists(dir / "one/cifar-10-batches-bin"));
}

TEST(Synth, Cifar10AlsoWritesTheBinaryFilesOfTheSameImages) {
  testing::TempDir dir;
  SynthConfig c;
  c.kind = "cifar10";
  c.out_dir = dir.path();
  c.count = 20;
  c.val_count = 10;
  const SynthSummary s = write_synth_dataset(c);
  const ImageDataset train = load_cifar10(dir / "cifar-10-batches-bin", "train");
  const ImageDataset test = load_cifar10(dir / "cifar-10-batches-bin", "test");
  ASSERT_EQ(train.size(), 20);
  ASSERT_EQ(test.size(), 10);
  EXPECT_EQ(train.class_names, cifar10_class_names());
  for (std::int64_t i = 0; i < 20; ++i) {
    EXPECT_EQ(train.labels.data<std::int32_t>()[i], i % 10);
    const Image drawn = draw_synth_image("cifar10", i % 10, i / 10, 0, 32, 32);
    const std::uint8_t* chw = train.images.data<std::uint8_t>() + i * 3072;
    for (int p = 0; p < 1024; p += 97)
      for (int ch = 0; ch < 3; ++ch)
        ASSERT_EQ(chw[ch * 1024 + p], drawn.pixels[static_cast<std::size_t>(p * 3 + ch)]);
  }
  // Validation image j of class k is file number 2 + j / 10 (after the 2 training images).
  const Image v = draw_synth_image("cifar10", 3, 2, 0, 32, 32);
  EXPECT_EQ(test.images.data<std::uint8_t>()[3 * 3072 + 5], v.pixels[15]);
  EXPECT_TRUE(fs::exists(dir / "validation/cat/cat.2.jpg"));
  std::uintmax_t total = 0;
  for (const auto& [name, size] : listing(dir.path())) total += size;
  EXPECT_EQ(static_cast<std::uintmax_t>(s.bytes), total);

  c.out_dir = dir / "other";
  c.width = c.height = 40;
  EXPECT_THROW(write_synth_dataset(c), ConfigError);  // binary files are 32x32 only
  c.cifar_binary = false;
  write_synth_dataset(c);
  EXPECT_FALSE(fs::exists(dir / "other/cifar-10-batches-bin"));
  EXPECT_EQ(read_image(dir / "other/train/ship/ship.0.jpg").width, 40);
}

TEST(Synth, BadConfigurationsAreConfigErrors) {
  testing::TempDir dir;
  auto config = [&] {
    SynthConfig c;
    c.out_dir = dir / "x";
    c.count = 4;
    c.width = 32;
    c.height = 32;
    return c;
  };
  SynthConfig c = config();
  c.kind = "horses";
  EXPECT_THROW(write_synth_dataset(c), ConfigError);
  c = config();
  c.classes = 5;
  EXPECT_THROW(write_synth_dataset(c), ConfigError);
  c = config();
  c.count = 1;
  EXPECT_THROW(write_synth_dataset(c), ConfigError);
  c = config();
  c.val_count = -2;
  EXPECT_THROW(write_synth_dataset(c), ConfigError);
  c = config();
  c.quality = 0;
  EXPECT_THROW(write_synth_dataset(c), ConfigError);
  c = config();
  c.width = 4;
  EXPECT_THROW(write_synth_dataset(c), ConfigError);
  c = config();
  c.height = 0;
  EXPECT_THROW(write_synth_dataset(c), ConfigError);
  c = config();
  c.out_dir.clear();
  EXPECT_THROW(write_synth_dataset(c), ConfigError);
  EXPECT_FALSE(fs::exists(dir / "x"));
}

}  // namespace
}  // namespace epoch::data
