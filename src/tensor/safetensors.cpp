// Reading and atomically writing safetensors files. The reader trusts nothing: every length,
// offset and shape in the header is checked against the file before a byte is allocated.
#include "epoch/tensor/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <span>
#include <tuple>
#include <utility>

#include "epoch/tensor/file_io.h"

namespace epoch {
namespace {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; a big-endian host needs byte swapping here");

using OrderedJson = nlohmann::ordered_json;

constexpr std::uint64_t kMaxHeaderBytes = 100u << 20;  // the limit other readers apply too
constexpr const char* kMetadataKey = "__metadata__";

/// Throws IoError "path: problem [at file:line]", the format EPOCH_THROW uses. The caller's
/// file and line come from __builtin_FILE/LINE (GCC and clang): clang 14 cannot compile
/// libstdc++ 12's std::source_location.
/// The problem is cut to kMaxProblemChars and its control and non-ASCII bytes shown as '?':
/// a hostile header must not fill the terminal with its own bytes.
constexpr std::size_t kMaxProblemChars = 200;
[[noreturn]] void fail(const std::string& path, const std::string& problem,
                       const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  std::string shown = problem.substr(0, kMaxProblemChars);
  for (char& ch : shown)
    if (static_cast<unsigned char>(ch) < 0x20 || static_cast<unsigned char>(ch) >= 0x7f) ch = '?';
  if (problem.size() > kMaxProblemChars) shown += "...";
  throw IoError(path + ": " + shown + " [at " + file + ":" + std::to_string(line) + "]");
}

std::string errno_text(int err) { return std::strerror(err); }

const char* safetensors_dtype(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return "F32";
    case DType::i32:
      return "I32";
    case DType::u8:
      return "U8";
  }
  return "?";
}

bool parse_dtype(const std::string& name, DType* dtype) {
  if (name == "F32") {
    *dtype = DType::f32;
  } else if (name == "I32") {
    *dtype = DType::i32;
  } else if (name == "U8") {
    *dtype = DType::u8;
  } else {
    return false;
  }
  return true;
}

// ---------------------------------------------------------------- reading

/// Reads exactly n bytes at `offset` or fails naming what was being read.
void read_exact(const std::string& path, int fd, std::uint64_t offset, void* out, std::size_t n,
                const char* what) {
  auto* p = static_cast<char*>(out);
  while (n > 0) {
    const ssize_t r =
        ::pread(fd, p, std::min<std::size_t>(n, std::size_t{1} << 30), static_cast<off_t>(offset));
    if (r < 0) {
      if (errno == EINTR) continue;
      fail(path, std::string("cannot read ") + what + ": " + errno_text(errno));
    }
    if (r == 0) fail(path, std::string("file ended while reading ") + what);
    p += r;
    offset += static_cast<std::uint64_t>(r);
    n -= static_cast<std::size_t>(r);
  }
}

/// Where load_safetensors reads from: an open file (pread) ...
struct FileSource {
  const std::string& path;
  int fd;
  std::uint64_t size;
  void read(std::uint64_t offset, void* out, std::size_t n, const char* what) const {
    read_exact(path, fd, offset, out, n, what);
  }
};

/// ... or bytes in memory (load_safetensors_bytes, the fuzz target).
struct MemorySource {
  const std::string& path;
  std::span<const std::uint8_t> bytes;
  std::uint64_t size;
  void read(std::uint64_t offset, void* out, std::size_t n, const char* what) const {
    if (offset > size || n > size - offset)
      fail(path, std::string("file ended while reading ") + what);
    if (n > 0) std::memcpy(out, bytes.data() + offset, n);
  }
};

struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  std::uint64_t begin;
  std::uint64_t end;
  std::size_t header_index;
};

