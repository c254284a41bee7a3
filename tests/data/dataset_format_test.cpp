// --data resolution: every format by its words or files, and a missing folder named.
#include "epoch/data/dataset_format.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "epoch/tensor/error.h"
#include "testing/testing.h"

namespace epoch::data {
namespace {
namespace fs = std::filesystem;

TEST(DatasetFormat, LocatesEveryFormat) {
  testing::TempDir dir;
  EXPECT_EQ(locate_dataset("").format, DatasetFormat::fashion_mnist);
  EXPECT_EQ(locate_dataset("synthetic").format, DatasetFormat::synthetic);
  const DatasetLocation named = locate_dataset("cifar10:some/dir");
  EXPECT_EQ(named.format, DatasetFormat::cifar10);
  EXPECT_EQ(named.path, "some/dir");

  fs::create_directories(dir / "idx");
  std::ofstream(dir / "idx/train-images-idx3-ubyte.gz") << "x";
  EXPECT_EQ(locate_dataset(dir / "idx").format, DatasetFormat::idx);

  fs::create_directories(dir / "cifar/cifar-10-batches-bin");
  std::ofstream(dir / "cifar/cifar-10-batches-bin/data_batch_1.bin") << "x";
  const DatasetLocation nested = locate_dataset(dir / "cifar");
  EXPECT_EQ(nested.format, DatasetFormat::cifar10);
  EXPECT_EQ(nested.path, dir / "cifar/cifar-10-batches-bin");
  EXPECT_EQ(locate_dataset(dir / "cifar/cifar-10-batches-bin").format, DatasetFormat::cifar10);

  fs::create_directories(dir / "splits/train/a");
  const DatasetLocation splits = locate_dataset(dir / "splits");
  EXPECT_EQ(splits.format, DatasetFormat::image_splits);
  EXPECT_EQ(fs::path(splits.path).filename(), "train");

  fs::create_directories(dir / "classes/a");
  EXPECT_EQ(locate_dataset(dir / "classes").format, DatasetFormat::image_classes);

  try {
    locate_dataset(dir / "missing");
    FAIL() << "a missing folder was located";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find(dir / "missing"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace epoch::data
