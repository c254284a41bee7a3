// libFuzzer target: the CIFAR-10 record parser on arbitrary bytes through parse_cifar10_records,
// the checks load_cifar10 runs on each file's contents. Only epoch::Error may come out.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "epoch/data/cifar10.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const epoch::data::ImageDataset ds =
        epoch::data::parse_cifar10_records(std::span(data, size), "fuzz");
    // Accepted input: whole records, every label 0-9, pixels copied unchanged.
    if (size == 0 || size % 3073 != 0 || ds.size() != static_cast<std::int64_t>(size / 3073))
      std::abort();
    const std::int32_t* labels = ds.labels.data<std::int32_t>();
    const std::uint8_t* pixels = ds.images.data<std::uint8_t>();
    for (std::int64_t i = 0; i < ds.size(); ++i) {
      if (labels[i] < 0 || labels[i] > 9 || labels[i] != data[i * 3073]) std::abort();
      const std::uint8_t* record = data + i * 3073;
      if (pixels[i * 3072] != record[1] || pixels[i * 3072 + 3071] != record[3072]) std::abort();
    }
  } catch (const epoch::Error&) {
    // A clear error is the expected outcome for most inputs.
  }
  return 0;
}
