// The input pipeline: image-folder scanning and splitting, the decoded-image cache, and the
// loader's guarantees (identical batches for any worker count, bad images skipped or fatal,
// worker exceptions reaching the consumer, clean shutdown mid-epoch). The threaded tests are
// meant to run under ThreadSanitizer too (OMP_NUM_THREADS=1: libgomp is not instrumented).
#include "epoch/data/loader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <latch>
#include <numeric>
#include <thread>

#include "epoch/data/image.h"
#include "epoch/data/image_codec.h"
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
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
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

TEST(ImageFolderTest, SymlinksAddEachRealFolderAndFileOnce) {
  testing::TempDir dir;
  make_folder(dir.path(), 3);
  fs::create_directory_symlink("..", dir / "a_cat/up");          // a loop to the root
  fs::create_directory_symlink("../b_dog", dir / "a_cat/dogs");  // another class
  fs::create_directories(dir / "b_dog/more");
  fs::create_symlink("../img0.png", dir / "b_dog/more/again.png");  // a file seen already
  write_png(dir / "b_dog/more/new.png", pattern_image(9, 9, 5));    // a real new file
  const ImageFolder f = scan_image_folder(dir.path());
  ASSERT_EQ(f.files.size(), 7u);  // 3 + 3 + more/new.png
  EXPECT_EQ(f.labels, (std::vector<std::int32_t>{0, 0, 0, 1, 1, 1, 1}));
  for (const std::string& file : f.files) EXPECT_EQ(file.find("/up/"), std::string::npos) << file;
  // The validation split sees no duplicates either.
  const auto [train, val] = split_image_folder(f, 0.34);
  EXPECT_EQ(train.files.size() + val.files.size(), 7u);
}

TEST(ImageFolderTest, AnEmptyClassFolderIsRefused) {
  testing::TempDir dir;
  make_folder(dir.path(), 2);
  fs::create_directories(dir / "c_empty/sub");
  try {
    scan_image_folder(dir.path());
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("'c_empty' holds no"), std::string::npos) << e.what();
  }
}

TEST(ImageFolderTest, ABombIsSkippedNamingItsFile) {
  testing::TempDir dir;
  make_folder(dir.path(), 2);
  // 30000x30000 claimed by a 70-byte file: refused from its header, as a bad file.
  const std::vector<std::uint8_t> bomb = testing::png_claiming(30000, 30000, 1);
  write_bytes(dir / "a_cat/bomb.png", std::string(bomb.begin(), bomb.end()));
  FolderSource source(scan_image_folder(dir.path()), 0);
  Warnings warnings(nullptr);
  LoaderConfig config;
  config.batch_size = 5;
  Loader loader(source, pre_of(3, 8, 8), some_augmentation(), config, &warnings);
  std::vector<std::int64_t> order(5);
  std::iota(order.begin(), order.end(), 0);
  loader.start_epoch(0, order);
  const Batch* b = loader.next();
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->images.size(0), 4);
  ASSERT_EQ(loader.stats().bad_files.size(), 1u);
  EXPECT_NE(loader.stats().bad_files[0].find("bomb.png"), std::string::npos);
  EXPECT_EQ(warnings.count("bad images"), 1);
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
  EXPECT_EQ(cached.cached_images(), 8);
  EXPECT_EQ(cold.cached_images(), 0);
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
    std::FILE* warnings_file = std::tmpfile();
    Warnings warnings(warnings_file);
    Loader loader(source, pre, std::nullopt, config, &warnings);
    for (int epoch = 0; epoch < 2; ++epoch) {
      loader.start_epoch(epoch, order);
      std::int64_t samples = 0;
      while (const Batch* b = loader.next()) samples += b->images.size(0);
      EXPECT_EQ(samples, 6);
    }
    const LoaderStats stats = loader.stats();
    EXPECT_EQ(stats.skipped, 6);  // 3 bad files, twice
    ASSERT_EQ(stats.bad_files.size(), 3u);
    std::rewind(warnings_file);
    std::string text(4096, '\0');
    text.resize(std::fread(text.data(), 1, text.size(), warnings_file));
    std::fclose(warnings_file);
    for (const char* name : {"empty.png", "text.jpg", "truncated.png"})
      EXPECT_NE(text.find(name), std::string::npos) << text;
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 3) << text;
    EXPECT_EQ(text.find("[at "), std::string::npos) << text;  // no source locations
    EXPECT_EQ(warnings.count("bad images"), 3);

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
  EXPECT_THROW(Loader(source, pre_of(3, 4, 4), std::nullopt, LoaderConfig{0}, nullptr),
               InvalidArgument);
}

/// Whether `view` came from the source's cache rather than the caller's scratch image.
bool from_cache(const ImageView& view, const Image& scratch) {
  return view.data != scratch.pixels.data();
}

TEST(LoaderTest, CacheServesOnlyTheDecodeRequestItWasFilledFor) {
  testing::TempDir dir;
  make_folder(dir.path(), 2);
  FolderSource source(scan_image_folder(dir.path()), 1 << 20);
  Image scratch;
  const DecodeOptions plain;
  source.fetch(0, plain, scratch);  // decoded, then cached
  const std::int64_t cached = source.cached_bytes();
  EXPECT_GT(cached, 0);
  EXPECT_TRUE(from_cache(source.fetch(0, plain, scratch), scratch));
  // Any other request decodes afresh and leaves the cache alone, like read_image would.
  DecodeOptions limited = plain;
  limited.max_pixels = 10;
  EXPECT_THROW(source.fetch(0, limited, scratch), IoError);
  DecodeOptions upright = plain;
  upright.apply_exif_orientation = false;
  EXPECT_FALSE(from_cache(source.fetch(0, upright, scratch), scratch));
  DecodeOptions larger = plain;
  larger.min_width = 4;
  EXPECT_FALSE(from_cache(source.fetch(1, larger, scratch), scratch));
  EXPECT_EQ(source.cached_bytes(), cached);
}

