// libFuzzer target: the IDX reader (raw and gzip) on arbitrary bytes through read_idx_bytes,
// the parser read_idx runs on a file's contents. Only epoch::Error may come out.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "epoch/data/idx.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const epoch::Tensor t = epoch::data::read_idx_bytes(std::span(data, size), "fuzz");
    if (t.dtype() != epoch::DType::u8 || t.ndim() < 1 || t.ndim() > 4) std::abort();
  } catch (const epoch::Error&) {
    // A clear error is the expected outcome for most inputs.
  }
  return 0;
}
