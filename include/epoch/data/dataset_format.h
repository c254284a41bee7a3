// What a --data argument names, decided from the words and the files alone (nothing is read):
// the default Fashion-MNIST, generated data, CIFAR-10 binaries, MNIST-format IDX files, or an
// image folder (train/ with a validation folder beside it, or class subfolders).
#pragma once

#include <string>

namespace epoch::data {

enum class DatasetFormat {
  fashion_mnist,  // "" : Debian's dataset-fashion-mnist package
  synthetic,      // "synthetic": generated in memory
  cifar10,        // "cifar10:DIR", or a folder holding data_batch_1.bin (or cifar-10-batches-bin/)
  idx,            // a folder holding train-images-idx3-ubyte[.gz]
  image_splits,   // a folder holding train/ (and validation/, val/ or test/)
  image_classes,  // a folder of class subfolders
};

struct DatasetLocation {
  DatasetFormat format = DatasetFormat::fashion_mnist;
  /// The folder to read: the CIFAR-10 batch folder, the IDX folder, the train/ folder or the
  /// class folder; empty for fashion_mnist and synthetic.
  std::string path;
};

/// Decides what `data` names. IoError "<data>: no such folder" when it names none.
DatasetLocation locate_dataset(const std::string& data);

}  // namespace epoch::data
