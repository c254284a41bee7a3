// The IDX reader and the raw-or-gzip byte reader under it. Header fields are checked before
// the payload is allocated, so a hostile header cannot make us allocate gigabytes.
#include "data/idx.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <source_location>
#include <vector>

namespace epoch::data {
namespace {

/// Throws IoError "path: problem [at file:line]", the format EPOCH_THROW uses.
[[noreturn]] void fail(const std::string& path, const std::string& problem,
                       std::source_location at = std::source_location::current()) {
  throw IoError(path + ": " + problem + " [at " + at.file_name() + ":" +
                std::to_string(at.line()) + "]");
}

std::string hex_byte(unsigned v) {
  const char* digits = "0123456789abcdef";
  return std::string("0x") + digits[(v >> 4) & 15] + digits[v & 15];
}

const char* idx_type_name(unsigned code) {
  switch (code) {
    case 0x08:
      return "unsigned byte";
    case 0x09:
      return "signed byte";
    case 0x0B:
      return "short";
    case 0x0C:
      return "int";
    case 0x0D:
      return "float";
    case 0x0E:
      return "double";
    default:
      return "unknown";
  }
}

}  // namespace

ByteReader::ByteReader(const std::string& path) : path_(path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) fail(path, "is a directory, not a file");
  raw_ = std::fopen(path.c_str(), "rb");
  if (raw_ == nullptr) fail(path, std::string("cannot open: ") + std::strerror(errno));
  unsigned char magic[2] = {0, 0};
  const std::size_t got = std::fread(magic, 1, 2, raw_);
  if (std::ferror(raw_)) {
    std::fclose(raw_);
    raw_ = nullptr;
    fail(path, "cannot read");
  }
  if (got == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
    std::fclose(raw_);
    raw_ = nullptr;
    gzFile gz = gzopen(path.c_str(), "rb");
    if (gz == nullptr) fail(path, std::string("cannot open as gzip: ") + std::strerror(errno));
    gzbuffer(gz, 1u << 18);
    gz_ = gz;
  } else {
    std::rewind(raw_);
    std::fseek(raw_, 0, SEEK_END);
    raw_size_ = std::ftell(raw_);
    std::rewind(raw_);
  }
}

ByteReader::~ByteReader() {
  if (raw_ != nullptr) std::fclose(raw_);
  if (gz_ != nullptr) gzclose_r(static_cast<gzFile>(gz_));
}

std::size_t ByteReader::read(void* out, std::size_t n) {
  auto* p = static_cast<unsigned char*>(out);
  std::size_t total = 0;
  if (raw_ != nullptr) {
    total = std::fread(p, 1, n, raw_);
    raw_position_ += static_cast<std::int64_t>(total);
    if (total < n && std::ferror(raw_))
      fail(path_, std::string("read error: ") + std::strerror(errno));
    return total;
  }
  auto gz = static_cast<gzFile>(gz_);
  while (total < n) {
    const unsigned chunk = static_cast<unsigned>(std::min<std::size_t>(n - total, 1u << 30));
    const int got = gzread(gz, p + total, chunk);
    if (got > 0) total += static_cast<std::size_t>(got);
    if (got <= 0 || static_cast<unsigned>(got) < chunk) {
      // A short read is the end of the data or an error; zlib reports a cut-off stream as a
      // short read with Z_BUF_ERROR set, so the error state is what tells them apart.
      int errnum = Z_OK;
      const char* msg = gzerror(gz, &errnum);
      if (errnum == Z_BUF_ERROR) fail(path_, "gzip stream ends early (truncated file?)");
      if (errnum != Z_OK)
        fail(path_, std::string("corrupt gzip data: ") + (msg != nullptr ? msg : "unknown error"));
      if (got <= 0) break;
    }
  }
  return total;
}

std::size_t ByteReader::count_rest() {
  std::vector<unsigned char> buffer(1u << 16);
  std::size_t total = 0;
  while (const std::size_t got = read(buffer.data(), buffer.size())) total += got;
  return total;
}

