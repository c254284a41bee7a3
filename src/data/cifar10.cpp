// The CIFAR-10 binary format: reading (one read per file, sizes and labels checked before any
// pixel is used, records unpacked in parallel) and atomic writing of the same files.
#include "epoch/data/cifar10.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "epoch/tensor/error.h"
#include "epoch/tensor/file_io.h"

namespace epoch::data {
namespace {

namespace fs = std::filesystem;

constexpr std::int64_t kPixelBytes = 3 * 32 * 32;       // one image, channel-planar
constexpr std::int64_t kRecordBytes = 1 + kPixelBytes;  // label byte + pixels
constexpr int kMaxTrainFiles = 5;
// The largest batch file read (the real ones are 30.7 MB) and batches.meta.txt (10 short lines).
constexpr std::uint64_t kMaxBatchFileBytes = std::uint64_t{4} << 30;
constexpr std::uint64_t kMaxMetaFileBytes = std::uint64_t{1} << 20;

/// Throws IoError "path: problem [at file:line]", the format EPOCH_THROW uses (the builtins,
/// not std::source_location, which the fuzz build's clang cannot compile with libstdc++).
[[noreturn]] void fail(const std::string& path, const std::string& problem,
                       const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  throw IoError(path + ": " + problem + " [at " + file + ":" + std::to_string(line) + "]");
}

std::string errno_text(int err) { return std::strerror(err); }

/// IoError unless `size` bytes are a non-empty whole number of records.
void check_record_bytes(const std::string& name, std::uint64_t size) {
  if (size == 0) fail(name, "empty file, expected 3073-byte CIFAR-10 records");
  if (size % kRecordBytes != 0)
    fail(name, "truncated: " + std::to_string(size) + " bytes is not a multiple of " +
                   std::to_string(kRecordBytes) +
                   " (CIFAR-10 records are 1 label byte + 3072 "
                   "pixel bytes)");
}

/// IoError naming the first record whose label is above 9.
void check_labels(const std::string& name, const std::uint8_t* records,  // (n, 3073)
                  std::int64_t n) {
  for (std::int64_t r = 0; r < n; ++r) {
    const unsigned label = records[r * kRecordBytes];
    if (label > 9)
      fail(name, "record " + std::to_string(r) + " (byte offset " +
                     std::to_string(r * kRecordBytes) + ") has label " + std::to_string(label) +
                     "; CIFAR-10 labels are 0-9");
  }
}

/// Splits n checked records into pixels and labels; each record's pixels are already in
/// (3, 32, 32) order.
void unpack_records(const std::uint8_t* records,  // (n, 3073)
                    std::int64_t n,
                    std::uint8_t* images,    // (n, 3, 32, 32)
                    std::int32_t* labels) {  // (n)
#pragma omp parallel for schedule(static) if (n > 256)
  for (std::int64_t r = 0; r < n; ++r) {
    const std::uint8_t* rec = records + r * kRecordBytes;
    labels[r] = rec[0];
    std::memcpy(images + r * kPixelBytes, rec + 1, kPixelBytes);
  }
}

/// Reads the whole of the open `path` into `out` with one read loop; `expected` is its size at
/// open.
void read_whole_file(const FileDescriptor& fd, const std::string& path, std::uint64_t expected,
                     std::vector<std::uint8_t>& out) {
  out.resize(expected);
  std::uint64_t got = 0;
  while (got < expected) {
    const ssize_t r = ::read(fd.get(), out.data() + got,
                             std::min<std::uint64_t>(expected - got, std::uint64_t{1} << 30));
    if (r < 0) {
      if (errno == EINTR) continue;
      fail(path, "read error: " + errno_text(errno));
    }
    if (r == 0) fail(path, "file shrank while being read");
    got += static_cast<std::uint64_t>(r);
  }
}

/// Whether `path` names something (a dangling link names nothing); IoError when that cannot be
/// told.
bool present(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) return true;
  if (errno == ENOENT) return false;
  fail(path, "cannot stat: " + errno_text(errno));
}

/// The class names of batches.meta.txt in `dir` when it holds exactly 10 non-empty lines. A
/// batches.meta.txt that is not a small regular file (a FIFO, a device, a folder) is an IoError.
std::vector<std::string> meta_class_names(const std::string& dir) {
  const std::string path = (fs::path(dir) / "batches.meta.txt").string();
  if (!present(path)) return cifar10_class_names();
  const std::string text = read_text_file(path, kMaxMetaFileBytes);
  std::vector<std::string> names;
  std::size_t begin = 0;
  while (begin < text.size() && names.size() <= 10) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(begin, end - begin);
    begin = end + 1;
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos) continue;
    const auto last = line.find_last_not_of(" \t\r");
    names.push_back(line.substr(first, last - first + 1));
  }
  return names.size() == 10 ? names : cifar10_class_names();
}

}  // namespace

