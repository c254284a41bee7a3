// libFuzzer target: a checkpoint as `epoch eval`, `predict` and `--resume` read it, from
// arbitrary bytes: the safetensors container, the format key, the model name, every model and
// optimizer tensor (shape, finiteness, signs) and the metadata fields (epoch, step,
// preprocessing, class names, the stored configuration). Only epoch::Error may come out.
#include <cstddef>
#include <cstdint>
#include <span>

#include "epoch/tensor/safetensors.h"
#include "epoch/train/checkpoint.h"
#include "epoch/train/inference.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const epoch::SafetensorsFile file =
        epoch::load_safetensors_bytes(std::span(data, size), "fuzz");
    const epoch::train::TrainedModel t = epoch::train::load_trained_model(file);
    (void)epoch::train::metadata_int(file, "step", 0, std::int64_t{1} << 62);
    (void)t;
  } catch (const epoch::Error&) {
    // A clear error is the expected outcome for most inputs.
  }
  return 0;
}
