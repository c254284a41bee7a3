// CIFAR-10 in its binary distribution format: data_batch_1.bin ... data_batch_5.bin (training)
// and test_batch.bin, each a sequence of 3073-byte records (1 label byte, then 1024 red, 1024
// green and 1024 blue bytes of a 32x32 image, row-major), plus the optional batches.meta.txt
// with one class name per line.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "epoch/data/dataset.h"

namespace epoch::data {

/// The ten CIFAR-10 class names in label order ("airplane", ..., "truck").
std::vector<std::string> cifar10_class_names();

/// Loads split "train" (every data_batch_N.bin present, N = 1..5 in order; at least one) or
/// "test" (test_batch.bin) from `dir`. Class names come from batches.meta.txt when present (10
/// non-empty lines), else cifar10_class_names().
/// ensures: images (N, 3, 32, 32) u8, labels (N) i32 in [0, 10), num_classes 10.
/// Throws InvalidArgument for another split; IoError naming the file when a file is missing
/// (listing the names looked for), empty, not a whole number of records ("truncated: 12345
/// bytes is not a multiple of 3073"), holds a label above 9 (naming the record), or is not a
/// regular file (a folder, a FIFO or a device such as /dev/zero, batches.meta.txt included:
/// refused at once, never read or waited on).
ImageDataset load_cifar10(const std::string& dir, const std::string& split);

/// The records of one CIFAR-10 binary file already in memory, named `name` in errors; the same
/// checks as load_cifar10 (empty, not a whole number of records, a label above 9), class names
/// cifar10_class_names(). Never crashes on any input (fuzzed).
ImageDataset parse_cifar10_records(std::span<const std::uint8_t> bytes, const std::string& name);

/// Writes `dataset` ((N, 3, 32, 32) u8, labels < 10) as CIFAR-10 binary files in `dir`: the
/// records split evenly over `train_files` files data_batch_1.bin ... (split "train") or one
/// test_batch.bin (split "test"), plus batches.meta.txt from dataset.class_names. Atomic per
/// file; IoError on failure, InvalidArgument for train_files outside 1-5, a dataset of another
/// shape, no images, or class_names that are neither empty (the CIFAR-10 names are written)
/// nor 10 one-line names.
/// With fewer images than train_files, one file per image; data_batch_N.bin files above the
/// number written are removed, so a reader never mixes in an older dataset's batches.
void write_cifar10(const std::string& dir, const std::string& split, const ImageDataset& dataset,
                   int train_files = 5);

}  // namespace epoch::data
