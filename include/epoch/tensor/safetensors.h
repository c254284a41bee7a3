// safetensors files: the checkpoint format (an 8-byte little-endian header length, a JSON
// header naming each tensor's dtype, shape and byte range, then the raw little-endian bytes).
// Saving is atomic: a crash or failure never leaves a half-written file under the target name.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "epoch/tensor/tensor.h"

namespace epoch {

/// One entry of a safetensors file.
struct NamedTensor {
  std::string name;
  Tensor tensor;
};

/// The contents of a safetensors file: tensors in the order of their bytes in the file (which
/// is the order they were saved in), and the "__metadata__" string map.
struct SafetensorsFile {
  std::vector<NamedTensor> tensors;
  std::map<std::string, std::string> metadata;
  /// The path it was read from (for error messages).
  std::string source;

  /// The tensor called `name`, or nullptr when there is none.
  const Tensor* find(const std::string& name) const;
  /// The tensor called `name`; throws IoError naming `source` when it is absent.
  const Tensor& at(const std::string& name) const;
};

/// Writes `tensors` (f32, i32 or u8, any device, any strides; stored contiguous, in this order)
/// and `metadata` to `path`.
/// requires: names unique, non-empty and not "__metadata__"; every tensor defined
///           (InvalidArgument otherwise, before anything is written).
/// ensures:  atomic replacement: the bytes go to a temporary file in the same directory, which
///           is fsync'ed and renamed over `path`, then the directory is fsync'ed. On failure
///           (IoError) an existing file at `path` is untouched and the temporary file is gone.
void save_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

/// Reads and validates a safetensors file; tensors come back on the CPU, contiguous.
/// Throws IoError (one line naming the file and the problem) for a missing or unreadable file,
/// a malformed or hostile header, unknown dtypes, inconsistent shapes/offsets, or trailing bytes.
SafetensorsFile load_safetensors(const std::string& path);

/// load_safetensors over bytes already in memory (the same checks and messages, `name` in
/// place of the path); what load_safetensors runs after opening the file.
SafetensorsFile load_safetensors_bytes(std::span<const std::uint8_t> bytes,
                                       const std::string& name);

}  // namespace epoch
