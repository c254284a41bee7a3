// The end-of-central-directory record (the last 22 to 65,557 bytes), the central directory's
// entry for the member, its local header, then its data: stored as is or raw deflate (zlib).
#include "epoch/data/zip_member.h"

#include <zlib.h>

#include <cstdint>
#include <cstring>

#include "epoch/tensor/error.h"

namespace epoch::data {
namespace {

std::uint32_t le(std::string_view b, std::size_t at, int bytes) {
  std::uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i)
    v = v << 8 | static_cast<unsigned char>(b[at + static_cast<std::size_t>(i)]);
  return v;
}

}  // namespace

std::string read_zip_member(std::string_view zip, const std::string& member,
                            const std::string& file, std::size_t max_bytes) {
  const auto bad = [&](const char* what) -> std::string {
    EPOCH_THROW(IoError, file, ": ", what);
  };
  constexpr std::size_t kEnd = 22;
  if (zip.size() < kEnd) bad("not a zip archive (too short)");
  std::size_t end = std::string_view::npos;
  const std::size_t lowest = zip.size() > kEnd + 65535 ? zip.size() - kEnd - 65535 : 0;
  for (std::size_t at = zip.size() - kEnd + 1; at-- > lowest;)
    if (le(zip, at, 4) == 0x06054b50) {
      end = at;
      break;
    }
  if (end == std::string_view::npos) bad("not a zip archive (no end-of-directory record)");
  const std::uint32_t entries = le(zip, end + 10, 2);
  const std::uint32_t dir_size = le(zip, end + 12, 4);
  const std::uint32_t dir_at = le(zip, end + 16, 4);
  if (static_cast<std::uint64_t>(dir_at) + dir_size > end)
    bad("corrupt zip archive (its directory lies outside the file)");
  std::size_t at = dir_at;
  for (std::uint32_t i = 0; i < entries; ++i) {
    if (at + 46 > end || le(zip, at, 4) != 0x02014b50)
      bad("corrupt zip archive (a directory entry is cut short)");
    const std::uint32_t method = le(zip, at + 10, 2);
    const std::uint32_t crc = le(zip, at + 16, 4);
    const std::uint32_t packed = le(zip, at + 20, 4), size = le(zip, at + 24, 4);
    const std::uint32_t name_len = le(zip, at + 28, 2), extra_len = le(zip, at + 30, 2),
                        comment_len = le(zip, at + 32, 2);
    const std::uint32_t local = le(zip, at + 42, 4);
    if (at + 46 + name_len > end) bad("corrupt zip archive (a name runs past the directory)");
    const std::string_view name = zip.substr(at + 46, name_len);
    at += 46 + name_len + extra_len + comment_len;
    if (name != member) continue;
    if (size > max_bytes) bad("the member is larger than epoch reads");
    if (static_cast<std::uint64_t>(local) + 30 > zip.size() || le(zip, local, 4) != 0x04034b50)
      bad("corrupt zip archive (a member's header is missing)");
    const std::uint64_t data = static_cast<std::uint64_t>(local) + 30 + le(zip, local + 26, 2) +
                               le(zip, local + 28, 2);
    if (data + packed > zip.size()) bad("truncated zip archive (a member is cut short)");
    const std::string_view bytes = zip.substr(data, packed);
    const auto checked = [&](std::string out) {
      const auto* p = reinterpret_cast<const Bytef*>(out.data());
      if (crc32(crc32(0, nullptr, 0), p, static_cast<uInt>(out.size())) != crc)
        bad("corrupt zip archive (a member's CRC-32 does not match its bytes)");
      return out;
    };
    if (method == 0) {
      if (packed != size) bad("corrupt zip archive (a stored member's sizes differ)");
      return checked(std::string(bytes));
    }
    if (method != 8) bad("a member is compressed with a method other than stored or deflate");
    std::string out(size, '\0');
    z_stream z{};
    if (inflateInit2(&z, -15) != Z_OK) bad("cannot start zlib");
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
    z.avail_in = packed;
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = size;
    const int rc = inflate(&z, Z_FINISH);
    const bool complete = rc == Z_STREAM_END && z.total_out == size;
    inflateEnd(&z);
    if (!complete) bad("corrupt zip archive (a member does not inflate to its stated size)");
    return checked(std::move(out));
  }
  EPOCH_THROW(IoError, file, ": the zip archive holds no ", member);
}

}  // namespace epoch::data
