// Text that reaches JSON files and messages: whether bytes are valid UTF-8 (JSON holds only
// that), and a printable form of any bytes for a message that names them.
#pragma once

#include <string>
#include <string_view>

namespace epoch {

/// True when `text` is well-formed UTF-8 (no overlong forms, surrogates or code points past
/// U+10FFFF).
bool valid_utf8(std::string_view text);

/// `text` with each byte that is not part of valid UTF-8, and each control character, written
/// as \xNN: safe to print, and names the bytes exactly.
std::string printable(std::string_view text);

}  // namespace epoch