std::vector<std::string> cifar10_class_names() {
  return {"airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"};
}

ImageDataset parse_cifar10_records(std::span<const std::uint8_t> bytes, const std::string& name) {
  check_record_bytes(name, bytes.size());
  const auto n = static_cast<std::int64_t>(bytes.size() / kRecordBytes);
  check_labels(name, bytes.data(), n);
  ImageDataset ds;
  ds.images = Tensor::empty({n, 3, 32, 32}, DType::u8);
  ds.labels = Tensor::empty({n}, DType::i32);
  unpack_records(bytes.data(), n, ds.images.data<std::uint8_t>(), ds.labels.data<std::int32_t>());
  ds.num_classes = 10;
  ds.class_names = cifar10_class_names();
  ds.source = name;
  return ds;
}

ImageDataset load_cifar10(const std::string& dir, const std::string& split) {
  EPOCH_CHECK(split == "train" || split == "test", "load_cifar10: split must be \"train\" or ",
              "\"test\", got \"", split, "\"");
  std::vector<std::string> candidates;
  if (split == "train") {
    for (int k = 1; k <= kMaxTrainFiles; ++k)
      candidates.push_back("data_batch_" + std::to_string(k) + ".bin");
  } else {
    candidates.push_back("test_batch.bin");
  }
  // Every file opened and its size checked first, before anything large is allocated; each
  // must be a regular file (a FIFO or device such as /dev/zero is refused at once, unread).
  std::vector<std::string> files;
  std::vector<FileDescriptor> fds;
  std::vector<std::uint64_t> sizes;
  for (const std::string& name : candidates) {
    const std::string path = (fs::path(dir) / name).string();
    if (!present(path)) continue;
    std::uint64_t size = 0;
    fds.push_back(open_regular_file(path, kMaxBatchFileBytes, &size));
    check_record_bytes(path, size);
    files.push_back(path);
    sizes.push_back(size);
  }
  if (files.empty()) {
    std::string looked;
    for (const std::string& name : candidates) looked += (looked.empty() ? "" : ", ") + name;
    std::error_code ec;
    fail(dir, fs::is_directory(dir, ec)
                  ? "no CIFAR-10 " + split + " files (looked for " + looked + ")"
                  : "no such directory (looked for CIFAR-10 " + split + " files " + looked + ")");
  }
  std::int64_t total = 0;
  for (std::uint64_t s : sizes) total += static_cast<std::int64_t>(s) / kRecordBytes;

  ImageDataset ds;
  ds.images = Tensor::empty({total, 3, 32, 32}, DType::u8);
  ds.labels = Tensor::empty({total}, DType::i32);
  std::uint8_t* images = ds.images.data<std::uint8_t>();
  std::int32_t* labels = ds.labels.data<std::int32_t>();
  std::vector<std::uint8_t> buffer;
  std::int64_t at = 0;
  for (std::size_t f = 0; f < files.size(); ++f) {
    read_whole_file(fds[f], files[f], sizes[f], buffer);
    const auto n = static_cast<std::int64_t>(sizes[f]) / kRecordBytes;
    check_labels(files[f], buffer.data(), n);
    unpack_records(buffer.data(), n, images + at * kPixelBytes, labels + at);
    at += n;
  }
  ds.num_classes = 10;
  ds.class_names = meta_class_names(dir);
  ds.source = dir;
  return ds;
}

