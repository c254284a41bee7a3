// The IDX reader and the raw-or-gzip byte reader under it. Header fields are checked before
// the payload is allocated, so a hostile header cannot make us allocate gigabytes.
#include "data/idx.h"

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <span>
#include <vector>

#include "epoch/tensor/file_io.h"

namespace epoch::data {
namespace {

/// Throws IoError "path: problem [at file:line]", the format EPOCH_THROW uses. The caller's
/// file and line come from __builtin_FILE/LINE (GCC and clang): clang 14 cannot compile
/// libstdc++ 12's std::source_location.
[[noreturn]] void fail(const std::string& path, const std::string& problem,
                       const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  throw IoError(path + ": " + problem + " [at " + file + ":" + std::to_string(line) + "]");
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

/// The bytes `in` has left, read and dropped, counting at most `limit` + 1 of them: a gzip
/// stream may inflate to terabytes past the payload, and a message needs no more.
template <typename Reader>
std::size_t count_by_reading(Reader& in, std::size_t limit) {
  std::vector<unsigned char> buffer(1u << 16);
  std::size_t total = 0;
  while (total <= limit) {
    const std::size_t got = in.read(buffer.data(), buffer.size());
    if (got == 0) break;
    total += got;
  }
  return std::min(total, limit + 1);
}

/// ByteReader's interface over bytes in memory, raw or gzip (inflated as it is read, with the
/// same rules as zlib's gzread: concatenated members are read, trailing non-gzip bytes ignored).
class MemoryReader {
 public:
  MemoryReader(std::span<const std::uint8_t> bytes, const std::string& name)
      : bytes_(bytes), name_(name) {
    if (bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b) {
      if (inflateInit2(&z_, 16 + MAX_WBITS) != Z_OK) fail(name, "cannot start gzip decoding");
      gzip_ = true;
      z_.next_in = const_cast<Bytef*>(bytes.data());  // zlib's API is not const-correct
      z_.avail_in = 0;
    }
  }
  ~MemoryReader() {
    if (gzip_) inflateEnd(&z_);
  }
  MemoryReader(const MemoryReader&) = delete;
  MemoryReader& operator=(const MemoryReader&) = delete;

  std::size_t read(void* out, std::size_t n) {
    if (!gzip_) {
      const std::size_t got = std::min(n, bytes_.size() - pos_);
      if (got > 0) std::memcpy(out, bytes_.data() + pos_, got);
      pos_ += got;
      return got;
    }
    auto* p = static_cast<unsigned char*>(out);
    std::size_t total = 0;
    while (total < n && !ended_) {
      if (z_.avail_in == 0) {  // feed at most 1 GiB at a time (avail_in is 32-bit)
        const std::size_t feed = std::min<std::size_t>(bytes_.size() - pos_, 1u << 30);
        z_.next_in = const_cast<Bytef*>(bytes_.data() + pos_);
        z_.avail_in = static_cast<uInt>(feed);
        pos_ += feed;
      }
      const auto room = static_cast<uInt>(std::min<std::size_t>(n - total, 1u << 30));
      z_.next_out = p + total;
      z_.avail_out = room;
      const int rc = inflate(&z_, Z_NO_FLUSH);
      total += room - z_.avail_out;
      if (rc == Z_STREAM_END) {
        // The unread input runs contiguously from next_in to the end of bytes_.
        const std::size_t left =
            static_cast<std::size_t>(bytes_.data() + bytes_.size() - z_.next_in);
        const bool more = left >= 2 && z_.next_in[0] == 0x1f && z_.next_in[1] == 0x8b;
        if (!more || inflateReset(&z_) != Z_OK) ended_ = true;
      } else if (rc == Z_BUF_ERROR) {  // no progress possible: the input ran out
        fail(name_, "gzip stream ends early (truncated file?)");
      } else if (rc != Z_OK) {
        fail(name_,
             std::string("corrupt gzip data: ") + (z_.msg != nullptr ? z_.msg : "unknown error"));
      }
    }
    return total;
  }

  std::size_t count_rest(std::size_t limit) {
    if (!gzip_) {
      const std::size_t rest = bytes_.size() - pos_;
      pos_ = bytes_.size();
      return rest;
    }
    return count_by_reading(*this, limit);
  }

  std::int64_t raw_remaining() const {
    return gzip_ ? -1 : static_cast<std::int64_t>(bytes_.size() - pos_);
  }
  bool is_gzip() const { return gzip_; }

 private:
  std::span<const std::uint8_t> bytes_;
  const std::string& name_;
  std::size_t pos_ = 0;  // bytes consumed (raw) or handed to zlib (gzip)
  bool gzip_ = false;
  bool ended_ = false;
  z_stream z_{};
};

}  // namespace

ByteReader::ByteReader(const std::string& path) : path_(path) {
  // A regular file within the bound, checked before anything reads: a FIFO, a device such as
  // /dev/zero or a folder is refused at once instead of blocking or reading for ever.
  std::uint64_t size = 0;
  FileDescriptor fd = open_regular_file(path, kMaxIdxFileBytes, &size);
  unsigned char magic[2] = {0, 0};
  ssize_t got = -1;
  do {
    got = ::pread(fd.get(), magic, 2, 0);
  } while (got < 0 && errno == EINTR);
  if (got < 0) fail(path, std::string("read error: ") + std::strerror(errno));
  if (got == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
    gzFile gz = gzdopen(fd.get(), "rb");
    if (gz == nullptr) fail(path, "cannot open as gzip: out of memory");
    fd.release();  // gzclose_r closes it
    gzbuffer(gz, 1u << 18);
    gz_ = gz;
  } else {
    raw_ = ::fdopen(fd.get(), "rb");
    if (raw_ == nullptr) fail(path, std::string("cannot open: ") + std::strerror(errno));
    fd.release();  // fclose closes it
    raw_size_ = static_cast<std::int64_t>(size);
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
      if (errnum != Z_OK) {
        // gzerror's text starts with what zlib calls the file ("<fd:3>", as gzdopen opened
        // it); fail() puts the path in front instead.
        std::string text = msg != nullptr ? msg : "unknown error";
        if (text.rfind("<fd:", 0) == 0 && text.find(">: ") != std::string::npos)
          text.erase(0, text.find(">: ") + 3);
        fail(path_, "corrupt gzip data: " + text);
      }
      if (got <= 0) break;
    }
  }
  return total;
}

std::size_t ByteReader::count_rest(std::size_t limit) {
  if (raw_ != nullptr) return static_cast<std::size_t>(raw_remaining());
  return count_by_reading(*this, limit);
}

std::int64_t ByteReader::raw_remaining() const {
  return raw_ != nullptr ? std::max<std::int64_t>(raw_size_ - raw_position_, 0) : -1;
}

namespace {

/// The IDX parser over a ByteReader (file) or a MemoryReader; `path` names the source in errors.
template <typename Reader>
Tensor parse_idx(Reader& in, const std::string& path) {
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
  // numel, and the extent: the product of the non-zero dims. The extent is what is limited,
  // so an empty 0 x 2^31 x 2^31 array is refused too (its strides would overflow).
  std::uint64_t numel = 1, extent = 1;
  for (unsigned d = 0; d < ndims; ++d) {
    const std::uint32_t v = (std::uint32_t{dim_bytes[4 * d]} << 24) |
                            (std::uint32_t{dim_bytes[4 * d + 1]} << 16) |
                            (std::uint32_t{dim_bytes[4 * d + 2]} << 8) | dim_bytes[4 * d + 3];
    shape.push_back(static_cast<std::int64_t>(v));
    // Clamped at the limit + 1 (about 2^31) after every step, so with v < 2^32 the unsigned
    // products never overflow.
    numel = std::min<std::uint64_t>(numel * v, kMaxIdxElements + 1);
    if (v != 0) extent = std::min<std::uint64_t>(extent * v, kMaxIdxElements + 1);
  }
  if (extent > static_cast<std::uint64_t>(kMaxIdxElements)) {
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
  // A gzip stream is inflated no further than the header's dims say, and a little beyond to
  // tell trailing bytes: a small file that inflates to terabytes ends here, not in a full read.
  constexpr std::size_t kMaxTrailingCount = std::size_t{1} << 20;
  if (const std::size_t extra = in.count_rest(kMaxTrailingCount))
    fail(path, (extra > kMaxTrailingCount ? "more than " + std::to_string(kMaxTrailingCount)
                                          : std::to_string(extra)) +
                   " trailing bytes after the " + std::to_string(nbytes) + "-byte IDX payload");
  return t;
}

}  // namespace

Tensor read_idx(const std::string& path) {
  ByteReader in(path);
  return parse_idx(in, path);
}

Tensor read_idx_bytes(std::span<const std::uint8_t> bytes, const std::string& name) {
  MemoryReader in(bytes, name);
  return parse_idx(in, name);
}

}  // namespace epoch::data
