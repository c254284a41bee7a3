// Datasets: MNIST-format folders made by the test, batch assembly with preprocessing, the epoch
// order, Preprocessing's JSON form, synthetic images, and Debian's Fashion-MNIST when present.
#include "epoch/data/dataset.h"

#include "epoch/data/loader.h"
#include "epoch/data/source.h"

#include <gtest/gtest.h>
#include <omp.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "testing/testing.h"

namespace epoch::data {
namespace {

namespace fs = std::filesystem;

class DatasetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("epoch_dataset_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

std::string idx_bytes(const std::vector<std::uint32_t>& dims, const std::vector<int>& values) {
  std::string s = {'\0', '\0', '\x08', static_cast<char>(dims.size())};
  for (std::uint32_t d : dims)
    for (int shift = 24; shift >= 0; shift -= 8) s.push_back(static_cast<char>(d >> shift));
  for (int v : values) s.push_back(static_cast<char>(v));
  return s;
}

void write_file(const std::string& path, const std::string& bytes, bool gzip) {
  if (gzip) {
    gzFile gz = gzopen(path.c_str(), "wb");
    ASSERT_NE(gz, nullptr);
    gzwrite(gz, bytes.data(), static_cast<unsigned>(bytes.size()));
    ASSERT_EQ(gzclose(gz), Z_OK);
  } else {
    std::ofstream(path, std::ios::binary)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
}

std::vector<int> pixel_pattern(int n) {
  std::vector<int> v(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = (i * 53 + 7) % 256;
  return v;
}

std::vector<int> as_ints(const Tensor& t) {
  const std::vector<float> f = t.to_vector();
  return {f.begin(), f.end()};
}

/// A dataset from explicit (N, C, H, W) pixels and labels.
ImageDataset tiny_dataset(const Shape& shape, const std::vector<int>& pixels,
                          const std::vector<std::int32_t>& labels, std::int64_t classes) {
  ImageDataset ds;
  ds.images = Tensor::empty(shape, DType::u8);
  for (std::size_t i = 0; i < pixels.size(); ++i)
    ds.images.data<std::uint8_t>()[i] = static_cast<std::uint8_t>(pixels[i]);
  ds.labels = Tensor::from_ints({static_cast<std::int64_t>(labels.size())}, labels);
  ds.num_classes = classes;
  return ds;
}

// ------------------------------------------------------------------ MNIST-format folders

TEST_F(DatasetTest, LoadsTrainAndTestFromAFolderRawOrGzip) {
  const std::vector<int> train_px = pixel_pattern(5 * 4 * 3);
  write_file(path("train-images-idx3-ubyte"), idx_bytes({5, 4, 3}, train_px), false);
  write_file(path("train-labels-idx1-ubyte.gz"), idx_bytes({5}, {3, 0, 9, 1, 3}), true);
  write_file(path("t10k-images-idx3-ubyte.gz"), idx_bytes({2, 4, 3}, pixel_pattern(24)), true);
  write_file(path("t10k-labels-idx1-ubyte"), idx_bytes({2}, {7, 8}), false);

  const ImageDataset train = load_mnist_format(dir_.string(), "train");
  EXPECT_EQ(train.images.shape(), (Shape{5, 1, 4, 3}));
  EXPECT_EQ(train.images.dtype(), DType::u8);
  EXPECT_EQ(as_ints(train.images), train_px);
  EXPECT_EQ(train.labels.dtype(), DType::i32);
  EXPECT_EQ(as_ints(train.labels), (std::vector<int>{3, 0, 9, 1, 3}));
  EXPECT_EQ(train.num_classes, 10);
  EXPECT_EQ(train.class_names.front(), "0");
  EXPECT_EQ(train.class_names.back(), "9");
  EXPECT_NE(train.source.find("train-images-idx3-ubyte"), std::string::npos);
  EXPECT_EQ(train.size(), 5);
  EXPECT_EQ(train.channels(), 1);

  const ImageDataset test = load_mnist_format(dir_.string(), "test", fashion_mnist_class_names());
  EXPECT_EQ(test.images.shape(), (Shape{2, 1, 4, 3}));
  EXPECT_EQ(as_ints(test.labels), (std::vector<int>{7, 8}));
  EXPECT_EQ(test.class_names[0], "T-shirt/top");
  EXPECT_EQ(test.class_names[9], "Ankle boot");

  EXPECT_THROW(load_mnist_format(dir_.string(), "val"), InvalidArgument);
  EXPECT_THROW(load_mnist_format(dir_.string(), "train", {"a", "b"}), InvalidArgument);
}

/// Expects load_mnist_format to throw an IoError containing every string in `parts`.
void expect_load_error(const std::string& dir, const std::string& split,
                       const std::vector<std::string>& parts) {
  try {
    load_mnist_format(dir, split);
    ADD_FAILURE() << "no error";
  } catch (const IoError& e) {
    const std::string msg = e.what();
    for (const std::string& p : parts)
      EXPECT_NE(msg.find(p), std::string::npos) << "expected \"" << p << "\" in: " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

TEST_F(DatasetTest, MissingFilesAreListed) {
  expect_load_error(dir_.string(), "train",
                    {dir_.string(), "train-images-idx3-ubyte", "train-images-idx3-ubyte.gz"});
  write_file(path("t10k-images-idx3-ubyte"), idx_bytes({1, 2, 2}, {1, 2, 3, 4}), false);
  expect_load_error(dir_.string(), "test", {"t10k-labels-idx1-ubyte", ".gz"});
  expect_load_error(path("nowhere"), "test", {"does not exist"});
}

TEST_F(DatasetTest, CountMismatchAndBadLabelsAreErrors) {
  write_file(path("train-images-idx3-ubyte"), idx_bytes({3, 2, 2}, pixel_pattern(12)), false);
  write_file(path("train-labels-idx1-ubyte"), idx_bytes({2}, {1, 2}), false);
  expect_load_error(dir_.string(), "train", {"3 images", "2 labels"});
  write_file(path("train-labels-idx1-ubyte"), idx_bytes({3}, {1, 10, 2}), false);
  expect_load_error(dir_.string(), "train", {"label 10 of sample 1", "train-labels-idx1-ubyte"});
  write_file(path("train-labels-idx1-ubyte"), idx_bytes({3, 1}, {1, 2, 3}), false);
  expect_load_error(dir_.string(), "train", {"expected label dims"});
  write_file(path("train-images-idx3-ubyte"), idx_bytes({3, 4}, pixel_pattern(12)), false);
  expect_load_error(dir_.string(), "train", {"expected image dims"});
}

TEST_F(DatasetTest, DefaultFashionMnistDirFollowsEpochDataDir) {
  const char* old = std::getenv("EPOCH_DATA_DIR");
  const std::string saved = old != nullptr ? old : "";
  ::setenv("EPOCH_DATA_DIR", dir_.c_str(), 1);
  EXPECT_EQ(default_fashion_mnist_dir(), dir_.string());
  fs::create_directory(dir_ / "fashion-mnist");
  EXPECT_EQ(default_fashion_mnist_dir(), (dir_ / "fashion-mnist").string());
  if (old != nullptr)
    ::setenv("EPOCH_DATA_DIR", saved.c_str(), 1);
  else
    ::unsetenv("EPOCH_DATA_DIR");
}

// Runs only where Debian's dataset-fashion-mnist package (or $EPOCH_DATA_DIR) provides it.
TEST(FashionMnist, LoadsDebiansCopy) {
  const std::string dir = default_fashion_mnist_dir();
  if (dir.empty())
    GTEST_SKIP() << "Fashion-MNIST not installed (apt install dataset-fashion-mnist)";
  const ImageDataset train = load_mnist_format(dir, "train", fashion_mnist_class_names());
  const ImageDataset test = load_mnist_format(dir, "test", fashion_mnist_class_names());
  EXPECT_EQ(train.images.shape(), (Shape{60000, 1, 28, 28}));
  EXPECT_EQ(test.images.shape(), (Shape{10000, 1, 28, 28}));
  std::vector<std::int64_t> per_class(10, 0);
  const std::int32_t* labels = train.labels.data<std::int32_t>();
  for (std::int64_t i = 0; i < train.size(); ++i) {
    ASSERT_TRUE(labels[i] >= 0 && labels[i] < 10);
    ++per_class[static_cast<std::size_t>(labels[i])];
  }
  EXPECT_EQ(per_class, std::vector<std::int64_t>(10, 6000));
  const std::int32_t* test_labels = test.labels.data<std::int32_t>();
  EXPECT_TRUE(std::all_of(test_labels, test_labels + test.size(),
                          [](std::int32_t l) { return l >= 0 && l < 10; }));
  // Real images, not zeros: the mean pixel of Fashion-MNIST is about 73.
  const Preprocessing p = Preprocessing::for_dataset(train, true);
  EXPECT_NEAR(p.mean[0] * 255.0f, 72.9f, 1.0f);
}

// ------------------------------------------------------------------ Preprocessing

TEST(Preprocessing, JsonRoundTripIsExact) {
  Preprocessing p;
  p.rescale = 1.0f / 255.0f;
  p.mean = {0.4914f, 0.4822f, 0.4465f};
  p.std = {0.2470f, 0.2435f, 0.2616f};
  p.channels = 3;
  p.height = 32;
  p.width = 30;
  const Preprocessing q = Preprocessing::from_json(p.to_json());
  EXPECT_EQ(q, p);
  EXPECT_EQ(q.rescale, 1.0f / 255.0f);  // bit-exact

  Preprocessing plain;
  plain.channels = 1;
  plain.height = plain.width = 28;
  EXPECT_EQ(Preprocessing::from_json(plain.to_json()), plain);
  EXPECT_TRUE(Preprocessing::from_json(plain.to_json()).mean.empty());
}

TEST(Preprocessing, MalformedJsonIsAConfigError) {
  EXPECT_THROW(Preprocessing::from_json("{"), ConfigError);
  EXPECT_THROW(Preprocessing::from_json("[]"), ConfigError);
  EXPECT_THROW(Preprocessing::from_json(R"({"channels":1,"height":2,"width":2})"), ConfigError);
  EXPECT_THROW(Preprocessing::from_json(R"({"rescale":1,"channels":1,"height":2})"), ConfigError);
  EXPECT_THROW(Preprocessing::from_json(R"({"rescale":1,"channels":1.5,"height":2,"width":2})"),
               ConfigError);
  EXPECT_THROW(
      Preprocessing::from_json(R"({"rescale":1,"mean":[0,0],"channels":1,"height":2,"width":2})"),
      ConfigError);
  EXPECT_THROW(
      Preprocessing::from_json(R"({"rescale":1,"std":[0],"channels":1,"height":2,"width":2})"),
      ConfigError);
  EXPECT_THROW(
      Preprocessing::from_json(R"({"rescale":1,"mean":["a"],"channels":1,"height":2,"width":2})"),
      ConfigError);
  EXPECT_THROW(Preprocessing::from_json(R"({"rescale":1,"channels":0,"height":2,"width":2})"),
               ConfigError);
}

TEST(Preprocessing, ForDatasetComputesChannelMeanAndStd) {
  // Channel 0 holds 0 and 255 (mean 127.5, std 127.5); channel 1 is constant 51 (std 0 -> 1).
  const ImageDataset ds = tiny_dataset({2, 2, 1, 1}, {0, 51, 255, 51}, {0, 1}, 2);
  const Preprocessing plain = Preprocessing::for_dataset(ds, false);
  EXPECT_EQ(plain.channels, 2);
  EXPECT_EQ(plain.height, 1);
  EXPECT_TRUE(plain.mean.empty() && plain.std.empty());
  const Preprocessing p = Preprocessing::for_dataset(ds, true);
  ASSERT_EQ(p.mean.size(), 2u);
  EXPECT_FLOAT_EQ(p.mean[0], 0.5f);
  EXPECT_FLOAT_EQ(p.std[0], 0.5f);
  EXPECT_FLOAT_EQ(p.mean[1], 0.2f);
  EXPECT_FLOAT_EQ(p.std[1], 1.0f);
}

// ------------------------------------------------- batches of an in-memory dataset (Loader)

/// The first batch of a loader over `order`.
Batch first_batch(Loader& loader, std::vector<std::int64_t> order) {
  loader.start_epoch(0, std::move(order));
  const Batch* b = loader.next();
  EXPECT_NE(b, nullptr);
  return b ? *b : Batch{};
}

TEST(MemoryBatches, ApplyRescaleMeanAndStdPerChannel) {
  // Three samples of (C, H, W) = (3, 1, 2).
  const MemorySource source(tiny_dataset({3, 3, 1, 2},
                                         {0, 255, 51, 102, 0, 255,     //
                                          255, 255, 0, 0, 51, 51,      //
                                          102, 51, 255, 0, 102, 0},
                                         {4, 5, 6}, 7));
  Preprocessing p;
  p.channels = 3;
  p.height = 1;
  p.width = 2;
  p.mean = {0.5f, 0.25f, 0.0f};
  p.std = {0.5f, 2.0f, 1.0f};
  LoaderConfig config;
  config.batch_size = 2;
  Loader loader(source, p, std::nullopt, config, nullptr);
  const Batch b = first_batch(loader, {2, 0});
  EXPECT_EQ(b.images.shape(), (Shape{2, 3, 1, 2}));
  EXPECT_EQ(b.images.dtype(), DType::f32);
  // x = (v / 255 - mean[c]) / std[c]: channel 0: 0 -> -1, 51 -> -0.6, 102 -> -0.2, 255 -> 1;
  // channel 1: 0 -> -0.125, 51 -> -0.025, 102 -> 0.075, 255 -> 0.375; channel 2: v / 255.
  EXPECT_TRUE(testing::allclose(
      b.images,
      Tensor::from_vector({2, 3, 1, 2}, {-0.2f, -0.6f, 0.375f, -0.125f, 0.4f, 0.0f,  //
                                         -1.0f, 1.0f, -0.025f, 0.075f, 0.0f, 1.0f}),
      1e-6f, 1e-6f));
  EXPECT_EQ(as_ints(b.labels), (std::vector<int>{6, 4}));

  // Without mean/std only the rescale applies.
  Preprocessing r = p;
  r.mean.clear();
  r.std.clear();
  Loader plain(source, r, std::nullopt, config, nullptr);
  EXPECT_TRUE(testing::allclose(first_batch(plain, {1}).images,
                                Tensor::from_vector({1, 3, 1, 2},
                                                    {1.0f, 1.0f, 0.0f, 0.0f, 0.2f, 0.2f})));
}

TEST(MemoryBatches, ReuseTheirBuffersAndDoNotDependOnTheThreadCount) {
  const MemorySource source(make_synthetic_dataset(20, 3, 8, 8, 4, 1));
  const Preprocessing p = Preprocessing::for_dataset(*source.in_memory(), true);
  LoaderConfig config;
  config.batch_size = 8;
  Loader loader(source, p, std::nullopt, config, nullptr);
  const std::vector<std::int64_t> rows = {3, 1, 4, 1, 5, 9, 2, 6};
  const Batch first = first_batch(loader, rows);
  const void* buffer = first.images.storage().get();
  const Batch smaller = first_batch(loader, {3, 1, 4});
  EXPECT_EQ(smaller.images.storage().get(), buffer);
  EXPECT_EQ(smaller.images.shape(), (Shape{3, 3, 8, 8}));
  EXPECT_EQ(smaller.labels.shape(), Shape{3});
  EXPECT_TRUE(smaller.images.is_contiguous());

  // The same batch with one thread and with several.
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  const Tensor serial = first_batch(loader, rows).images.clone();
  omp_set_num_threads(std::max(threads, 2));
  const Tensor parallel = first_batch(loader, rows).images.clone();
  omp_set_num_threads(threads);
  EXPECT_EQ(std::memcmp(serial.raw(), parallel.raw(), 8 * 192 * sizeof(float)), 0);
}

TEST(MemoryBatches, BadArgumentsThrow) {
  const ImageDataset ds = make_synthetic_dataset(4, 1, 6, 6, 2, 3);
  const MemorySource source(ds);
  Preprocessing p = Preprocessing::for_dataset(ds, false);
  Loader loader(source, p, std::nullopt, LoaderConfig{}, nullptr);
  EXPECT_THROW(loader.start_epoch(0, {0, 4}), InvalidArgument);
  EXPECT_THROW(loader.start_epoch(0, {-1}), InvalidArgument);
  Preprocessing wrong = p;
  wrong.std = {0.0f};
  EXPECT_THROW(Loader(source, wrong, std::nullopt, LoaderConfig{}, nullptr), InvalidArgument);
  wrong = p;
  wrong.mean = {0.1f, 0.2f};
  EXPECT_THROW(Loader(source, wrong, std::nullopt, LoaderConfig{}, nullptr), InvalidArgument);
  ImageDataset bad = ds;
  bad.labels = Tensor::from_ints({3}, std::vector<std::int32_t>{0, 1, 0});
  EXPECT_THROW(MemorySource{bad}, InvalidArgument);
}

// ------------------------------------------------------------------ epoch_order

TEST(EpochOrder, IsAReproduciblePermutationThatChangesWithEpochAndSeed) {
  const std::vector<std::int64_t> a = epoch_order(1000, 42, 0, true);
  std::vector<std::int64_t> sorted = a, identity(1000);
  std::sort(sorted.begin(), sorted.end());
  std::iota(identity.begin(), identity.end(), 0);
  EXPECT_EQ(sorted, identity);
  EXPECT_NE(a, identity);
  EXPECT_EQ(epoch_order(1000, 42, 0, true), a);
  EXPECT_NE(epoch_order(1000, 42, 1, true), a);
  EXPECT_NE(epoch_order(1000, 43, 0, true), a);
  EXPECT_EQ(epoch_order(1000, 42, 5, false), identity);
  EXPECT_TRUE(epoch_order(0, 1, 0, true).empty());
  EXPECT_EQ(epoch_order(1, 1, 0, true), std::vector<std::int64_t>{0});
  EXPECT_THROW(epoch_order(-1, 1, 0, true), InvalidArgument);
  // Every element moves somewhere: position 0 takes many values across epochs.
  std::vector<bool> seen(10, false);
  for (int e = 0; e < 200; ++e)
    seen[static_cast<std::size_t>(epoch_order(10, 7, e, true)[0])] = true;
  EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](bool s) { return s; }));
}

// ------------------------------------------------------------------ synthetic images

TEST(SyntheticDataset, IsDeterministicBalancedAndLearnable) {
  const ImageDataset a = make_synthetic_dataset(400, 1, 16, 16, 10, 5);
  EXPECT_EQ(a.images.shape(), (Shape{400, 1, 16, 16}));
  EXPECT_EQ(a.labels.shape(), Shape{400});
  EXPECT_EQ(a.num_classes, 10);
  EXPECT_EQ(a.class_names.size(), 10u);
  EXPECT_EQ(a.labels.data<std::int32_t>()[13], 3);
  const ImageDataset b = make_synthetic_dataset(400, 1, 16, 16, 10, 5);
  EXPECT_EQ(std::memcmp(a.images.raw(), b.images.raw(), 400 * 256), 0);
  const ImageDataset c = make_synthetic_dataset(400, 1, 16, 16, 10, 6);
  EXPECT_NE(std::memcmp(a.images.raw(), c.images.raw(), 400 * 256), 0);
  const std::uint8_t* px = a.images.data<std::uint8_t>();
  EXPECT_GT(*std::max_element(px, px + 400 * 256) - *std::min_element(px, px + 400 * 256), 150);

  // A nearest-class-mean classifier fitted on `a` must beat chance (10%) by far on `c`.
  std::vector<double> means(10 * 256, 0.0);
  for (std::int64_t i = 0; i < 400; ++i)
    for (int k = 0; k < 256; ++k) means[(i % 10) * 256 + k] += px[i * 256 + k] / 40.0;
  int correct = 0;
  const std::uint8_t* test = c.images.data<std::uint8_t>();
  for (std::int64_t i = 0; i < 400; ++i) {
    int best = 0;
    double best_d = 1e300;
    for (int cls = 0; cls < 10; ++cls) {
      double d = 0.0;
      for (int k = 0; k < 256; ++k) {
        const double diff = test[i * 256 + k] - means[static_cast<std::size_t>(cls * 256 + k)];
        d += diff * diff;
      }
      if (d < best_d) {
        best_d = d;
        best = cls;
      }
    }
    correct += best == c.labels.data<std::int32_t>()[i];
  }
  EXPECT_GT(correct, 240) << correct << " / 400";

  EXPECT_THROW(make_synthetic_dataset(10, 0, 8, 8, 2, 1), InvalidArgument);
  EXPECT_THROW(make_synthetic_dataset(10, 1, 8, 8, 1, 1), InvalidArgument);
  EXPECT_THROW(make_synthetic_dataset(-1, 1, 8, 8, 2, 1), InvalidArgument);
}

}  // namespace
}  // namespace epoch::data
