// Resolving --data into sample sources (see training_data.h).
#include "epoch/train/training_data.h"

#include <algorithm>
#include <filesystem>
#include <thread>

#include "epoch/data/cifar10.h"
#include "epoch/data/dataset_format.h"

namespace epoch::train {
namespace fs = std::filesystem;

namespace {

data::ImageDataset take_first(const data::ImageDataset& d, std::int64_t limit) {
  if (limit <= 0 || limit >= d.size()) return d;
  data::ImageDataset out = d;
  out.images = d.images.narrow0(0, limit);
  out.labels = d.labels.narrow0(0, limit);
  return out;
}

data::ImageFolder take_first(data::ImageFolder f, std::int64_t limit) {
  if (limit <= 0 || limit >= static_cast<std::int64_t>(f.files.size())) return f;
  // The first N in sorted order would hold one class only: keep every k-th file instead.
  data::ImageFolder out{f.root, f.class_names, {}, {}};
  const double step = static_cast<double>(f.files.size()) / static_cast<double>(limit);
  for (std::int64_t i = 0; i < limit; ++i) {
    const auto k = static_cast<std::size_t>(static_cast<double>(i) * step);
    out.files.push_back(f.files[k]);
    out.labels.push_back(f.labels[k]);
  }
  return out;
}

void memory_pair(TrainingData& d, data::ImageDataset train, data::ImageDataset val,
                 const TrainConfig& c) {
  d.train = std::make_unique<data::MemorySource>(take_first(train, c.data.limit_train));
  d.val = std::make_unique<data::MemorySource>(take_first(val, c.data.limit_test));
}

void folder_pair(TrainingData& d, const fs::path& train_dir, const TrainConfig& c,
                 bool validation_optional) {
  data::ImageFolder train = data::scan_image_folder(train_dir.string());
  data::ImageFolder val;
  bool found = true;
  d.val_name = "validation";
  if (!c.data.val_data.empty()) {
    if (c.data.val_split > 0)
      EPOCH_THROW(ConfigError, "--val-data and --val-split both given: choose one");
    val = data::scan_image_folder(c.data.val_data, train.class_names);
  } else if (c.data.val_split > 0) {
    std::tie(train, val) = data::split_image_folder(train, c.data.val_split);
  } else {
    const fs::path root = train_dir.parent_path();
    found = false;
    if (train_dir.filename() == "train") {
      for (const char* name : {"validation", "val", "test"}) {
        if (fs::is_directory(root / name)) {
          val = data::scan_image_folder((root / name).string(), train.class_names);
          d.val_name = std::string(name) == "test" ? "test" : "validation";
          found = true;
          break;
        }
      }
    }
    if (!found && !validation_optional)
      EPOCH_THROW(ConfigError, train_dir.string(),
                  ": no validation images: pass --val-data DIR or --val-split 0.2");
  }
  const std::int64_t cache = c.data.cache_mib * 1024 * 1024;
  d.train =
      std::make_unique<data::FolderSource>(take_first(std::move(train), c.data.limit_train), cache);
  if (found)
    d.val =
        std::make_unique<data::FolderSource>(take_first(std::move(val), c.data.limit_test), cache);
  d.kind = "image-folder";
}

}  // namespace

std::unique_ptr<data::SampleSource> open_evaluation_data(
    const TrainConfig& c, const models::ModelSpec& spec,
    const std::vector<std::string>& class_names) {
  if (data::locate_dataset(c.data.source).format == data::DatasetFormat::image_classes &&
      c.data.val_data.empty() && c.data.val_split <= 0.0) {
    data::ImageFolder folder = data::scan_image_folder(c.data.source, class_names);
    return std::make_unique<data::FolderSource>(take_first(std::move(folder), c.data.limit_test),
                                                0);
  }
  return std::move(open_training_data(c, spec).val);
}

void check_trains_on_images(const models::ModelSpec& spec) {
  if (spec.task == models::Task::frame_prediction)
    EPOCH_THROW(ConfigError, "model ", spec.name,
                " predicts video frames and reads sequence folders, not the image pipeline "
                "(`epoch train --model ",
                spec.name, " --data DIR` trains it, `epoch bench --model ", spec.name,
                "` times its steps)");
}

namespace {
/// ConfigError unless the model can train on the data: its classes, channels, sizes.
void check_data_fits(const TrainingData& d, const models::ModelSpec& spec) {
  const std::int64_t have = d.train->num_classes();
  if (spec.task == models::Task::classification && have > spec.outputs)
    EPOCH_THROW(ConfigError, "model ", spec.name, " has ", spec.outputs, " outputs but the data ",
                d.train->description(), " has ", have, " classes");
  if (spec.task == models::Task::binary && have != 2)
    EPOCH_THROW(ConfigError, "model ", spec.name, " tells 2 classes apart but the data ",
                d.train->description(), " has ", have);
  if (const data::ImageDataset* m = d.train->in_memory(); m && m->channels() != spec.input[0])
    EPOCH_THROW(ConfigError, "model ", spec.name, " takes ", spec.input[0], "-channel images but ",
                d.train->description(), " has ", m->channels());
  if (d.train->size() == 0)
    EPOCH_THROW(ConfigError, d.train->description(), ": no training samples");
  if (d.val && d.val->size() == 0)
    EPOCH_THROW(ConfigError, d.val->description(), ": no validation samples");
}
}  // namespace

TrainingData open_training_data(const TrainConfig& c, const models::ModelSpec& spec,
                                bool validation_optional) {
  check_trains_on_images(spec);
  std::error_code ec;
  if (c.data.source == "mnist" && !fs::exists("mnist", ec))
    EPOCH_THROW(ConfigError,
                "--data mnist: no Debian package holds the MNIST digits (Debian's Fashion-MNIST "
                "is the default: leave --data out); pass --data DIR of the four MNIST IDX files "
                "(train-images-idx3-ubyte ..., as torchvision's MNIST/raw holds them)");
  TrainingData d;
  const std::int64_t classes = spec.task == models::Task::classification ? spec.outputs : 2;
  const data::DatasetLocation where = data::locate_dataset(c.data.source);
  switch (where.format) {
    case data::DatasetFormat::synthetic:
      memory_pair(d,
                  data::make_synthetic_dataset(c.data.synthetic_count, spec.input[0], spec.input[1],
                                               spec.input[2], classes, c.run.seed),
                  data::make_synthetic_dataset(
                      std::max<std::int64_t>(c.data.synthetic_count / 4, 1), spec.input[0],
                      spec.input[1], spec.input[2], classes, c.run.seed + 1000003),
                  c);
      d.kind = "synthetic";
      break;
    case data::DatasetFormat::fashion_mnist: {
      const std::string dir = data::default_fashion_mnist_dir();
      if (dir.empty())
        EPOCH_THROW(IoError,
                    "Fashion-MNIST not found: install Debian's dataset-fashion-mnist "
                    "package (make deps) or pass --data DIR");
      memory_pair(d, data::load_mnist_format(dir, "train", data::fashion_mnist_class_names()),
                  data::load_mnist_format(dir, "test", data::fashion_mnist_class_names()), c);
      d.kind = "fashion-mnist";
      break;
    }
    case data::DatasetFormat::cifar10:
      memory_pair(d, data::load_cifar10(where.path, "train"),
                  data::load_cifar10(where.path, "test"), c);
      d.kind = "cifar10";
      break;
    case data::DatasetFormat::idx:
      memory_pair(d, data::load_mnist_format(where.path, "train"),
                  data::load_mnist_format(where.path, "test"), c);
      d.kind = "idx";
      break;
    case data::DatasetFormat::image_splits:
    case data::DatasetFormat::image_classes:
      folder_pair(d, where.path, c, validation_optional);
      break;
  }
  if (d.kind != "image-folder" && (!c.data.val_data.empty() || c.data.val_split > 0))
    EPOCH_THROW(ConfigError, "--val-data and --val-split apply to image folders; ",
                c.data.source.empty() ? "Fashion-MNIST" : c.data.source, " has its own test set");
  check_data_fits(d, spec);
  return d;
}

TrainingData in_memory_training_data(const TrainConfig& c, const models::ModelSpec& spec,
                                     data::ImageDataset train, data::ImageDataset val) {
  check_trains_on_images(spec);
  TrainingData d;
  memory_pair(d, std::move(train), std::move(val), c);
  d.kind = "in-memory";
  check_data_fits(d, spec);
  return d;
}

data::Preprocessing preprocessing_for(const TrainConfig& c, const models::ModelSpec& spec) {
  data::Preprocessing p;
  p.rescale = c.input.rescale;
  p.standardize = c.input.standardize;
  p.mean = c.input.mean;
  p.std = c.input.std;
  p.resize = c.input.resize;
  // An image model's input is (C, H, W); a video model's (T, C, H, W), its frames (C, H, W).
  const std::size_t frame = spec.input.size() - 3;
  p.channels = spec.input[frame];
  p.height = spec.input[frame + 1];
  p.width = spec.input[frame + 2];
  try {
    p.validate();
  } catch (const InvalidArgument& e) {
    EPOCH_THROW(ConfigError, "--mean/--std/--resize: ", e.what());
  }
  return p;
}

std::int64_t auto_eval_batch_size(const models::ModelSpec& spec, std::int64_t train_batch) {
  const std::int64_t values = spec.input[0] * spec.input[1] * spec.input[2];
  return std::max(train_batch, std::min<std::int64_t>(1000, (std::int64_t{1} << 20) / values));
}

int resolve_workers(const TrainConfig& c, const TrainingData& d, int compute_threads) {
  if (c.data.workers >= 0) return c.data.workers;
  if (!d.from_files()) return 0;
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  return std::clamp(cores - compute_threads, 0, 4);
}

}  // namespace epoch::train
