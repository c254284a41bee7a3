// Internal to the data layer: a byte reader over a file that may be gzip-compressed (detected
// by its magic bytes), shared by the IDX reader and other raw binary dataset formats.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "epoch/data/idx.h"

namespace epoch::data {

/// Sequential reads from a raw or gzip file. Every error is an IoError naming the file.
class ByteReader {
 public:
  /// Opens `path`; throws IoError when it is missing, unreadable, or not a regular file (a
  /// folder, a FIFO or a device such as /dev/zero: refused at once, never read or waited on)
  /// of at most kMaxIdxFileBytes.
  explicit ByteReader(const std::string& path);
  ~ByteReader();
  ByteReader(const ByteReader&) = delete;
  ByteReader& operator=(const ByteReader&) = delete;

  /// Reads up to n bytes into out and returns how many were read: fewer than n only at the end
  /// of the data. Throws IoError for read errors and corrupt or cut-off gzip streams.
  std::size_t read(void* out, std::size_t n);
  /// Bytes left after the current position, for error messages: a raw file's from its size, a
  /// gzip stream's by reading on, stopping at `limit` + 1 (so at most that is returned).
  std::size_t count_rest(std::size_t limit);
  /// For a raw file, the bytes left to read (from its size); -1 for gzip, where only reading
  /// tells.
  std::int64_t raw_remaining() const;
  bool is_gzip() const { return gz_ != nullptr; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::FILE* raw_ = nullptr;
  std::int64_t raw_size_ = 0;
  std::int64_t raw_position_ = 0;
  void* gz_ = nullptr;  // gzFile, kept opaque so zlib.h stays out of this header
};

}  // namespace epoch::data
