// Sample sources: in-memory datasets, and image folders scanned with Keras's
// flow_from_directory rules, decoded on demand with an optional bounded cache.
#include "epoch/data/source.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "epoch/tensor/error.h"
#include "epoch/tensor/text.h"

namespace epoch::data {
namespace fs = std::filesystem;

MemorySource::MemorySource(ImageDataset dataset) : dataset_(std::move(dataset)) {
  const Tensor& images = dataset_.images;
  EPOCH_CHECK(images.defined() && images.dtype() == DType::u8 && images.ndim() == 4 &&
                  images.device().is_cpu() && images.is_contiguous(),
              "MemorySource: images must be contiguous (N, C, H, W) u8 on the CPU");
  EPOCH_CHECK(dataset_.labels.defined() && dataset_.labels.dtype() == DType::i32 &&
                  dataset_.labels.ndim() == 1 && dataset_.labels.is_contiguous() &&
                  dataset_.labels.size(0) == images.size(0),
              "MemorySource: labels must be (N) i32 with N = ", images.size(0));
  EPOCH_CHECK(images.size(1) >= 1, "MemorySource: images without channels");
  labels_ = dataset_.labels.data<std::int32_t>();
}

std::string MemorySource::sample_name(std::int64_t i) const {
  return dataset_.source + "#" + std::to_string(i);
}

ImageView MemorySource::fetch(std::int64_t i, const DecodeOptions&, Image&) const {
  const std::int64_t c = dataset_.channels(), h = dataset_.height(), w = dataset_.width();
  return ImageView::chw(dataset_.images.data<std::uint8_t>() + i * c * h * w, c, h, w);
}

namespace {

bool is_image_file(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png";
}

bool hidden(const fs::path& p) {
  const std::string name = p.filename().string();
  return !name.empty() && name[0] == '.';
}

/// The real folders and files a scan has read, by (device, inode).
using SeenSet = std::set<std::pair<std::uint64_t, std::uint64_t>>;

/// Marks the folder or file at `p` (links followed) seen; false when it was seen already or
/// cannot be stat'ed (a dangling link).
bool first_visit(const fs::path& p, SeenSet& seen) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return false;
  return seen.insert({static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)})
      .second;
}

/// Image files under `dir` (itself already marked seen), depth first in sorted order, each
/// real folder and file once.
void collect_image_files(const fs::path& dir, SeenSet& seen, std::vector<std::string>& files) {
  std::error_code ec;
  std::vector<fs::path> entries;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (!hidden(it->path())) entries.push_back(it->path());
  if (ec) EPOCH_THROW(IoError, dir.string(), ": cannot list: ", ec.message());
  std::sort(entries.begin(), entries.end());
  for (const fs::path& p : entries) {
    if (fs::is_directory(p, ec)) {
      if (first_visit(p, seen)) collect_image_files(p, seen, files);
    } else if (is_image_file(p) && fs::is_regular_file(p, ec) && first_visit(p, seen)) {
      files.push_back(p.string());
    }
  }
}

}  // namespace

ImageFolder scan_image_folder(const std::string& dir, const std::vector<std::string>& class_names) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) EPOCH_THROW(IoError, dir, ": no such folder");
  ImageFolder folder;
  folder.root = dir;
  if (class_names.empty()) {
    for (const fs::directory_entry& e : fs::directory_iterator(dir, ec))
      if (e.is_directory() && !hidden(e.path()))
        folder.class_names.push_back(e.path().filename().string());
    if (ec) EPOCH_THROW(IoError, dir, ": cannot list: ", ec.message());
    std::sort(folder.class_names.begin(), folder.class_names.end());
    for (const std::string& name : folder.class_names)  // (class names go into JSON files)
      if (!valid_utf8(name))
        EPOCH_THROW(ConfigError, dir, ": the class folder '", printable(name),
                    "' has a name that is not valid UTF-8; rename it (class names are stored "
                    "in config.json and checkpoints)");
    if (folder.class_names.empty())
      EPOCH_THROW(ConfigError, dir,
                  ": no class subfolders (an image folder holds one subfolder of images per "
                  "class)");
  } else {
    folder.class_names = class_names;
    for (const std::string& name : class_names)
      if (!fs::is_directory(fs::path(dir) / name, ec))
        EPOCH_THROW(ConfigError, dir, ": has no subfolder for the training class \"", name, "\"");
  }
  // The root and every class folder are marked first: a link inside one class to the root
  // or to another class adds nothing to it.
  SeenSet seen;
  first_visit(dir, seen);
  for (const std::string& name : folder.class_names) first_visit(fs::path(dir) / name, seen);
  for (std::size_t c = 0; c < folder.class_names.size(); ++c) {
    std::vector<std::string> files;
    collect_image_files(fs::path(dir) / folder.class_names[c], seen, files);
    std::sort(files.begin(), files.end());
    if (files.empty() && class_names.empty() && folder.class_names.size() > 1)
      EPOCH_THROW(ConfigError, dir, ": class folder '", folder.class_names[c],
                  "' holds no .jpg, .jpeg or .png files (every class needs images)");
    for (std::string& f : files) {
      folder.files.push_back(std::move(f));
      folder.labels.push_back(static_cast<std::int32_t>(c));
    }
  }
  if (folder.files.empty())
    EPOCH_THROW(ConfigError, dir, ": no .jpg, .jpeg or .png files in its ",
                folder.class_names.size(), " class subfolders");
  return folder;
}

