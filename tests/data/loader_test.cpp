// The input pipeline: image-folder scanning and splitting, the decoded-image cache, and the
// loader's guarantees (identical batches for any worker count, bad images skipped or fatal,
// worker exceptions reaching the consumer, clean shutdown mid-epoch).
#include "epoch/data/loader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "epoch/data/image.h"
#include "epoch/data/source.h"
#include "testing/testing.h"

namespace epoch::data {
namespace {

namespace fs = std::filesystem;

Image pattern_image(std::int64_t w, std::int64_t h, int seed) {
  Image im{w, h, 3, {}};
  im.pixels.resize(static_cast<std::size_t>(w * h * 3));
  for (std::size_t i = 0; i < im.pixels.size(); ++i)
    im.pixels[i] = static_cast<std::uint8_t>((i * 7 + static_cast<std::size_t>(seed) * 31) % 251);
  return im;
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// root/<class>/img<i>.png for classes a, b (n each, sizes varying), plus a stray text file.
void make_folder(const std::string& root, int n) {
  for (const char* cls : {"b_dog", "a_cat"}) {
    fs::create_directories(fs::path(root) / cls);
    for (int i = 0; i < n; ++i)
      write_png((fs::path(root) / cls / ("img" + std::to_string(i) + ".png")).string(),
                pattern_image(20 + i, 16 + (i % 3), i + (cls[0] == 'a' ? 0 : 100)));
  }
  write_bytes((fs::path(root) / "a_cat" / "notes.txt").string(), "not an image");
  write_bytes((fs::path(root) / "a_cat" / ".hidden.png").string(), "hidden");
}

Preprocessing pre_of(std::int64_t c, std::int64_t h, std::int64_t w) {
  Preprocessing p;
  p.channels = c;
  p.height = h;
  p.width = w;
  return p;
}

AugmentConfig some_augmentation() {
  AugmentConfig a;
  a.shear = 0.2f;
  a.zoom = 0.2f;
  a.horizontal_flip = true;
  a.brightness = 20.0f;
  return a;
}

/// Every batch of one epoch, copied.
std::vector<std::vector<float>> all_batches(Loader& loader, std::int64_t epoch,
                                            std::vector<std::int64_t> order,
                                            std::vector<std::vector<float>>* labels = nullptr) {
  loader.start_epoch(epoch, std::move(order));
  std::vector<std::vector<float>> out;
  while (const Batch* b = loader.next()) {
    out.push_back(b->images.to_vector());
    if (labels) labels->push_back(b->labels.to_vector());
  }
  return out;
}

TEST(ImageFolderTest, ScansClassesAndFilesSortedIgnoringOthers) {
  testing::TempDir dir;
  make_folder(dir.path(), 3);
  const ImageFolder f = scan_image_folder(dir.path());
  EXPECT_EQ(f.class_names, (std::vector<std::string>{"a_cat", "b_dog"}));
  ASSERT_EQ(f.files.size(), 6u);
  EXPECT_EQ(fs::path(f.files[0]).filename(), "img0.png");
  EXPECT_EQ(fs::path(f.files[0]).parent_path().filename(), "a_cat");
  EXPECT_EQ(f.labels, (std::vector<std::int32_t>{0, 0, 0, 1, 1, 1}));
}

TEST(ImageFolderTest, ErrorsNameTheFolder) {
  testing::TempDir dir;
  EXPECT_THROW(scan_image_folder(dir / "missing"), IoError);
  EXPECT_THROW(scan_image_folder(dir.path()), ConfigError);  // no class folders
  fs::create_directories(dir / "empty_class");
  try {
    scan_image_folder(dir.path());
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(dir.path()), std::string::npos) << e.what();
  }
  make_folder(dir / "train", 2);
  fs::create_directories(dir / "val/a_cat");
  EXPECT_THROW(scan_image_folder(dir / "val", {"a_cat", "b_dog"}), ConfigError);
}

TEST(ImageFolderTest, ValidationSplitTakesTheFirstFractionOfEachClass) {
  testing::TempDir dir;
  make_folder(dir.path(), 5);
  const auto [train, val] = split_image_folder(scan_image_folder(dir.path()), 0.4);
  ASSERT_EQ(val.files.size(), 4u);  // floor(0.4 * 5) = 2 per class
  ASSERT_EQ(train.files.size(), 6u);
  EXPECT_EQ(fs::path(val.files[0]).filename(), "img0.png");
  EXPECT_EQ(fs::path(val.files[1]).filename(), "img1.png");
  EXPECT_EQ(val.labels, (std::vector<std::int32_t>{0, 0, 1, 1}));
  EXPECT_EQ(fs::path(train.files[0]).filename(), "img2.png");
  EXPECT_THROW(split_image_folder(scan_image_folder(dir.path()), 1.0), ConfigError);
  EXPECT_THROW(split_image_folder(scan_image_folder(dir.path()), 0.1), ConfigError);  // 0 val
}

TEST(LoaderTest, BatchesAreIdenticalForAnyWorkerCount) {
  testing::TempDir dir;
  make_folder(dir.path(), 9);
  FolderSource source(scan_image_folder(dir.path()), 0);
  const Preprocessing pre = pre_of(3, 12, 14);
  std::vector<std::int64_t> order = epoch_order(source.size(), 5, 1, true);
  std::vector<std::vector<float>> reference, reference_labels;
  for (int workers : {0, 1, 2, 4}) {
    LoaderConfig config;
    config.batch_size = 4;
    config.workers = workers;
    config.prefetch = 1 + workers % 2;
    config.seed = 5;
    Loader loader(source, pre, some_augmentation(), config, nullptr);
    std::vector<std::vector<float>> labels;
    const auto batches = all_batches(loader, 1, order, &labels);
    ASSERT_EQ(batches.size(), 5u);  // 18 samples in batches of 4
    EXPECT_EQ(batches.back().size(), 2u * 3 * 12 * 14);
    if (workers == 0) {
      reference = batches;
      reference_labels = labels;
      continue;
    }
    EXPECT_EQ(batches, reference) << workers << " workers";
    EXPECT_EQ(labels, reference_labels) << workers << " workers";
  }
  // Another epoch draws other augmentations for the same samples.
  LoaderConfig config;
  config.batch_size = 4;
  config.seed = 5;
  Loader loader(source, pre, some_augmentation(), config, nullptr);
  EXPECT_NE(all_batches(loader, 2, order), reference);
}

TEST(LoaderTest, CacheGivesTheSameImagesAsDecoding) {
  testing::TempDir dir;
  make_folder(dir.path(), 4);
  FolderSource cold(scan_image_folder(dir.path()), 0);
  FolderSource cached(scan_image_folder(dir.path()), 1 << 20);
  const Preprocessing pre = pre_of(3, 8, 8);
  LoaderConfig config;
  config.batch_size = 3;
  config.workers = 2;
  std::vector<std::int64_t> order(8);
  std::iota(order.begin(), order.end(), 0);
  Loader a(cold, pre, some_augmentation(), config, nullptr);
  Loader b(cached, pre, some_augmentation(), config, nullptr);
  const auto expected = all_batches(a, 0, order);
  EXPECT_EQ(all_batches(b, 0, order), expected);
  EXPECT_GT(cached.cached_bytes(), 0);
  EXPECT_EQ(all_batches(b, 0, order), expected);  // now from the cache
}

TEST(LoaderTest, InMemoryFastPathMatchesPreprocessSample) {
  ImageDataset d = make_synthetic_dataset(10, 1, 6, 5, 2, 3);
  MemorySource source(d);
  const Preprocessing pre = pre_of(1, 6, 5);
  LoaderConfig config;
  config.batch_size = 10;
  Loader loader(source, pre, std::nullopt, config, nullptr);
  std::vector<std::int64_t> order(10);
  std::iota(order.begin(), order.end(), 0);
  loader.start_epoch(0, order);
  const Batch* b = loader.next();
  ASSERT_NE(b, nullptr);
  std::vector<float> expected(10 * 30);
  for (int i = 0; i < 10; ++i)
    preprocess_sample(pre, d.images.data<std::uint8_t>() + i * 30, expected.data() + i * 30);
  EXPECT_EQ(b->images.to_vector(), expected);
  EXPECT_EQ(loader.next(), nullptr);
}

TEST(LoaderTest, BadImagesAreSkippedWithOneWarningEachOrFail) {
  testing::TempDir dir;
  make_folder(dir.path(), 3);
  write_bytes(dir / "a_cat/empty.png", "");
  write_bytes(dir / "a_cat/text.jpg", "hello, I am not a JPEG");
  std::string png;
  {
    std::ifstream in(dir / "b_dog/img0.png", std::ios::binary);
    png.assign(std::istreambuf_iterator<char>(in), {});
  }
  write_bytes(dir / "b_dog/truncated.png", png.substr(0, png.size() / 2));
  FolderSource source(scan_image_folder(dir.path()), 0);
  ASSERT_EQ(source.size(), 9);
  const Preprocessing pre = pre_of(3, 8, 8);
  std::vector<std::int64_t> order(9);
  std::iota(order.begin(), order.end(), 0);
  for (int workers : {0, 2}) {
    LoaderConfig config;
    config.batch_size = 4;
    config.workers = workers;
    std::FILE* warnings = std::tmpfile();
    Loader loader(source, pre, std::nullopt, config, warnings);
    for (int epoch = 0; epoch < 2; ++epoch) {
      loader.start_epoch(epoch, order);
      std::int64_t samples = 0;
      while (const Batch* b = loader.next()) samples += b->images.size(0);
      EXPECT_EQ(samples, 6);
    }
    const LoaderStats stats = loader.stats();
    EXPECT_EQ(stats.skipped, 6);  // 3 bad files, twice
    ASSERT_EQ(stats.bad_files.size(), 3u);
    std::rewind(warnings);
    std::string text(4096, '\0');
    text.resize(std::fread(text.data(), 1, text.size(), warnings));
    std::fclose(warnings);
    for (const char* name : {"empty.png", "text.jpg", "truncated.png"})
      EXPECT_NE(text.find(name), std::string::npos) << text;
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 3) << text;

    config.on_bad_image = OnBadImage::fail;
    Loader failing(source, pre, std::nullopt, config, nullptr);
    failing.start_epoch(0, order);
    try {
      while (failing.next()) {
      }
      FAIL() << "expected IoError";
    } catch (const IoError& e) {
      EXPECT_NE(std::string(e.what()).find("empty.png"), std::string::npos) << e.what();
    }
  }
}

/// A source whose sample 5 throws something that is not a bad image.
class BrokenSource final : public SampleSource {
 public:
  std::int64_t size() const override { return 12; }
  std::int32_t label(std::int64_t) const override { return 0; }
  std::int64_t num_classes() const override { return 1; }
  const std::vector<std::string>& class_names() const override { return names_; }
  std::string description() const override { return "broken"; }
  std::string sample_name(std::int64_t i) const override { return "broken#" + std::to_string(i); }
  ImageView fetch(std::int64_t i, const DecodeOptions&, Image& scratch) const override {
    if (i == 5) throw std::runtime_error("disk on fire");
    scratch = pattern_image(4, 4, static_cast<int>(i));
    return ImageView::of(scratch);
  }

