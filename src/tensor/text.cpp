// UTF-8 validation and printable names (see text.h).
#include "epoch/tensor/text.h"

#include <cstdint>
#include <cstdio>

namespace epoch {
namespace {

/// The length of the valid UTF-8 sequence at text[i], 0 when none starts there.
std::size_t sequence_length(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<std::uint8_t>(text[k]); };
  const std::uint8_t b = byte(i);
  if (b < 0x80) return 1;
  std::size_t n = 0;
  std::uint32_t cp = 0, min = 0;
  if ((b & 0xe0) == 0xc0) {
    n = 2, cp = b & 0x1f, min = 0x80;
  } else if ((b & 0xf0) == 0xe0) {
    n = 3, cp = b & 0x0f, min = 0x800;
  } else if ((b & 0xf8) == 0xf0) {
    n = 4, cp = b & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (i + n > text.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

}  // namespace

bool valid_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = sequence_length(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string printable(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = sequence_length(text, i);
    const auto b = static_cast<std::uint8_t>(text[i]);
    if (n == 0 || (n == 1 && (b < 0x20 || b == 0x7f))) {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", b);
      out += hex;
      ++i;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

}  // namespace epoch
