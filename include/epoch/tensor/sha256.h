// SHA-256 (FIPS 180-4) of bytes, as lowercase hex: what `sha256sum` prints for a file. A run
// records the hash of the model file it trained, so a description can be matched to its file.
#pragma once

#include <string>
#include <string_view>

namespace epoch {

/// The SHA-256 digest of `bytes` as 64 lowercase hex digits.
std::string sha256_hex(std::string_view bytes);

}  // namespace epoch