std::pair<ImageFolder, ImageFolder> split_image_folder(const ImageFolder& folder, double fraction) {
  if (!(fraction > 0.0 && fraction < 1.0))
    EPOCH_THROW(ConfigError, "validation split ", fraction, " must be between 0 and 1");
  ImageFolder train{folder.root, folder.class_names, {}, {}};
  ImageFolder val{folder.root + " (validation split)", folder.class_names, {}, {}};
  // Files are grouped by class, in sorted order within a class.
  std::size_t begin = 0;
  while (begin < folder.files.size()) {
    std::size_t end = begin;
    while (end < folder.files.size() && folder.labels[end] == folder.labels[begin]) ++end;
    const auto n_val =
        static_cast<std::size_t>(std::floor(fraction * static_cast<double>(end - begin)));
    for (std::size_t i = begin; i < end; ++i) {
      ImageFolder& to = i - begin < n_val ? val : train;
      to.files.push_back(folder.files[i]);
      to.labels.push_back(folder.labels[i]);
    }
    begin = end;
  }
  if (train.files.empty() || val.files.empty())
    EPOCH_THROW(ConfigError, folder.root, ": a validation split of ", fraction, " of ",
                folder.files.size(), " images leaves ", train.files.size(), " for training and ",
                val.files.size(), " for validation");
  return {std::move(train), std::move(val)};
}

FolderSource::FolderSource(ImageFolder folder, std::int64_t cache_bytes)
    : folder_(std::move(folder)), cache_bytes_(std::max<std::int64_t>(cache_bytes, 0)) {
  EPOCH_CHECK(folder_.files.size() == folder_.labels.size(), "FolderSource: ", folder_.files.size(),
              " files but ", folder_.labels.size(), " labels");
  if (cache_bytes_ > 0) {
    cache_ = std::make_unique<std::atomic<const Image*>[]>(folder_.files.size());
    for (std::size_t i = 0; i < folder_.files.size(); ++i) cache_[i].store(nullptr);
  }
}

FolderSource::~FolderSource() {
  delete cache_options_.load();
  if (!cache_) return;
  for (std::size_t i = 0; i < folder_.files.size(); ++i) delete cache_[i].load();
}

// Thread safety: a cache slot and cache_options_ go from null to an object once (compare-
// exchange, release on success) and are read with acquire, so a reader sees the object whole.
// The byte budget is reserved (fetch_add) before anything is allocated and given back when the
// insert is refused or lost; while a reservation is in flight the count may exceed the budget
// and refuse another insert, which only changes what is cached, never what fetch returns.
ImageView FolderSource::fetch(std::int64_t i, const DecodeOptions& hint, Image& scratch) const {
  const auto slot = static_cast<std::size_t>(i);
  // The cache holds images decoded with one set of options (the first asked for); others
  // bypass it.
  bool cacheable = false;
  if (cache_) {
    const DecodeOptions* options = cache_options_.load(std::memory_order_acquire);
    if (options == nullptr) {
      auto* mine = new DecodeOptions(hint);
      if (cache_options_.compare_exchange_strong(options, mine, std::memory_order_acq_rel,
                                                 std::memory_order_acquire)) {
        options = mine;
      } else {
        delete mine;  // another thread set them first; `options` now holds theirs
      }
    }
    cacheable = *options == hint;
    if (cacheable) {
      if (const Image* hit = cache_[slot].load(std::memory_order_acquire))
        return ImageView::of(*hit);
    }
  }
  scratch = read_image(folder_.files[slot], hint);
  if (cacheable) {
    const auto bytes = static_cast<std::int64_t>(scratch.pixels.size() + sizeof(Image));
    if (cached_bytes_.fetch_add(bytes) + bytes <= cache_bytes_) {
      auto* copy = new Image(scratch);
      const Image* none = nullptr;
      if (cache_[slot].compare_exchange_strong(none, copy, std::memory_order_acq_rel,
                                               std::memory_order_acquire)) {
        ++cached_images_;
        return ImageView::of(*copy);
      }
      delete copy;  // another thread cached it first
    }
    cached_bytes_.fetch_sub(bytes);
  }
  return ImageView::of(scratch);
}

}  // namespace epoch::data
