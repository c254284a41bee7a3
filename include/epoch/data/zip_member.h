// One member of a zip archive (a Keras .keras file: config.json beside the weights), stored or
// deflated, read from the archive's bytes with every offset and size checked against them.
#pragma once

#include <string>
#include <string_view>

namespace epoch::data {

/// The bytes of the member named `member` of the zip archive `archive`. IoError naming `file`
/// and the problem when the bytes are no zip archive, lack the member, are truncated or corrupt,
/// use another compression than stored or deflate, or the member exceeds `max_bytes`.
std::string read_zip_member(std::string_view archive, const std::string& member,
                            const std::string& file, std::size_t max_bytes = 256u << 20);

}  // namespace epoch::data
