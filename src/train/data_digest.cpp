// The digest of a run's data (see training_data.h).
#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "epoch/data/dataset.h"
#include "epoch/tensor/error.h"
#include "epoch/tensor/file_io.h"
#include "epoch/tensor/sha256.h"
#include "epoch/train/training_data.h"

namespace epoch::train {

namespace fs = std::filesystem;

std::string data_digest(const std::string& source) {
  // Generated data is a function of the seed and the model's input, both in the protocol.
  if (source == "synthetic") return sha256_hex("epoch synthetic data");
  const fs::path root = source.empty()                      ? data::default_fashion_mnist_dir()
                        : source.rfind("cifar10:", 0) == 0 ? source.substr(8)
                                                            : source;
  std::error_code ec;
  std::vector<fs::path> files;
  if (fs::is_regular_file(root, ec)) {
    files.push_back(root);
  } else {
    for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec))
      if (it->is_regular_file(ec)) files.push_back(it->path());
    if (ec) EPOCH_THROW(IoError, root.string(), ": cannot list the data: ", ec.message());
  }
  if (files.empty()) EPOCH_THROW(IoError, root.string(), ": no data files to take a digest of");
  std::sort(files.begin(), files.end());
  std::string manifest;  // "relative path\tsize\tsha256\n" per file
  for (const fs::path& f : files) {
    const std::vector<std::uint8_t> bytes = read_regular_file(f.string(), std::uint64_t{1} << 36);
    const std::string relative =
        f == root ? f.filename().string() : fs::relative(f, root, ec).generic_string();
    manifest += relative + "\t" + std::to_string(bytes.size()) + "\t" +
                sha256_hex(std::string_view(reinterpret_cast<const char*>(bytes.data()),
                                            bytes.size())) +
                "\n";
  }
  return sha256_hex(manifest);
}

}  // namespace epoch::train