Entry parse_entry(const std::string& path, const std::string& name, const OrderedJson& info,
                  std::size_t index) {
  const std::string where = "tensor \"" + name + "\"";
  if (!info.is_object()) fail(path, where + ": header entry is not an object");
  for (const char* field : {"dtype", "shape", "data_offsets"}) {
    if (!info.contains(field)) fail(path, where + ": missing field \"" + field + "\"");
  }
  Entry e{name, DType::f32, {}, 0, 0, index};
  const OrderedJson& dtype = info["dtype"];
  if (!dtype.is_string()) fail(path, where + ": \"dtype\" is not a string");
  if (!parse_dtype(dtype.get<std::string>(), &e.dtype))
    fail(path, where + ": unsupported dtype \"" + dtype.get<std::string>() +
                   "\" (epoch reads F32, I32 and U8)");

  const OrderedJson& shape = info["shape"];
  if (!shape.is_array()) fail(path, where + ": \"shape\" is not an array");
  // numel, and the extent: the product of the non-zero dims, which must fit in int64 even when
  // numel is 0 (else the strides of an empty 0 x 2^40 x 2^40 tensor would overflow).
  std::uint64_t numel = 1, extent = 1;
  for (const OrderedJson& d : shape) {
    if (!d.is_number_unsigned())
      fail(path, where + ": shape entries must be non-negative integers, got " + d.dump());
    const auto dim = d.get<std::uint64_t>();
    if (dim > static_cast<std::uint64_t>(INT64_MAX) || __builtin_mul_overflow(numel, dim, &numel) ||
        (dim != 0 && __builtin_mul_overflow(extent, dim, &extent)) ||
        extent > static_cast<std::uint64_t>(INT64_MAX))
      fail(path, where + ": shape " + shape.dump() + " is absurdly large");
    e.shape.push_back(static_cast<std::int64_t>(dim));
  }

  const OrderedJson& offsets = info["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned())
    fail(path,
         where + ": \"data_offsets\" must be two non-negative integers, got " + offsets.dump());
  e.begin = offsets[0].get<std::uint64_t>();
  e.end = offsets[1].get<std::uint64_t>();
  if (e.end < e.begin)
    fail(path, where + ": data_offsets " + offsets.dump() + " end before they begin");
  std::uint64_t nbytes = 0;
  if (__builtin_mul_overflow(numel, static_cast<std::uint64_t>(dtype_size(e.dtype)), &nbytes) ||
      nbytes != e.end - e.begin)
    fail(path, where + ": shape " + shape.dump() + " of " + dtype.get<std::string>() + " needs " +
                   std::to_string(numel * dtype_size(e.dtype)) + " bytes, but data_offsets " +
                   offsets.dump() + " hold " + std::to_string(e.end - e.begin));
  return e;
}

}  // namespace

const Tensor* SafetensorsFile::find(const std::string& name) const {
  for (const NamedTensor& t : tensors)
    if (t.name == name) return &t.tensor;
  return nullptr;
}

const Tensor& SafetensorsFile::at(const std::string& name) const {
  const Tensor* t = find(name);
  if (t == nullptr) EPOCH_THROW(IoError, source, ": no tensor named \"", name, "\"");
  return *t;
}

void save_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  // Everything that can be wrong with the arguments is found before the temporary file exists.
  EPOCH_CHECK(!path.empty(), "save_safetensors: empty path");
  std::set<std::string> names;
  OrderedJson header = OrderedJson::object();
  if (!metadata.empty()) {
    OrderedJson meta = OrderedJson::object();
    for (const auto& [key, value] : metadata) meta[key] = value;
    header[kMetadataKey] = std::move(meta);
  }
  std::uint64_t offset = 0;
  for (const NamedTensor& t : tensors) {
    EPOCH_CHECK(!t.name.empty(), "save_safetensors(", path, "): empty tensor name");
    EPOCH_CHECK(t.name != kMetadataKey, "save_safetensors(", path, "): the name \"", kMetadataKey,
                "\" is reserved");
    EPOCH_CHECK(names.insert(t.name).second, "save_safetensors(", path,
                "): duplicate tensor name \"", t.name, "\"");
    EPOCH_CHECK(t.tensor.defined(), "save_safetensors(", path, "): tensor \"", t.name,
                "\" is undefined");
    const std::uint64_t nbytes =
        static_cast<std::uint64_t>(t.tensor.numel()) * dtype_size(t.tensor.dtype());
    OrderedJson entry = OrderedJson::object();
    entry["dtype"] = safetensors_dtype(t.tensor.dtype());
    entry["shape"] = t.tensor.shape();
    entry["data_offsets"] = {offset, offset + nbytes};
    header[t.name] = std::move(entry);
    offset += nbytes;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception&) {
    EPOCH_THROW(InvalidArgument, "save_safetensors(", path,
                "): a tensor name or metadata string is not valid UTF-8");
  }
  text.append((8 - text.size() % 8) % 8, ' ');

  std::uint8_t length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<std::uint8_t>(text.size() >> (8 * i));

  write_file_atomic(
      path,
      [&](const AppendBytes& append) {
        append(std::span<const std::uint8_t>(length));
        append(std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
        for (const NamedTensor& t : tensors) {
          const Tensor host = t.tensor.to(Device::cpu()).contiguous();
          append(std::span(static_cast<const std::uint8_t*>(host.raw()),
                           static_cast<std::size_t>(host.numel()) * dtype_size(host.dtype())));
        }
      },
      /*durable=*/true);
}

