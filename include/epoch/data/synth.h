// Procedurally drawn image datasets for `epoch data synth`: visually distinct, learnable classes
// (shapes, not noise) with enough variation in pose, size, colour, background and clutter that
// a model has to learn them, written as real JPEG files in the layouts the loaders read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "epoch/data/image.h"

namespace epoch::data {

/// catdog: 2 classes "cat" and "dog" (cartoon animal faces: pointed ears, whiskers and slit
///   eyes vs floppy ears, round muzzle and nose), default 500x375 like the source's photos.
/// cifar10: the 10 CIFAR-10 class names, each a distinct drawn motif, 32x32.
/// imagenet: `classes` classes (default 10) named n00000000, n00000001, ... (WordNet-id style),
///   distinct motifs over varied textured backgrounds, default 256x256 with sizes varying +-25%
///   as real photos do.
struct SynthConfig {
  std::string kind = "catdog";  // catdog | cifar10 | imagenet
  std::string out_dir;
  std::int64_t count = 1000;           // training images, spread evenly over the classes
  std::int64_t val_count = -1;         // validation images; -1: count / 5
  std::int64_t width = 0, height = 0;  // 0: the kind's default size
  std::int64_t classes = 0;            // 0: the kind's default (catdog 2, cifar10 10, imagenet 10)
  std::uint64_t seed = 0;
  int quality = 90;  // JPEG quality
  /// cifar10 only: also write the CIFAR-10 binary files (data_batch_1..5.bin, test_batch.bin,
  /// batches.meta.txt) of the same images into out_dir/cifar-10-batches-bin.
  bool cifar_binary = true;
};

/// The class names of a kind (InvalidArgument for an unknown kind or bad class count).
std::vector<std::string> synth_class_names(const std::string& kind, std::int64_t classes);

/// Draws image `index` of class `label`: a pure function of (kind, label, index, seed, size).
/// requires: label in [0, classes) (imagenet: [0, 1000)), index >= 0, width and height in
///           8-4096 (InvalidArgument otherwise).
/// ensures: an RGB image of exactly width x height.
Image draw_synth_image(const std::string& kind, std::int64_t label, std::int64_t index,
                       std::uint64_t seed, std::int64_t width, std::int64_t height);

struct SynthSummary {
  std::int64_t train_images = 0, val_images = 0, bytes = 0;  // bytes: every file written
  std::int64_t width = 0, height = 0;  // the image size (imagenet: the centre of its range)
  std::vector<std::string> class_names;
};

/// Writes out_dir/train/<class>/<class>.<i>.jpg and out_dir/validation/<class>/... (ImageNet
/// kind: <wnid>_<i>.JPEG, and ImageNet's val/ for the validation split), in parallel, each file
/// atomic. Labels cycle over the classes (i % classes). <i> numbers a class's images: training 0,
/// 1, ..., validation continuing after ceil(count / classes); image <i> of a class is
/// draw_synth_image(kind, label, i, seed, size), so the files are the same for any thread count.
/// Throws ConfigError for bad sizes or counts (count below the number of classes, sizes outside
/// 8-4096, quality outside 1-100), IoError when out_dir cannot be written; refuses (ConfigError) an
/// out_dir that already holds a train/, validation/ or val/ folder.
SynthSummary write_synth_dataset(const SynthConfig& config);

}  // namespace epoch::data
