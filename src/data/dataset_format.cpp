// --data resolution by words and files (see dataset_format.h).
#include "epoch/data/dataset_format.h"

#include <filesystem>

#include "epoch/tensor/error.h"

namespace epoch::data {
namespace fs = std::filesystem;
namespace {

bool path_exists(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

}  // namespace

DatasetLocation locate_dataset(const std::string& data) {
  if (data.empty()) return {DatasetFormat::fashion_mnist, {}};
  if (data == "synthetic") return {DatasetFormat::synthetic, {}};
  if (data.rfind("cifar10:", 0) == 0) return {DatasetFormat::cifar10, data.substr(8)};
  const fs::path dir = data;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) EPOCH_THROW(IoError, data, ": no such folder");
  if (path_exists(dir / "train-images-idx3-ubyte") ||
      path_exists(dir / "train-images-idx3-ubyte.gz"))
    return {DatasetFormat::idx, data};
  if (path_exists(dir / "data_batch_1.bin")) return {DatasetFormat::cifar10, data};
  if (path_exists(dir / "cifar-10-batches-bin" / "data_batch_1.bin"))
    return {DatasetFormat::cifar10, (dir / "cifar-10-batches-bin").string()};
  if (fs::is_directory(dir / "train", ec))
    return {DatasetFormat::image_splits, (dir / "train").string()};
  return {DatasetFormat::image_classes, data};
}

}  // namespace epoch::data
