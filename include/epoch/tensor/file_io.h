// Writing a file so that readers never see it half-written (checkpoints, dataset files), and
// the owner of a POSIX file descriptor that the library's readers and writers share.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace epoch {

/// A POSIX file descriptor, closed when its owner goes; -1 holds none.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd = -1) noexcept : fd_(fd) {}
  ~FileDescriptor();
  FileDescriptor(FileDescriptor&& other) noexcept : fd_(other.release()) {}
  FileDescriptor& operator=(FileDescriptor&& other) noexcept;
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;

  int get() const { return fd_; }
  /// Gives up ownership: the caller closes the descriptor.
  int release() { return std::exchange(fd_, -1); }
  /// Closes now, returning close()'s errno (0 on success, and when none was held).
  int close_now();

 private:
  int fd_;
};

/// The largest files epoch reads whole, by kind: what a reader of that kind refuses beyond.
inline constexpr std::uint64_t kMaxJsonFileBytes = std::uint64_t{64} << 20;    // config, study
inline constexpr std::uint64_t kMaxImageFileBytes = std::uint64_t{1} << 30;    // JPEG, PNG
inline constexpr std::uint64_t kMaxLogFileBytes = std::uint64_t{4} << 30;      // metrics.jsonl

/// Opens `path` for reading when it is a regular file of at most `max_bytes` bytes (a FIFO is
/// refused without blocking: the open does not wait for a writer). IoError naming `path` and
/// what it is otherwise ("no such file", "is a directory, not a file", "is a FIFO, not a
/// regular file", "is 5.2 GB, more than the 4 GB a metrics file may hold", ...).
/// ensures: the descriptor reads blocking; *size (when given) is the file's size at open.
FileDescriptor open_regular_file(const std::string& path, std::uint64_t max_bytes,
                                 std::uint64_t* size = nullptr);

/// The whole of a regular file of at most `max_bytes` bytes (open_regular_file's checks; a
/// read error is an IoError, never a short result).
std::vector<std::uint8_t> read_regular_file(const std::string& path, std::uint64_t max_bytes);

/// read_regular_file as text.
std::string read_text_file(const std::string& path, std::uint64_t max_bytes);

/// "3.2 GB", "512 KB", "17 bytes": a size for messages.
std::string describe_bytes(std::uint64_t bytes);

/// Writes `bytes` to `path` through a temporary file beside it and a rename, so a reader
/// never sees a partial file under `path` and a failure leaves the old file (if any) intact.
/// durable: also fsync the file before the rename and the directory after it (checkpoints);
/// without it, datasets of many small files stay fast to write. IoError naming `path`.
/// ensures: on success no temporary file remains; on failure neither does one (the temporary
///          file is `path` + ".tmp.<pid>.<n>", created with O_EXCL).
void write_file_atomic(const std::string& path, std::span<const std::uint8_t> bytes, bool durable);

/// Appends bytes to the temporary file of a write_file_atomic in progress (IoError naming the
/// target when the write fails).
using AppendBytes = std::function<void(std::span<const std::uint8_t>)>;

/// write_file_atomic for a file produced in pieces, so that no one buffer has to hold it all
/// (a checkpoint copies one tensor at a time from the device): `fill` is called once and
/// appends the bytes, in order, through the function it is given. Anything `fill` throws
/// leaves `path` as it was, removes the temporary file and propagates unchanged.
void write_file_atomic(const std::string& path,
                       const std::function<void(const AppendBytes& append)>& fill, bool durable);

}  // namespace epoch