namespace {

/// Everything after opening: the same checks whether the bytes come from a file or memory.
template <typename Source>
SafetensorsFile parse_safetensors(const Source& source, const std::string& path) {
  const std::uint64_t file_size = source.size;
  if (file_size < 8)
    fail(path, "not a safetensors file: " + std::to_string(file_size) +
                   " bytes, shorter than the 8-byte header length");

  unsigned char length_bytes[8];
  source.read(0, length_bytes, 8, "the header length");
  std::uint64_t header_size = 0;
  for (int i = 0; i < 8; ++i) header_size |= std::uint64_t{length_bytes[i]} << (8 * i);
  if (header_size > kMaxHeaderBytes)
    fail(path, "header length " + std::to_string(header_size) + " is absurd (limit " +
                   std::to_string(kMaxHeaderBytes) + " bytes); not a safetensors file?");
  if (header_size > file_size - 8)
    fail(path, "header length " + std::to_string(header_size) + " exceeds the " +
                   std::to_string(file_size - 8) + " bytes after it (truncated file?)");

  std::string text(header_size, '\0');
  source.read(8, text.data(), text.size(), "the header");
  // The JSON parser keeps one of two equal keys silently; the callback notices the second.
  std::set<std::string> top_keys;
  std::string duplicate;
  const auto note_keys = [&](int depth, nlohmann::json::parse_event_t event, OrderedJson& parsed) {
    if (depth == 1 && event == nlohmann::json::parse_event_t::key && parsed.is_string() &&
        !top_keys.insert(parsed.get<std::string>()).second && duplicate.empty())
      duplicate = parsed.get<std::string>();
    return true;
  };
  OrderedJson header;
  try {
    header = OrderedJson::parse(text, note_keys);
  } catch (const nlohmann::json::exception& e) {
    fail(path, std::string("header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) fail(path, "header is not a JSON object");
  if (!duplicate.empty()) fail(path, "header names \"" + duplicate + "\" twice");

  SafetensorsFile out;
  out.source = path;
  std::vector<Entry> entries;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == kMetadataKey) {
      if (!it.value().is_object()) fail(path, "\"__metadata__\" is not an object");
      for (auto m = it.value().begin(); m != it.value().end(); ++m) {
        if (!m.value().is_string())
          fail(path, "metadata \"" + m.key() + "\" is not a string: " + m.value().dump());
        out.metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    entries.push_back(parse_entry(path, it.key(), it.value(), entries.size()));
  }

  // The byte ranges must tile [0, data_size) exactly: no gaps, overlaps or trailing bytes.
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.begin, a.end, a.header_index) < std::tie(b.begin, b.end, b.header_index);
  });
  const std::uint64_t data_size = file_size - 8 - header_size;
  std::uint64_t covered = 0;
  for (const Entry& e : entries) {
    // Appended, not "[" + std::string&&: GCC 12 warns of overlapping copies there (-Wrestrict,
    // a false positive) once load_safetensors inlines this.
    std::string range = "[";
    range += std::to_string(e.begin) + ", " + std::to_string(e.end) + ")";
    if (e.end > data_size)
      fail(path, "tensor \"" + e.name + "\": data_offsets " + range + " reach past the " +
                     std::to_string(data_size) + " data bytes (truncated file?)");
    if (e.begin < covered)
      fail(path,
           "tensor \"" + e.name + "\": data_offsets " + range + " overlap another tensor's bytes");
    if (e.begin > covered)
      fail(path, "tensor \"" + e.name + "\": data_offsets " + range + " leave a gap after byte " +
                     std::to_string(covered));
    covered = e.end;
  }
  if (covered != data_size)
    fail(path, std::to_string(data_size - covered) + " trailing bytes after the last tensor");

  const std::uint64_t data_start = 8 + header_size;
  for (const Entry& e : entries) {
    Tensor t = Tensor::empty(e.shape, e.dtype);
    source.read(data_start + e.begin, t.raw(), e.end - e.begin,
                ("tensor \"" + e.name + "\"").c_str());
    out.tensors.push_back({e.name, std::move(t)});
  }
  return out;
}

}  // namespace

SafetensorsFile load_safetensors(const std::string& path) {
  // A regular file (a FIFO is refused without waiting for a writer); its tensors are read by
  // offset within the size found here, so no bound beyond the file's own is needed.
  std::uint64_t size = 0;
  const FileDescriptor fd =
      open_regular_file(path, std::numeric_limits<std::uint64_t>::max(), &size);
  return parse_safetensors(FileSource{path, fd.get(), size}, path);
}

SafetensorsFile load_safetensors_bytes(std::span<const std::uint8_t> bytes,
                                       const std::string& name) {
  return parse_safetensors(MemorySource{name, bytes, bytes.size()}, name);
}

}  // namespace epoch