void write_cifar10(const std::string& dir, const std::string& split, const ImageDataset& dataset,
                   int train_files) {
  EPOCH_CHECK(split == "train" || split == "test", "write_cifar10: split must be \"train\" or ",
              "\"test\", got \"", split, "\"");
  EPOCH_CHECK(train_files >= 1 && train_files <= kMaxTrainFiles,
              "write_cifar10: train_files must be 1-5, got ", train_files);
  const Tensor& images = dataset.images;
  const Tensor& labels = dataset.labels;
  EPOCH_CHECK(images.defined() && images.ndim() == 4 && images.size(1) == 3 &&
                  images.size(2) == 32 && images.size(3) == 32 && images.dtype() == DType::u8,
              "write_cifar10: images must be (N, 3, 32, 32) u8, got ",
              images.defined() ? shape_str(images.shape()) : std::string("none"));
  EPOCH_CHECK(images.device().is_cpu() && images.is_contiguous(),
              "write_cifar10: images must be contiguous on the CPU");
  const std::int64_t n = images.size(0);
  EPOCH_CHECK(n > 0, "write_cifar10: the dataset has no images");
  EPOCH_CHECK(labels.defined() && labels.ndim() == 1 && labels.size(0) == n &&
                  labels.dtype() == DType::i32 && labels.device().is_cpu() &&
                  labels.is_contiguous(),
              "write_cifar10: labels must be (", n, ") i32 on the CPU");
  const std::int32_t* label_data = labels.data<std::int32_t>();
  for (std::int64_t i = 0; i < n; ++i)
    EPOCH_CHECK(label_data[i] >= 0 && label_data[i] <= 9, "write_cifar10: label ", label_data[i],
                " of image ", i, " is outside 0-9");
  std::vector<std::string> names =
      dataset.class_names.empty() ? cifar10_class_names() : dataset.class_names;
  EPOCH_CHECK(names.size() == 10, "write_cifar10: 10 class names wanted, got ", names.size());
  for (const std::string& name : names)
    EPOCH_CHECK(!name.empty() && name.find_first_of("\r\n") == std::string::npos &&
                    name.find_first_not_of(" \t") != std::string::npos,
                "write_cifar10: class names must be non-blank single lines");

  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) fail(dir, "cannot create the directory: " + ec.message());

  const int files = split == "test" ? 1 : static_cast<int>(std::min<std::int64_t>(train_files, n));
  const std::uint8_t* pixels = images.data<std::uint8_t>();
  std::vector<std::uint8_t> buffer;
  for (int f = 0; f < files; ++f) {
    const std::int64_t begin = n * f / files, end = n * (f + 1) / files;
    buffer.resize(static_cast<std::size_t>((end - begin) * kRecordBytes));
    for (std::int64_t i = begin; i < end; ++i) {
      std::uint8_t* rec = buffer.data() + (i - begin) * kRecordBytes;
      rec[0] = static_cast<std::uint8_t>(label_data[i]);
      std::memcpy(rec + 1, pixels + i * kPixelBytes, kPixelBytes);
    }
    const std::string name =
        split == "test" ? "test_batch.bin" : "data_batch_" + std::to_string(f + 1) + ".bin";
    write_file_atomic((fs::path(dir) / name).string(), buffer, /*durable=*/true);
  }
  if (split == "train") {
    for (int k = files + 1; k <= kMaxTrainFiles; ++k) {
      const fs::path stale = fs::path(dir) / ("data_batch_" + std::to_string(k) + ".bin");
      fs::remove(stale, ec);
      if (ec) fail(stale.string(), "cannot remove this batch of an older dataset: " + ec.message());
    }
  }
  std::string meta;
  for (const std::string& name : names) meta += name + "\n";
  write_file_atomic((fs::path(dir) / "batches.meta.txt").string(),
                    std::span(reinterpret_cast<const std::uint8_t*>(meta.data()), meta.size()),
                    /*durable=*/true);
}

}  // namespace epoch::data
