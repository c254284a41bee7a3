// CIFAR-10 binary files: write/read round trip, the record layout byte for byte, class names
// from batches.meta.txt, and every malformed input (missing, empty, truncated, bad label).
#include "epoch/data/cifar10.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "testing/testing.h"

namespace epoch::data {
namespace {

namespace fs = std::filesystem;

/// n images whose pixel bytes encode (image, position) and labels i % 10.
ImageDataset make_dataset(std::int64_t n) {
  ImageDataset ds;
  ds.images = Tensor::empty({n, 3, 32, 32}, DType::u8);
  ds.labels = Tensor::empty({n}, DType::i32);
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t p = 0; p < 3 * 32 * 32; ++p)
      ds.images.data<std::uint8_t>()[i * 3072 + p] =
          static_cast<std::uint8_t>((i * 31 + p * 7) % 251);
    ds.labels.data<std::int32_t>()[i] = static_cast<std::int32_t>((i * 3) % 10);
  }
  ds.num_classes = 10;
  return ds;
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string record(int label, std::uint8_t fill) {
  std::string r(3073, static_cast<char>(fill));
  r[0] = static_cast<char>(label);
  return r;
}

/// Runs f, expecting an IoError whose message contains every needle.
template <typename F>
void expect_io_error(F f, std::initializer_list<std::string> needles) {
  try {
    f();
    ADD_FAILURE() << "no IoError";
  } catch (const IoError& e) {
    for (const std::string& needle : needles)
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(Cifar10, RoundTripAcrossFiveTrainFilesAndATestFile) {
  testing::TempDir dir;
  const ImageDataset train = make_dataset(23);  // not a multiple of 5: files of 4 or 5 records
  const ImageDataset test = make_dataset(7);
  write_cifar10(dir.path(), "train", train);
  write_cifar10(dir.path(), "test", test);
  for (int k = 1; k <= 5; ++k) {
    const auto size = fs::file_size(dir / ("data_batch_" + std::to_string(k) + ".bin"));
    EXPECT_TRUE(size == 4 * 3073 || size == 5 * 3073) << size;
  }
  EXPECT_EQ(fs::file_size(dir / "test_batch.bin"), 7u * 3073u);
  const ImageDataset back = load_cifar10(dir.path(), "train");
  ASSERT_EQ(back.images.shape(), (Shape{23, 3, 32, 32}));
  EXPECT_EQ(back.images.dtype(), DType::u8);
  EXPECT_EQ(back.labels.shape(), (Shape{23}));
  EXPECT_EQ(back.num_classes, 10);
  EXPECT_EQ(back.class_names, cifar10_class_names());
  EXPECT_EQ(back.images.to_vector(), train.images.to_vector());
  EXPECT_EQ(back.labels.to_vector(), train.labels.to_vector());
  const ImageDataset back_test = load_cifar10(dir.path(), "test");
  EXPECT_EQ(back_test.images.to_vector(), test.images.to_vector());
  EXPECT_EQ(back_test.labels.to_vector(), test.labels.to_vector());
}

TEST(Cifar10, RecordLayoutIsLabelThenRedGreenBluePlanes) {
  testing::TempDir dir;
  std::string rec(3073, '\0');
  rec[0] = 7;
  for (int p = 0; p < 1024; ++p) {
    rec[static_cast<std::size_t>(1 + p)] = static_cast<char>(p % 200);            // red
    rec[static_cast<std::size_t>(1 + 1024 + p)] = static_cast<char>(201);         // green
    rec[static_cast<std::size_t>(1 + 2048 + p)] = static_cast<char>(p / 32 + 1);  // blue: row
  }
  write_bytes(dir / "test_batch.bin", rec);
  const ImageDataset ds = load_cifar10(dir.path(), "test");
  const std::uint8_t* px = ds.images.data<std::uint8_t>();
  EXPECT_EQ(ds.labels.data<std::int32_t>()[0], 7);
  EXPECT_EQ(px[0 * 1024 + 5 * 32 + 3], (5 * 32 + 3) % 200);  // red at row 5, column 3
  EXPECT_EQ(px[1 * 1024 + 17], 201);
  EXPECT_EQ(px[2 * 1024 + 9 * 32 + 30], 10);  // blue at row 9
}

TEST(Cifar10, LoadsOnlyTheTrainFilesPresentInOrder) {
  testing::TempDir dir;
  write_bytes(dir / "data_batch_3.bin", record(3, 30));
  write_bytes(dir / "data_batch_1.bin", record(1, 10) + record(2, 20));
  const ImageDataset ds = load_cifar10(dir.path(), "train");
  ASSERT_EQ(ds.size(), 3);
  EXPECT_EQ(ds.labels.to_vector(), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(ds.images.data<std::uint8_t>()[2 * 3072], 30);
}

TEST(Cifar10, MetaFileNamesTheClasses) {
  testing::TempDir dir;
  write_bytes(dir / "test_batch.bin", record(0, 1));
  std::string meta;
  for (int k = 0; k < 10; ++k) meta.append("class ").append(std::to_string(k)).append("\r\n");
  write_bytes(dir / "batches.meta.txt", meta + "\n\n");  // the original ends in blank lines
  EXPECT_EQ(load_cifar10(dir.path(), "test").class_names[9], "class 9");
  write_bytes(dir / "batches.meta.txt", "only\nthree\nnames\n");
  EXPECT_EQ(load_cifar10(dir.path(), "test").class_names, cifar10_class_names());

  ImageDataset named = make_dataset(3);
  for (int k = 0; k < 10; ++k)
    named.class_names.push_back(std::string(1, 'c').append(std::to_string(k)));
  testing::TempDir out;
  write_cifar10(out.path(), "test", named);
  EXPECT_EQ(load_cifar10(out.path(), "test").class_names, named.class_names);
}

TEST(Cifar10, MissingFilesAreNamed) {
  testing::TempDir dir;
  expect_io_error([&] { load_cifar10(dir.path(), "train"); },
                  {dir.path(), "data_batch_1.bin", "data_batch_5.bin"});
  expect_io_error([&] { load_cifar10(dir.path(), "test"); }, {"test_batch.bin"});
  expect_io_error([&] { load_cifar10(dir / "nowhere", "test"); }, {"nowhere", "no such directory"});
  EXPECT_THROW(load_cifar10(dir.path(), "validation"), InvalidArgument);
}

TEST(Cifar10, EmptyTruncatedAndBadLabelFilesAreNamed) {
  testing::TempDir dir;
  write_bytes(dir / "test_batch.bin", "");
  expect_io_error([&] { load_cifar10(dir.path(), "test"); }, {"test_batch.bin", "empty"});
  write_bytes(dir / "test_batch.bin", record(1, 0) + record(2, 0).substr(0, 100));
  expect_io_error([&] { load_cifar10(dir.path(), "test"); },
                  {"test_batch.bin", "truncated: 3173 bytes is not a multiple of 3073"});
  write_bytes(dir / "data_batch_1.bin", record(1, 0));
  write_bytes(dir / "data_batch_2.bin", record(9, 0) + record(10, 0));
  expect_io_error([&] { load_cifar10(dir.path(), "train"); },
                  {"data_batch_2.bin", "record 1", "label 10"});
  fs::create_directory(dir / "data_batch_4.bin");
  expect_io_error([&] { load_cifar10(dir.path(), "train"); }, {"data_batch_4.bin", "directory"});
}

TEST(Cifar10, FifosDevicesAndFoldersAreRefusedWithoutReading) {
  alarm(20);  // a FIFO used to block the loader for ever (batches.meta.txt's too)
  testing::TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "test_batch.bin").c_str(), 0600), 0);
  expect_io_error([&] { load_cifar10(dir.path(), "test"); },
                  {dir / "test_batch.bin", "is a FIFO, not a regular file"});
  fs::create_symlink("/dev/zero", dir / "data_batch_1.bin");
  expect_io_error([&] { load_cifar10(dir.path(), "train"); },
                  {dir / "data_batch_1.bin", "is a character device"});
  fs::remove(dir / "data_batch_1.bin");
  fs::create_directory(dir / "data_batch_1.bin");
  expect_io_error([&] { load_cifar10(dir.path(), "train"); },
                  {dir / "data_batch_1.bin", "is a directory"});
  fs::remove(dir / "data_batch_1.bin");
  write_bytes(dir / "data_batch_1.bin", record(3, 0));
  EXPECT_EQ(load_cifar10(dir.path(), "train").images.size(0), 1);
  ASSERT_EQ(::mkfifo((dir / "batches.meta.txt").c_str(), 0600), 0);
  expect_io_error([&] { load_cifar10(dir.path(), "train"); },
                  {dir / "batches.meta.txt", "is a FIFO"});
  alarm(0);
}

TEST(Cifar10, ParseRecordsChecksLikeTheLoader) {
  const std::string two = record(4, 9) + record(0, 8);
  const ImageDataset ds = parse_cifar10_records(
      std::span(reinterpret_cast<const std::uint8_t*>(two.data()), two.size()), "mem");
  EXPECT_EQ(ds.size(), 2);
  EXPECT_EQ(ds.labels.to_vector(), (std::vector<float>{4, 0}));
  EXPECT_EQ(ds.images.data<std::uint8_t>()[3072], 8);
  const std::string bad = record(255, 0);
  expect_io_error(
      [&] {
        parse_cifar10_records(
            std::span(reinterpret_cast<const std::uint8_t*>(bad.data()), bad.size()), "mem");
      },
      {"mem", "label 255"});
  expect_io_error([&] { parse_cifar10_records({}, "mem"); }, {"mem", "empty"});
}

TEST(Cifar10, WriteRejectsBadDatasetsAndRemovesStaleBatches) {
  testing::TempDir dir;
  ImageDataset ds = make_dataset(2);
  EXPECT_THROW(write_cifar10(dir.path(), "train", ds, 0), InvalidArgument);
  EXPECT_THROW(write_cifar10(dir.path(), "train", ds, 6), InvalidArgument);
  EXPECT_THROW(write_cifar10(dir.path(), "valid", ds), InvalidArgument);
  ImageDataset gray = ds;
  gray.images = Tensor::zeros({2, 1, 32, 32}, DType::u8);
  EXPECT_THROW(write_cifar10(dir.path(), "train", gray), InvalidArgument);
  ImageDataset bad_label = make_dataset(2);
  bad_label.labels.data<std::int32_t>()[1] = 10;
  EXPECT_THROW(write_cifar10(dir.path(), "train", bad_label), InvalidArgument);
  ImageDataset few_names = ds;
  few_names.class_names = {"a", "b"};
  EXPECT_THROW(write_cifar10(dir.path(), "train", few_names), InvalidArgument);
  EXPECT_THROW(write_cifar10(dir.path(), "train", make_dataset(0)), InvalidArgument);

  write_cifar10(dir.path(), "train", make_dataset(10));
  EXPECT_TRUE(fs::exists(dir / "data_batch_5.bin"));
  write_cifar10(dir.path(), "train", ds);  // 2 images: 2 files, the older 3-5 removed
  EXPECT_TRUE(fs::exists(dir / "data_batch_2.bin"));
  EXPECT_FALSE(fs::exists(dir / "data_batch_3.bin"));
  EXPECT_EQ(load_cifar10(dir.path(), "train").size(), 2);
  for (const auto& entry : fs::directory_iterator(dir.path()))
    EXPECT_EQ(entry.path().filename().string().find(".tmp"), std::string::npos);
}

}  // namespace
}  // namespace epoch::data