std::int64_t ByteReader::raw_remaining() const {
  return raw_ != nullptr ? std::max<std::int64_t>(raw_size_ - raw_position_, 0) : -1;
}

Tensor read_idx(const std::string& path) {
  ByteReader in(path);
  unsigned char magic[4];
  const std::size_t got_magic = in.read(magic, 4);
  if (got_magic == 0) fail(path, "empty file, expected an IDX header");
  if (got_magic < 4)
    fail(path, "truncated IDX header: expected 4 magic bytes, got " + std::to_string(got_magic));
  if (magic[0] != 0 || magic[1] != 0)
    fail(path, "not an IDX file: magic starts " + hex_byte(magic[0]) + " " + hex_byte(magic[1]) +
                   ", expected 0x00 0x00");
  if (magic[2] != 0x08)
    fail(path, "unsupported IDX element type code " + hex_byte(magic[2]) + " (" +
                   idx_type_name(magic[2]) + "); epoch reads unsigned bytes (0x08) only");
  const unsigned ndims = magic[3];
  if (ndims < 1 || ndims > 4)
    fail(path, "IDX file with " + std::to_string(ndims) + " dims; epoch reads 1 to 4");

  unsigned char dim_bytes[16];
  const std::size_t want = 4 * ndims;
  const std::size_t got_dims = in.read(dim_bytes, want);
  if (got_dims < want)
    fail(path, "truncated IDX header: expected " + std::to_string(4 + want) + " bytes, got " +
                   std::to_string(4 + got_dims));
  Shape shape;
  std::uint64_t numel = 1;
  for (unsigned d = 0; d < ndims; ++d) {
    const std::uint32_t v = (std::uint32_t{dim_bytes[4 * d]} << 24) |
                            (std::uint32_t{dim_bytes[4 * d + 1]} << 16) |
                            (std::uint32_t{dim_bytes[4 * d + 2]} << 8) | dim_bytes[4 * d + 3];
    shape.push_back(static_cast<std::int64_t>(v));
    // Clamped at the limit + 1 (about 2^31) after every step, so with v < 2^32 the unsigned
    // product never overflows.
    numel = std::min<std::uint64_t>(numel * v, kMaxIdxElements + 1);
  }
  if (numel > static_cast<std::uint64_t>(kMaxIdxElements)) {
    std::string dims;
    for (std::int64_t d : shape) dims += (dims.empty() ? "" : " x ") + std::to_string(d);
    fail(path, "IDX dims " + dims + " exceed the limit of " + std::to_string(kMaxIdxElements) +
                   " elements (corrupt header?)");
  }

  // Nothing is allocated for bytes that are not there: a raw file's size is checked first, and
  // gzip data is read in bounded chunks, growing with what actually arrives.
  const auto nbytes = static_cast<std::size_t>(numel);
  Tensor t;
  std::size_t got = 0;
  if (!in.is_gzip()) {
    got = std::min(nbytes, static_cast<std::size_t>(in.raw_remaining()));
    if (got == nbytes) {
      t = Tensor::empty(shape, DType::u8);
      got = in.read(t.raw(), nbytes);
    }
  } else {
    constexpr std::size_t kChunk = std::size_t{16} << 20;
    std::vector<unsigned char> buffer;
    while (got < nbytes) {
      buffer.resize(std::min(nbytes, got + kChunk));
      const std::size_t want_now = buffer.size() - got;
      const std::size_t got_now = in.read(buffer.data() + got, want_now);
      got += got_now;
      if (got_now < want_now) break;
    }
    if (got == nbytes) {
      t = Tensor::empty(shape, DType::u8);
      if (nbytes > 0) std::memcpy(t.raw(), buffer.data(), nbytes);
    }
  }
  if (got < nbytes)
    fail(path, "truncated IDX payload: expected " + std::to_string(nbytes) + " bytes for dims " +
                   shape_str(shape) + ", got " + std::to_string(got));
  if (const std::size_t extra = in.count_rest())
    fail(path, std::to_string(extra) + " trailing bytes after the " + std::to_string(nbytes) +
                   "-byte IDX payload");
  return t;
}

}  // namespace epoch::data
