// TensorBoard scalar event files (see scalar_events.h). The format: a TFRecord file (each record
// is a little-endian uint64 length, a masked CRC-32C of those 8 bytes, the data and a masked
// CRC-32C of the data) of `tensorflow.Event` protobuf messages, of which we need only
// wall_time (1), step (2), file_version (3), summary (5: repeated Value {tag 1, simple_value 2})
// and session_log (7: SessionLog {status 1}).
#include "epoch/train/scalar_events.h"

#include <unistd.h>

#include <array>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "epoch/tensor/error.h"

namespace epoch::train {
namespace {

constexpr std::array<std::uint32_t, 256> make_crc32c_table() {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    table[i] = c;
  }
  return table;
}
constexpr std::array<std::uint32_t, 256> kCrc32cTable = make_crc32c_table();

std::uint32_t crc32c(const std::string& bytes) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (const char ch : bytes)
    crc = kCrc32cTable[(crc ^ static_cast<std::uint8_t>(ch)) & 0xFF] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

// TFRecord masks its CRCs so that a CRC of data that itself holds CRCs stays well distributed.
std::uint32_t masked_crc32c(const std::string& bytes) {
  const std::uint32_t crc = crc32c(bytes);
  return ((crc >> 15) | (crc << 17)) + 0xA282EAD8u;
}

void put_fixed(std::string& out, std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
}

void put_varint(std::string& out, std::uint64_t value) {
  for (; value >= 0x80; value >>= 7) out.push_back(static_cast<char>((value & 0x7F) | 0x80));
  out.push_back(static_cast<char>(value));
}

// A protobuf key: field number and wire type (0 varint, 1 fixed64, 2 length-delimited,
// 5 fixed32).
void put_key(std::string& out, int field, int wire_type) {
  put_varint(out, static_cast<std::uint64_t>(field << 3 | wire_type));
}

void put_bytes(std::string& out, int field, const std::string& bytes) {
  put_key(out, field, 2);
  put_varint(out, bytes.size());
  out += bytes;
}

std::string event_header(double wall_time, std::int64_t step) {
  std::string event;
  put_key(event, 1, 1);
  put_fixed(event, std::bit_cast<std::uint64_t>(wall_time), 8);
  if (step != 0) {  // protobuf leaves out a field at its default
    put_key(event, 2, 0);
    put_varint(event, static_cast<std::uint64_t>(step));  // int64: two's complement
  }
  return event;
}

double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

}  // namespace

ScalarEvents::ScalarEvents(const std::string& dir) {
  const double now = unix_seconds();
  const std::string base = (std::filesystem::path(dir) / "events.out.tfevents.").string() +
                           std::to_string(static_cast<std::int64_t>(now)) + "." + host_name() +
                           "." + std::to_string(::getpid());
  // A run resumed within the same second by the same process (the tests do) gets a suffix
  // rather than overwriting or appending to the first file.
  for (int attempt = 0; file_ == nullptr; ++attempt) {
    path_ = attempt == 0 ? base : base + "." + std::to_string(attempt);
    file_ = std::fopen(path_.c_str(), "wbx");
    if (file_ == nullptr && (errno != EEXIST || attempt == 99))
      EPOCH_THROW(IoError, path_, ": cannot open for writing: ", std::strerror(errno));
  }
  std::string event = event_header(now, 0);
  put_bytes(event, 3, "brain.Event:2");
  try {
    write_record(event);
  } catch (...) {  // a throwing constructor runs no destructor
    std::fclose(file_);
    throw;
  }
}

ScalarEvents::~ScalarEvents() {
  if (file_ != nullptr) std::fclose(file_);
}

void ScalarEvents::write(std::int64_t step,
                         const std::vector<std::pair<std::string, double>>& scalars) {
  std::string summary;
  for (const auto& [tag, value] : scalars) {
    std::string v;
    put_bytes(v, 1, tag);
    put_key(v, 2, 5);
    put_fixed(v, std::bit_cast<std::uint32_t>(static_cast<float>(value)), 4);
    put_bytes(summary, 1, v);
  }
  std::string event = event_header(unix_seconds(), step);
  put_bytes(event, 5, summary);
  write_record(event);
}

void ScalarEvents::restart(std::int64_t step) {
  constexpr std::uint64_t kStart = 1;  // SessionLog.SessionStatus.START
  std::string session_log;
  put_key(session_log, 1, 0);
  put_varint(session_log, kStart);
  std::string event = event_header(unix_seconds(), step);
  put_bytes(event, 7, session_log);
  write_record(event);
}

void ScalarEvents::write_record(const std::string& event) {
  std::string length;
  put_fixed(length, event.size(), 8);
  std::string record = length;
  put_fixed(record, masked_crc32c(length), 4);
  record += event;
  put_fixed(record, masked_crc32c(event), 4);
  if (std::fwrite(record.data(), 1, record.size(), file_) != record.size() ||
      std::fflush(file_) != 0)
    EPOCH_THROW(IoError, path_, ": write failed: ", std::strerror(errno));
}

}  // namespace epoch::train
