// libFuzzer target: the safetensors reader on arbitrary bytes through load_safetensors_bytes,
// the parser load_safetensors runs on a file's contents. Only epoch::Error may come out.
#include <cstddef>
#include <cstdint>
#include <span>

#include "epoch/tensor/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const epoch::SafetensorsFile file =
        epoch::load_safetensors_bytes(std::span(data, size), "fuzz");
    for (const epoch::NamedTensor& t : file.tensors) (void)file.at(t.name);
  } catch (const epoch::Error&) {
    // A clear error is the expected outcome for most inputs.
  }
  return 0;
}
