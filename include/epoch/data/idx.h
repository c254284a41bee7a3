// IDX files (the MNIST and Fashion-MNIST format), raw or gzip-compressed.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "epoch/tensor/tensor.h"

namespace epoch::data {

/// Largest element count read_idx accepts; larger dims are refused before allocating (zero
/// dims aside: 0 x 2^20 x 2^20 is refused too).
inline constexpr std::int64_t kMaxIdxElements = std::int64_t{1} << 31;

/// Largest IDX file read_idx opens (raw or gzip): the largest payload and its header, with a
/// thousandth more for gzip's framing of incompressible data (5 bytes per 64 KB block).
inline constexpr std::uint64_t kMaxIdxFileBytes =
    (std::uint64_t{1} << 31) + (std::uint64_t{1} << 21);

/// Reads an IDX file of unsigned bytes (type code 0x08) with 1 to 4 big-endian dims.
/// Gzip compression is detected by the magic bytes 1f 8b, whatever the file is called.
/// ensures: a contiguous CPU u8 tensor whose shape is the file's dims.
/// Throws IoError naming the file for a missing file, a directory, a FIFO or device (refused at
/// once, never read), a file over kMaxIdxFileBytes, a wrong magic or type code,
/// a truncated header or payload (with expected vs actual bytes), trailing bytes, corrupt
/// gzip data, or dims over kMaxIdxElements elements.
Tensor read_idx(const std::string& path);

/// read_idx over bytes already in memory (raw or gzip; the same checks and messages, `name` in
/// place of the path).
Tensor read_idx_bytes(std::span<const std::uint8_t> bytes, const std::string& name);

}  // namespace epoch::data
