// In-memory image datasets (MNIST-format files, procedurally generated images), the
// preprocessing a model was trained with, a batch, and the per-epoch sample order.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "epoch/tensor/tensor.h"

namespace epoch::data {

/// A labelled image set held in memory as raw pixels.
struct ImageDataset {
  Tensor images;  // (N, C, H, W) u8, CPU, contiguous
  Tensor labels;  // (N) i32, CPU, each in [0, num_classes)
  std::int64_t num_classes = 0;
  std::vector<std::string> class_names;  // num_classes entries
  std::string source;                    // where it came from (a path, or "synthetic(...)")

  std::int64_t size() const { return images.defined() ? images.size(0) : 0; }
  std::int64_t channels() const { return images.size(1); }
  std::int64_t height() const { return images.size(2); }
  std::int64_t width() const { return images.size(3); }
};

/// Loads split "train" (train-images-idx3-ubyte, train-labels-idx1-ubyte) or "test"
/// (t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte) from `dir`, each raw or with ".gz".
/// class_names empty means the digits "0".."9".
/// ensures: images (N, 1, H, W) u8, labels (N) i32 in [0, 10), num_classes 10.
/// Throws InvalidArgument for another split; IoError when a file is missing (listing the names
/// looked for), malformed, when the image and label counts differ, or for a label >= 10.
ImageDataset load_mnist_format(const std::string& dir, const std::string& split,
                               std::vector<std::string> class_names = {});

/// The ten Fashion-MNIST class names, in label order ("T-shirt/top", ..., "Ankle boot").
std::vector<std::string> fashion_mnist_class_names();

/// The folder holding Fashion-MNIST. When $EPOCH_DATA_DIR is set it wins: its fashion-mnist/
/// subfolder if that exists, else the folder itself (loading then reports any missing file).
/// Otherwise the folder Debian's dataset-fashion-mnist package installs
/// (/usr/share/datasets/fashion-mnist) when it holds the training images, else "".
std::string default_fashion_mnist_dir();

/// Images of `num_classes` learnable classes (class-dependent oriented stripes, a blob and a
/// tint, plus noise); sample i is a pure function of (seed, i) and has label i % num_classes.
/// requires: n >= 0, channels >= 1, height, width >= 4, 2 <= num_classes <= 65536.
ImageDataset make_synthetic_dataset(std::int64_t n, std::int64_t channels, std::int64_t height,
                                    std::int64_t width, std::int64_t num_classes,
                                    std::uint64_t seed);

/// How evaluation and prediction fit an image of another size to the model's: stretch the whole
/// image; take the central window of the model's size (TensorFlow's crop-or-pad, stretching a
/// smaller image); or resize_center_crop, torchvision's ImageNet evaluation (Resize(256) then
/// CenterCrop(224)): scale the image, aspect kept, so that the model's size is
/// kResizeCropFraction of it, then take the central window.
enum class Resize { stretch, center_crop, resize_center_crop };
/// The share of the resized image the central crop keeps, per side: 224 / 256.
inline constexpr double kResizeCropFraction = 0.875;
const char* resize_name(Resize r);
/// The mode named `name` (ConfigError naming the valid ones for another).
Resize parse_resize(const std::string& name);

/// What turns an image into a model's f32 input: resize to (channels, height, width) (an image
/// file of another size: see Resize), then
/// v = u8 * rescale; with standardize, v = (v - mean(v)) / max(stddev(v), 1/sqrt(C*H*W)) over
/// the sample (TensorFlow's per-image standardization); then x = (v - mean[c]) / std[c].
/// Stored in checkpoints, so prediction applies exactly what training used.
struct Preprocessing {
  float rescale = 1.0f / 255.0f;
  std::vector<float> mean;  // per channel; empty = no mean subtraction
  std::vector<float> std;   // per channel; empty = no division
  std::int64_t channels = 0;
  std::int64_t height = 0;
  std::int64_t width = 0;
  Resize resize = Resize::stretch;
  bool standardize = false;  // per-image standardization

  /// Throws InvalidArgument unless the sizes are positive, mean/std are empty or have one
  /// entry per channel, every std is finite and non-zero and rescale is finite.
  void validate() const;
  /// {"rescale":...,"mean":[...],"std":[...],"channels":C,"height":H,"width":W,
  /// "resize":"stretch","standardize":false}; floats round-trip exactly through from_json.
  std::string to_json() const;
  /// Parses to_json's output (resize and standardize may be absent: older checkpoints); throws
  /// ConfigError for malformed JSON, missing or mistyped fields, or values validate() rejects.
  static Preprocessing from_json(const std::string& text);
  /// Preprocessing for a dataset's image size: rescale only, or, with normalize, also the
  /// per-channel mean and std of the rescaled pixels (exact integer sums; thread-independent).
  static Preprocessing for_dataset(const ImageDataset& dataset, bool normalize);

  bool operator==(const Preprocessing&) const = default;
};

/// Applies `p` to one sample: src (C, H, W) u8 -> dst (C, H, W) f32. The one place the
/// preprocessing arithmetic lives.
void preprocess_sample(const Preprocessing& p, const std::uint8_t* src, float* dst);

/// The steps of Preprocessing after the rescale, in place on one rescaled sample x (C, H, W)
/// f32: per-image standardization (when on), then mean/std. preprocess_sample and the
/// augmenting transform both end with it.
void finish_sample(const Preprocessing& p, float* x);

/// A batch of preprocessed images and their labels.
struct Batch {
  Tensor images;  // (B, C, H, W) f32
  Tensor labels;  // (B) i32
};

/// The order of samples 0..n-1 in epoch `epoch`: the identity without shuffle, else a
/// Fisher-Yates shuffle driven by RandomStream(seed, key from epoch) — a pure function of
/// (n, seed, epoch).
std::vector<std::int64_t> epoch_order(std::int64_t n, std::uint64_t seed, std::int64_t epoch,
                                      bool shuffle);

/// One rank's slice of a global batch of `count` samples split over `world` ranks: consecutive
/// slices, sizes as even as possible (the first count % world ranks take one more).
struct ShardSlice {
  std::int64_t offset = 0, count = 0;
};
ShardSlice shard_slice(std::int64_t count, int rank, int world);

/// Global batches of `batch` x `world` samples in an epoch of n (data-parallel training): a
/// short last one counts only if it holds at least `world` samples (every rank gets one).
std::int64_t global_batches(std::int64_t n, std::int64_t batch, int world);

/// One rank's share of an epoch's order for data-parallel training, in the manner of PyTorch's
/// DistributedSampler and, like the order, a function of seed and epoch only: the order is
/// cut into global batches of `batch` x `world` samples, and rank r takes slice r
/// (shard_slice) of each, so `world` ranks of batch B see, step by step, what one process of
/// batch world x B sees. The shards are disjoint and cover the global batches.
std::vector<std::int64_t> shard_order(const std::vector<std::int64_t>& order, std::int64_t batch,
                                      int rank, int world);

}  // namespace epoch::data