TEST(LoaderTest, ConcurrentCacheFillsKeepTheBudgetExact) {
  // Eight threads fetch every sample at once, four forwards and four backwards, through a
  // cache that holds about two thirds of the set: inserts race with each other (same sample) and
  // with budget refusals. Half the threads ask with another hint; the first hint to arrive owns
  // the cache.
  testing::TempDir dir;
  make_folder(dir.path(), 5);
  const ImageFolder folder = scan_image_folder(dir.path());
  const auto n = static_cast<std::int64_t>(folder.files.size());
  std::vector<Image> decoded;
  std::int64_t total = 0;
  for (const std::string& f : folder.files) {
    decoded.push_back(read_image(f));
    total += static_cast<std::int64_t>(decoded.back().pixels.size() + sizeof(Image));
  }
  DecodeOptions hints[2];
  hints[1].min_width = 4;  // PNGs decode at full size either way
  for (int trial = 0; trial < 5; ++trial) {
    const std::int64_t budget = total * 2 / 3;
    FolderSource source(folder, budget);
    std::latch start(8);
    std::atomic<int> mismatches{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t)
      threads.emplace_back([&, t] {
        start.arrive_and_wait();
        Image scratch;
        for (std::int64_t k = 0; k < n; ++k) {
          const std::int64_t i = t / 2 % 2 ? k : n - 1 - k;  // pairs race on each sample
          const ImageView v = source.fetch(i, hints[t % 2], scratch);
          const Image& want = decoded[static_cast<std::size_t>(i)];
          if (v.width != want.width || v.height != want.height ||
              std::memcmp(v.data, want.pixels.data(), want.pixels.size()) != 0)
            mismatches.fetch_add(1);
        }
      });
    for (std::thread& th : threads) th.join();
    EXPECT_EQ(mismatches.load(), 0);
    // Exactly one hint owns the cache, and the byte count is exactly what it holds.
    std::int64_t held[2] = {0, 0};
    for (int h = 0; h < 2; ++h)
      for (std::int64_t i = 0; i < n; ++i) {
        Image scratch;
        if (from_cache(source.fetch(i, hints[h], scratch), scratch))
          held[h] += static_cast<std::int64_t>(decoded[static_cast<std::size_t>(i)].pixels.size() +
                                               sizeof(Image));  // what the cache counts
      }
    EXPECT_TRUE((held[0] > 0) != (held[1] > 0)) << held[0] << " " << held[1];
    EXPECT_EQ(source.cached_bytes(), held[0] + held[1]);
    EXPECT_LE(source.cached_bytes(), budget);
    EXPECT_LT(source.cached_bytes(), total);
  }
}

TEST(LoaderTest, ManyWorkersRestartedAndDestroyedMidEpochMatchTheSerialLoader) {
  // Eight workers, one batch ahead, one sample per batch, over a cache smaller than the set;
  // epochs abandoned part-way and the loader destroyed with batches in flight.
  testing::TempDir dir;
  make_folder(dir.path(), 8);
  const ImageFolder folder = scan_image_folder(dir.path());
  std::int64_t total = 0;
  for (const std::string& f : folder.files)
    total += static_cast<std::int64_t>(read_image(f).pixels.size() + sizeof(Image));
  FolderSource plain(folder, 0);
  FolderSource cached(folder, total / 3);
  const Preprocessing pre = pre_of(3, 8, 8);
  LoaderConfig serial;
  serial.batch_size = 1;
  serial.seed = 9;
  LoaderConfig parallel = serial;
  parallel.workers = 8;
  parallel.prefetch = 1;
  std::vector<std::vector<std::vector<float>>> reference, reference_labels(4);
  std::vector<std::vector<std::int64_t>> orders;
  {
    Loader loader(plain, pre, some_augmentation(), serial, nullptr);
    for (int epoch = 0; epoch < 4; ++epoch) {
      orders.push_back(epoch_order(plain.size(), 9, epoch, true));
      reference.push_back(all_batches(loader, epoch, orders.back(),
                                      &reference_labels[static_cast<std::size_t>(epoch)]));
      ASSERT_EQ(reference.back().size(), 16u);
    }
  }
  {
    Loader loader(cached, pre, some_augmentation(), parallel, nullptr);
    for (std::size_t epoch = 0; epoch < 4; ++epoch) {
      // Part of another epoch first, abandoned with batches in flight (batches it left behind
      // would differ from this epoch's).
      const std::size_t other = (epoch + 1) % 4;
      loader.start_epoch(static_cast<std::int64_t>(other), orders[other]);
      for (std::size_t b = 0; b < 1 + 3 * epoch; ++b) {
        const Batch* batch = loader.next();
        ASSERT_NE(batch, nullptr);
        EXPECT_EQ(batch->images.to_vector(), reference[other][b]) << other << ", batch " << b;
      }
      std::vector<std::vector<float>> labels;
      EXPECT_EQ(all_batches(loader, static_cast<std::int64_t>(epoch), orders[epoch], &labels),
                reference[epoch])
          << "epoch " << epoch;
      EXPECT_EQ(labels, reference_labels[epoch]) << "epoch " << epoch;
    }
    loader.start_epoch(0, orders[0]);
    ASSERT_NE(loader.next(), nullptr);
  }  // destroyed mid-epoch
  EXPECT_GT(cached.cached_bytes(), 0);
  EXPECT_LE(cached.cached_bytes(), total / 3);
}

}  // namespace
}  // namespace epoch::data
