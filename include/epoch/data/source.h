// Where training samples come from: a labelled set the loader fetches one sample at a time,
// either held in memory (IDX, CIFAR-10, generated) or a folder of image files decoded on demand
// (Keras flow_from_directory semantics), with an optional cache of decoded images.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "epoch/data/augment.h"
#include "epoch/data/dataset.h"
#include "epoch/data/image.h"
#include "epoch/data/image_codec.h"

namespace epoch::data {

/// A labelled set of images fetched by index. Implementations are safe to fetch from many
/// threads at once.
class SampleSource {
 public:
  virtual ~SampleSource() = default;
  virtual std::int64_t size() const = 0;
  virtual std::int32_t label(std::int64_t i) const = 0;
  virtual std::int64_t num_classes() const = 0;
  virtual const std::vector<std::string>& class_names() const = 0;
  /// Where the set came from (a folder, a file set, "synthetic(...)"), for messages.
  virtual std::string description() const = 0;
  /// What names sample i in a warning: its file path, or "<description>#i".
  virtual std::string sample_name(std::int64_t i) const = 0;
  /// Sample i, decoded (for files: at the smallest DCT scale that still covers `hint`'s size).
  /// The view points into `scratch` or into memory the source owns, and stays valid while both
  /// are untouched. Throws IoError naming the file for an unreadable or corrupt image.
  virtual ImageView fetch(std::int64_t i, const DecodeOptions& hint, Image& scratch) const = 0;
  /// The whole set as (N, C, H, W) u8 when it is held in memory that way, else nullptr.
  virtual const ImageDataset* in_memory() const { return nullptr; }
};

/// An ImageDataset as a source (shares the dataset's tensors).
class MemorySource final : public SampleSource {
 public:
  explicit MemorySource(ImageDataset dataset);
  std::int64_t size() const override { return dataset_.size(); }
  std::int32_t label(std::int64_t i) const override { return labels_[i]; }
  std::int64_t num_classes() const override { return dataset_.num_classes; }
  const std::vector<std::string>& class_names() const override { return dataset_.class_names; }
  std::string description() const override { return dataset_.source; }
  std::string sample_name(std::int64_t i) const override;
  ImageView fetch(std::int64_t i, const DecodeOptions& hint, Image& scratch) const override;
  const ImageDataset* in_memory() const override { return &dataset_; }

 private:
  ImageDataset dataset_;
  const std::int32_t* labels_ = nullptr;
};

/// The files of an image folder: one subfolder per class (classes sorted by name, as Keras),
/// the .jpg/.jpeg/.png files (any case) in each, sorted by name; other files are ignored.
struct ImageFolder {
  std::string root;
  std::vector<std::string> class_names;
  std::vector<std::string> files;    // paths
  std::vector<std::int32_t> labels;  // one per file
};

/// Scans `dir`. With `class_names` given (a validation folder must use the training classes),
/// exactly those subfolders are read and a missing one is an error. Subfolders of a class
/// count as that class. Symbolic links are followed, but each real folder and each real file
/// (by device and inode) is read once in the whole scan, in sorted order: a link loop or a
/// second link to the same images adds nothing. Throws IoError when dir is missing or cannot
/// be listed, ConfigError when it has no class subfolders or no image files, or (class names
/// not given) when a class folder holds no images.
ImageFolder scan_image_folder(const std::string& dir,
                              const std::vector<std::string>& class_names = {});

/// Keras validation_split: in each class the first floor(fraction x count) files (in sorted
/// order) are validation, the rest training. Returns {training, validation}. ConfigError unless
/// 0 < fraction < 1 and both parts are non-empty.
std::pair<ImageFolder, ImageFolder> split_image_folder(const ImageFolder& folder, double fraction);

/// Images decoded from files on demand. Decoded images are kept while their total size stays
/// within `cache_bytes` (0: no cache); a cached image is exactly what decoding gives (same
/// DCT scale), so results never depend on the cache. The cache serves one decode request (the
/// first DecodeOptions fetch() is given); fetches with any other options decode afresh.
class FolderSource final : public SampleSource {
 public:
  FolderSource(ImageFolder folder, std::int64_t cache_bytes);
  ~FolderSource() override;
  std::int64_t size() const override { return static_cast<std::int64_t>(folder_.files.size()); }
  std::int32_t label(std::int64_t i) const override {
    return folder_.labels[static_cast<std::size_t>(i)];
  }
  std::int64_t num_classes() const override {
    return static_cast<std::int64_t>(folder_.class_names.size());
  }
  const std::vector<std::string>& class_names() const override { return folder_.class_names; }
  std::string description() const override { return folder_.root; }
  std::string sample_name(std::int64_t i) const override {
    return folder_.files[static_cast<std::size_t>(i)];
  }
  ImageView fetch(std::int64_t i, const DecodeOptions& hint, Image& scratch) const override;

  const ImageFolder& folder() const { return folder_; }
  std::int64_t cached_bytes() const { return cached_bytes_.load(); }
  std::int64_t cached_images() const { return cached_images_.load(); }

 private:
  ImageFolder folder_;
  std::int64_t cache_bytes_;
  mutable std::atomic<std::int64_t> cached_bytes_{0};
  mutable std::atomic<std::int64_t> cached_images_{0};
  // Slot i holds sample i's decoded image once cached (published with release, never replaced).
  std::unique_ptr<std::atomic<const Image*>[]> cache_;
  // The options the cached images were decoded with: set once, by the first fetch, as a whole
  // (two separately set fields could end up mixing two requests and match neither).
  mutable std::atomic<const DecodeOptions*> cache_options_{nullptr};
};

}  // namespace epoch::data