 private:
  std::vector<std::string> names_{"x"};
};

TEST(LoaderTest, WorkerExceptionsReachTheConsumer) {
  BrokenSource source;
  for (int workers : {0, 1, 3}) {
    LoaderConfig config;
    config.batch_size = 2;
    config.workers = workers;
    Loader loader(source, pre_of(3, 4, 4), std::nullopt, config, nullptr);
    std::vector<std::int64_t> order(12);
    std::iota(order.begin(), order.end(), 0);
    loader.start_epoch(0, order);
    int good = 0;
    try {
      while (loader.next()) ++good;
      FAIL() << "expected the worker's exception";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "disk on fire");
    }
    EXPECT_EQ(good, 2);  // batches 0 and 1 came first, in order
  }
}

TEST(LoaderTest, StopsCleanlyMidEpochAndRestarts) {
  BrokenSource source;
  LoaderConfig config;
  config.batch_size = 1;
  config.workers = 3;
  config.prefetch = 4;
  std::vector<std::int64_t> order{0, 1, 2, 3, 4, 6, 7, 8, 9, 10, 11};
  {
    Loader loader(source, pre_of(3, 4, 4), std::nullopt, config, nullptr);
    loader.start_epoch(0, order);
    ASSERT_NE(loader.next(), nullptr);
    loader.start_epoch(1, order);  // abandons epoch 0
    int n = 0;
    while (loader.next()) ++n;
    EXPECT_EQ(n, 11);
    loader.start_epoch(2, order);
    ASSERT_NE(loader.next(), nullptr);
  }  // destroyed with work in flight: must join without hanging
  EXPECT_THROW(Loader(source, pre_of(3, 4, 4), std::nullopt, LoaderConfig{0}, nullptr), InvalidArgument);
}

}  // namespace
}  // namespace epoch::data
