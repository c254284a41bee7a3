// Dataset sources: MNIST-format IDX folders (MNIST, Fashion-MNIST) and procedurally generated
// images that a small model can learn (for tests and `epoch bench`).
#include "epoch/data/dataset.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <numbers>
#include <vector>

#include "epoch/data/idx.h"
#include "epoch/tensor/random.h"

namespace epoch::data {
namespace {

namespace fs = std::filesystem;

constexpr std::int64_t kMnistClasses = 10;
constexpr std::uint64_t kSyntheticStreamTag = 0x53594e5448ull;  // "SYNTH"

/// dir/name or dir/name.gz, whichever exists (the raw file first); throws IoError listing both.
std::string find_idx_file(const std::string& dir, const std::string& name, const char* what) {
  std::error_code ec;
  for (const std::string& candidate : {name, name + ".gz"}) {
    const fs::path p = fs::path(dir) / candidate;
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  const bool dir_exists = fs::is_directory(dir, ec);
  EPOCH_THROW(IoError, dir, ": cannot find the ", what, ": looked for ", name, " and ", name, ".gz",
              dir_exists ? "" : " (the folder does not exist)");
}

}  // namespace

ImageDataset load_mnist_format(const std::string& dir, const std::string& split,
                               std::vector<std::string> class_names) {
  EPOCH_CHECK(split == "train" || split == "test", "load_mnist_format: split must be \"train\" or ",
              "\"test\", got \"", split, "\"");
  EPOCH_CHECK(class_names.empty() || static_cast<std::int64_t>(class_names.size()) == kMnistClasses,
              "load_mnist_format: ", class_names.size(), " class names for ", kMnistClasses,
              " classes");
  const std::string prefix = split == "train" ? "train" : "t10k";
  const std::string images_path =
      find_idx_file(dir, prefix + "-images-idx3-ubyte", (split + " images").c_str());
  const std::string labels_path =
      find_idx_file(dir, prefix + "-labels-idx1-ubyte", (split + " labels").c_str());

  const Tensor images = read_idx(images_path);
  if (images.ndim() != 3)
    EPOCH_THROW(IoError, images_path, ": expected image dims (N, H, W), got ",
                shape_str(images.shape()));
  const Tensor raw_labels = read_idx(labels_path);
  if (raw_labels.ndim() != 1)
    EPOCH_THROW(IoError, labels_path, ": expected label dims (N), got ",
                shape_str(raw_labels.shape()));
  const std::int64_t n = images.size(0);
  if (raw_labels.size(0) != n)
    EPOCH_THROW(IoError, dir, ": ", n, " images in ", fs::path(images_path).filename().string(),
                " but ", raw_labels.size(0), " labels in ",
                fs::path(labels_path).filename().string());

  ImageDataset ds;
  ds.images = images.view({n, 1, images.size(1), images.size(2)});
  ds.labels = Tensor::empty({n}, DType::i32);
  const std::uint8_t* src = raw_labels.data<std::uint8_t>();  // (N)
  std::int32_t* dst = ds.labels.data<std::int32_t>();         // (N)
  for (std::int64_t i = 0; i < n; ++i) {
    if (src[i] >= kMnistClasses)
      EPOCH_THROW(IoError, labels_path, ": label ", int{src[i]}, " of sample ", i,
                  " is not in [0, ", kMnistClasses, ")");
    dst[i] = src[i];
  }
  ds.num_classes = kMnistClasses;
  if (class_names.empty())
    for (std::int64_t k = 0; k < kMnistClasses; ++k) class_names.push_back(std::to_string(k));
  ds.class_names = std::move(class_names);
  ds.source = images_path;
  return ds;
}

std::vector<std::string> fashion_mnist_class_names() {
  return {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
          "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
}

std::string default_fashion_mnist_dir() {
  std::error_code ec;
  if (const char* env = std::getenv("EPOCH_DATA_DIR"); env != nullptr && *env != '\0') {
    const fs::path sub = fs::path(env) / "fashion-mnist";
    return fs::is_directory(sub, ec) ? sub.string() : std::string(env);
  }
  const fs::path debian = "/usr/share/datasets/fashion-mnist";
  for (const char* name : {"train-images-idx3-ubyte.gz", "train-images-idx3-ubyte"})
    if (fs::is_regular_file(debian / name, ec)) return debian.string();
  return "";
}

ImageDataset make_synthetic_dataset(std::int64_t n, std::int64_t channels, std::int64_t height,
                                    std::int64_t width, std::int64_t num_classes,
                                    std::uint64_t seed) {
  EPOCH_CHECK(n >= 0 && channels >= 1 && height >= 1 && width >= 1,
              "make_synthetic_dataset: ", "bad size n=", n, " (C, H, W) = (", channels, ", ",
              height, ", ", width, ")");
  EPOCH_CHECK(num_classes >= 2 && num_classes <= 65536,
              "make_synthetic_dataset: num_classes must be in [2, 65536], got ", num_classes);
  ImageDataset ds;
  ds.images = Tensor::empty({n, channels, height, width}, DType::u8);
  ds.labels = Tensor::empty({n}, DType::i32);
  std::uint8_t* images = ds.images.data<std::uint8_t>();  // (N, C, H, W)
  std::int32_t* labels = ds.labels.data<std::int32_t>();  // (N)
  const std::int64_t plane = height * width;
  const float size = static_cast<float>(std::min(height, width));
  constexpr float kTwoPi = 2.0f * std::numbers::pi_v<float>;

#pragma omp parallel
  {
    std::vector<float> pattern(static_cast<std::size_t>(plane));  // (H, W), per thread
#pragma omp for schedule(static)
    for (std::int64_t i = 0; i < n; ++i) {
      RandomStream rs(seed, mix64(kSyntheticStreamTag, static_cast<std::uint64_t>(i)));
      const std::int64_t k = i % num_classes;
      labels[i] = static_cast<std::int32_t>(k);
      const float frac = static_cast<float>(k) / static_cast<float>(num_classes);
      // Stripes: orientation by class (with a little jitter), 2-4 cycles per image.
      const float theta = std::numbers::pi_v<float> * frac + rs.uniform(-0.08f, 0.08f);
      const float freq = static_cast<float>(2 + k % 3) * kTwoPi / size;
      const float phase = rs.uniform(0.0f, kTwoPi);
      const float fx = freq * std::cos(theta), fy = freq * std::sin(theta);
      // Blob: centred on a circle at the class's angle, jittered by a pixel.
      const float bx = 0.5f * static_cast<float>(width - 1) +
                       0.28f * size * std::cos(kTwoPi * frac) + rs.uniform(-1.0f, 1.0f);
      const float by = 0.5f * static_cast<float>(height - 1) +
                       0.28f * size * std::sin(kTwoPi * frac) + rs.uniform(-1.0f, 1.0f);
      const float inv_two_sigma2 = 1.0f / (2.0f * (0.12f * size) * (0.12f * size));
      for (std::int64_t y = 0; y < height; ++y) {
        for (std::int64_t x = 0; x < width; ++x) {
          const float xf = static_cast<float>(x), yf = static_cast<float>(y);
          const float d2 = (xf - bx) * (xf - bx) + (yf - by) * (yf - by);
          pattern[static_cast<std::size_t>(y * width + x)] =
              40.0f * std::cos(fx * xf + fy * yf + phase) + 190.0f * std::exp(-d2 * inv_two_sigma2);
        }
      }
      std::uint8_t* img = images + i * channels * plane;  // (C, H, W)
      for (std::int64_t c = 0; c < channels; ++c) {
        const float tint = 0.6f + 0.4f * std::cos(kTwoPi * frac + 2.1f * static_cast<float>(c));
        for (std::int64_t j = 0; j < plane; ++j) {
          // Triangular noise in (-34, 34) (std about 14) from the two halves of one draw.
          const std::uint32_t r = rs.next_bits();
          const float noise = static_cast<float>(static_cast<std::int32_t>(r & 0xFFFFu) +
                                                 static_cast<std::int32_t>(r >> 16) - 65535) *
                              (34.0f / 65536.0f);
          const float v = 40.0f + tint * pattern[static_cast<std::size_t>(j)] + noise;
          img[c * plane + j] = static_cast<std::uint8_t>(std::lround(std::clamp(v, 0.0f, 255.0f)));
        }
      }
    }
  }
  ds.num_classes = num_classes;
  for (std::int64_t k = 0; k < num_classes; ++k)
    ds.class_names.push_back("class" + std::to_string(k));
  ds.source = "synthetic(n=" + std::to_string(n) + ", seed=" + std::to_string(seed) + ")";
  return ds;
}

}  // namespace epoch::data
