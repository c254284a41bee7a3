// `epoch data synth`: the dispatch over the kinds (class names, sizes, one Philox stream per
// image, the lighting) and the writer of whole datasets as JPEG folders (plus CIFAR-10 binary
// files). Every image is a pure function of (kind, label, index, seed, size). The generators
// are synth_catdog.cpp, synth_cifar10.cpp and synth_imagenet.cpp, on synth_scene.cpp.
#include "epoch/data/synth.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <limits>
#include <mutex>

#include "data/synth_draw.h"
#include "data/synth_generators.h"
#include "data/synth_scene.h"
#include "epoch/data/cifar10.h"
#include "epoch/data/image_codec.h"
#include "epoch/tensor/error.h"

namespace epoch::data {
namespace {

namespace fs = std::filesystem;
using draw::Canvas;

constexpr std::int64_t kMinSize = 8, kMaxSize = 4096;  // a 4096^2 canvas is 200 MB of floats
constexpr std::int64_t kMaxImagenetClasses = 1000;

/// Canvas pixels per image pixel: small images are drawn at up to 4x and box-filtered down.
std::int64_t supersample(std::int64_t width, std::int64_t height) {
  const std::int64_t m = std::min(width, height);
  return std::clamp<std::int64_t>((128 + m - 1) / m, 1, 4);
}

int kind_classes(const std::string& kind, std::int64_t classes) {
  if (kind == "catdog") return 2;
  if (kind == "cifar10") return 10;
  return static_cast<int>(classes == 0 ? 10 : classes);
}

std::string valid_kinds() { return "catdog, cifar10, imagenet"; }

}  // namespace

std::vector<std::string> synth_class_names(const std::string& kind, std::int64_t classes) {
  if (kind == "catdog") {
    EPOCH_CHECK(classes == 0 || classes == 2, "synth: kind catdog has 2 classes, not ", classes);
    return {"cat", "dog"};
  }
  if (kind == "cifar10") {
    EPOCH_CHECK(classes == 0 || classes == 10, "synth: kind cifar10 has 10 classes, not ", classes);
    return cifar10_class_names();
  }
  EPOCH_CHECK(kind == "imagenet", "synth: unknown kind '", kind, "' (valid: ", valid_kinds(), ")");
  const std::int64_t n = classes == 0 ? 10 : classes;
  EPOCH_CHECK(n >= 2 && n <= kMaxImagenetClasses, "synth: kind imagenet takes 2-",
              kMaxImagenetClasses, " classes, not ", classes);
  std::vector<std::string> names;
  for (std::int64_t k = 0; k < n; ++k) {
    char wnid[24];  // "n" and up to 20 digits
    std::snprintf(wnid, sizeof wnid, "n%08lld", static_cast<long long>(k));
    names.emplace_back(wnid);
  }
  return names;
}

Image draw_synth_image(const std::string& kind, std::int64_t label, std::int64_t index,
                       std::uint64_t seed, std::int64_t width, std::int64_t height) {
  EPOCH_CHECK(kind == "catdog" || kind == "cifar10" || kind == "imagenet",
              "draw_synth_image: unknown kind '", kind, "' (valid: ", valid_kinds(), ")");
  const std::int64_t classes = kind == "imagenet" ? kMaxImagenetClasses : kind_classes(kind, 0);
  EPOCH_CHECK(label >= 0 && label < classes, "draw_synth_image: label ", label, " outside [0, ",
              classes, ") for kind ", kind);
  EPOCH_CHECK(index >= 0, "draw_synth_image: negative index ", index);
  EPOCH_CHECK(width >= kMinSize && width <= kMaxSize && height >= kMinSize && height <= kMaxSize,
              "draw_synth_image: size ", width, "x", height, " outside ", kMinSize, "-", kMaxSize);
  const std::int64_t s = supersample(width, height);
  Canvas cv(width * s, height * s);
  RandomStream rng(seed, mix64(hash_name(kind), mix64(static_cast<std::uint64_t>(label),
                                                      static_cast<std::uint64_t>(index))));
  if (kind == "catdog")
    synth::draw_catdog(cv, rng, label);
  else if (kind == "cifar10")
    synth::draw_cifar(cv, rng, label);
  else
    synth::draw_imagenet(cv, rng, label);
  return draw::finish(cv, synth::lighting(rng, s));
}

SynthSummary write_synth_dataset(const SynthConfig& config) {
  const std::string& kind = config.kind;
  if (kind != "catdog" && kind != "cifar10" && kind != "imagenet")
    EPOCH_THROW(ConfigError, "unknown synth kind '", kind, "' (valid: ", valid_kinds(), ")");
  std::vector<std::string> names;
  try {
    names = synth_class_names(kind, config.classes);
  } catch (const InvalidArgument& e) {
    const std::string what = e.what();
    EPOCH_THROW(ConfigError, what.substr(0, what.rfind(" [")));
  }
  const auto classes = static_cast<std::int64_t>(names.size());
  const std::int64_t def_w = kind == "catdog" ? 500 : kind == "cifar10" ? 32 : 256;
  const std::int64_t def_h = kind == "catdog" ? 375 : kind == "cifar10" ? 32 : 256;
  if ((config.width == 0) != (config.height == 0))
    EPOCH_THROW(ConfigError, "synth: give both width and height, or neither (got ", config.width,
                "x", config.height, ")");
  const std::int64_t width = config.width == 0 ? def_w : config.width;
  const std::int64_t height = config.height == 0 ? def_h : config.height;
  // imagenet sizes vary by up to 25% either way, and must stay in range.
  const std::int64_t lo = kind == "imagenet" ? (kMinSize * 4 + 2) / 3 : kMinSize;
  const std::int64_t hi = kind == "imagenet" ? kMaxSize * 4 / 5 : kMaxSize;
  if (width < lo || height < lo || width > hi || height > hi)
    EPOCH_THROW(ConfigError, "synth: image size ", width, "x", height, " outside ", lo, "-", hi,
                " pixels");
  if (config.count < classes)
    EPOCH_THROW(ConfigError, "synth: count ", config.count, " is below the number of classes (",
                classes, "): every class needs a training image");
  if (config.val_count < -1)
    EPOCH_THROW(ConfigError, "synth: validation count ", config.val_count, " is negative");
  if (config.quality < 1 || config.quality > 100)
    EPOCH_THROW(ConfigError, "synth: JPEG quality ", config.quality, " outside 1-100");
  if (config.out_dir.empty()) EPOCH_THROW(ConfigError, "synth: no output directory given");
  const bool binary = kind == "cifar10" && config.cifar_binary;
  if (binary && (width != 32 || height != 32))
    EPOCH_THROW(ConfigError, "synth: CIFAR-10 binary files hold 32x32 images, not ", width, "x",
                height, " (turn the binary files off for other sizes)");
  const std::int64_t train_n = config.count;
  const std::int64_t val_n = config.val_count < 0 ? config.count / 5 : config.val_count;
  const std::int64_t total = train_n + val_n;
  const fs::path out(config.out_dir);
  std::error_code ec;
  // ImageNet's own layout names its validation split val/.
  const char* const val_dir = kind == "imagenet" ? "val" : "validation";
  for (const char* sub : {"train", "validation", "val"})
    if (fs::exists(out / sub, ec))
      EPOCH_THROW(ConfigError, (out / sub).string(), " already exists; choose a new output ",
                  "directory or remove it");
  for (const char* sub : {"train", val_dir})
    for (const std::string& name : names) {
      fs::create_directories(out / sub / name, ec);
      if (ec) EPOCH_THROW(IoError, (out / sub / name).string(), ": cannot create: ", ec.message());
    }

  const std::int64_t train_per_class = (train_n + classes - 1) / classes;
  ImageDataset train_set, test_set;
  if (binary) {
    train_set.images = Tensor::empty({train_n, 3, 32, 32}, DType::u8);
    train_set.labels = Tensor::empty({train_n}, DType::i32);
    test_set.images = Tensor::empty({val_n, 3, 32, 32}, DType::u8);
    test_set.labels = Tensor::empty({val_n}, DType::i32);
    train_set.class_names = test_set.class_names = names;
    train_set.num_classes = test_set.num_classes = 10;
  }
  std::vector<std::int64_t> bytes(static_cast<std::size_t>(total), 0);
  std::atomic<bool> failed{false};
  std::mutex error_mutex;
  std::int64_t error_at = std::numeric_limits<std::int64_t>::max();
  std::exception_ptr error;
#pragma omp parallel for schedule(dynamic, 2)
  for (std::int64_t i = 0; i < total; ++i) {
    if (failed.load(std::memory_order_relaxed)) continue;
    try {
      const bool train = i < train_n;
      const std::int64_t j = train ? i : i - train_n;
      const std::int64_t label = j % classes;
      const std::int64_t number = (train ? 0 : train_per_class) + j / classes;
      std::int64_t w = width, h = height;
      if (kind == "imagenet") {  // photo-like sizes, +-25% in each dimension
        RandomStream size_rng(config.seed, mix64(hash_name("imagenet-size"),
                                                 mix64(static_cast<std::uint64_t>(label),
                                                       static_cast<std::uint64_t>(number))));
        w = std::lround(static_cast<float>(width) * size_rng.uniform(0.75f, 1.25f));
        h = std::lround(static_cast<float>(height) * size_rng.uniform(0.75f, 1.25f));
      }
      const Image image = draw_synth_image(kind, label, number, config.seed, w, h);
      const std::string& name = names[static_cast<std::size_t>(label)];
      const std::string file = kind == "imagenet" ? name + "_" + std::to_string(number) + ".JPEG"
                                                  : name + "." + std::to_string(number) + ".jpg";
      const fs::path path = out / (train ? "train" : val_dir) / name / file;
      write_jpeg(path.string(), image, config.quality);
      bytes[static_cast<std::size_t>(i)] = static_cast<std::int64_t>(fs::file_size(path));
      if (binary) {
        ImageDataset& set = train ? train_set : test_set;
        std::uint8_t* dst = set.images.data<std::uint8_t>() + j * 3 * 32 * 32;  // (3, 32, 32)
        for (std::int64_t c = 0; c < 3; ++c)
          for (std::int64_t p = 0; p < 32 * 32; ++p)
            dst[c * 1024 + p] = image.pixels[static_cast<std::size_t>(p * 3 + c)];
        set.labels.data<std::int32_t>()[j] = static_cast<std::int32_t>(label);
      }
    } catch (...) {
      // The error of the lowest index wins, so the message does not depend on scheduling.
      std::lock_guard<std::mutex> lock(error_mutex);
      failed = true;
      if (i < error_at) {
        error_at = i;
        error = std::current_exception();
      }
    }
  }
  if (error) std::rethrow_exception(error);

  SynthSummary summary;
  summary.train_images = train_n;
  summary.val_images = val_n;
  summary.class_names = names;
  summary.width = width;
  summary.height = height;
  for (std::int64_t b : bytes) summary.bytes += b;
  if (binary) {
    const fs::path bin = out / "cifar-10-batches-bin";
    write_cifar10(bin.string(), "train", train_set);
    if (val_n > 0) write_cifar10(bin.string(), "test", test_set);
    for (const auto& entry : fs::directory_iterator(bin))
      if (entry.is_regular_file()) summary.bytes += static_cast<std::int64_t>(entry.file_size());
  }
  return summary;
}

}  // namespace epoch::data
