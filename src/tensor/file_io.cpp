// Atomic file replacement (temporary file beside the target, rename over it, fsync when the
// file must survive a crash) and the file-descriptor owner (see file_io.h).
#include "epoch/tensor/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <cstdio>
#include <filesystem>

#include "epoch/tensor/error.h"

namespace epoch {

FileDescriptor::~FileDescriptor() {
  if (fd_ >= 0) ::close(fd_);
}

FileDescriptor& FileDescriptor::operator=(FileDescriptor&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

int FileDescriptor::close_now() {
  if (fd_ < 0) return 0;
  const int rc = ::close(release());
  return rc == 0 ? 0 : errno;
}

namespace {

std::string errno_text(int err) { return std::strerror(err); }

/// What a non-regular file is, for the refusal.
std::string kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "is a directory, not a file";
  if (S_ISFIFO(mode)) return "is a FIFO, not a regular file";
  if (S_ISCHR(mode)) return "is a character device, not a regular file";
  if (S_ISBLK(mode)) return "is a block device, not a regular file";
  if (S_ISSOCK(mode)) return "is a socket, not a regular file";
  return "is not a regular file";
}

}  // namespace

std::string describe_bytes(std::uint64_t bytes) {
  char text[64];
  if (bytes < 1000) {
    std::snprintf(text, sizeof text, "%llu bytes", static_cast<unsigned long long>(bytes));
  } else {
    const char* units[] = {"KB", "MB", "GB", "TB", "PB", "EB"};
    double v = static_cast<double>(bytes) / 1000.0;
    int u = 0;
    while (v >= 1000.0 && u < 5) v /= 1000.0, ++u;
    std::snprintf(text, sizeof text, v < 10 ? "%.1f %s" : "%.0f %s", v, units[u]);
  }
  return text;
}

FileDescriptor open_regular_file(const std::string& path, std::uint64_t max_bytes,
                                 std::uint64_t* size) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below.
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (fd.get() < 0) {
    const int err = errno;
    if (err == ENOENT) EPOCH_THROW(IoError, path, ": no such file");
    if (err == EISDIR) EPOCH_THROW(IoError, path, ": is a directory, not a file");
    EPOCH_THROW(IoError, path, ": cannot open: ", errno_text(err));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0)
    EPOCH_THROW(IoError, path, ": cannot stat: ", errno_text(errno));
  if (!S_ISREG(st.st_mode)) EPOCH_THROW(IoError, path, ": ", kind_of(st.st_mode));
  const auto bytes = static_cast<std::uint64_t>(st.st_size);
  if (bytes > max_bytes)
    EPOCH_THROW(IoError, path, ": is ", describe_bytes(bytes), ", more than the ",
                describe_bytes(max_bytes), " epoch reads from a file of this kind");
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags >= 0) (void)::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
  if (size != nullptr) *size = bytes;
  return fd;
}

std::vector<std::uint8_t> read_regular_file(const std::string& path, std::uint64_t max_bytes) {
  std::uint64_t size = 0;
  const FileDescriptor fd = open_regular_file(path, max_bytes, &size);
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(size));
  std::uint64_t got = 0;
  for (;;) {
    if (got == bytes.size()) {
      // The file grew since the stat: read on, within the bound.
      if (bytes.size() >= max_bytes) {
        char probe = 0;
        const ssize_t r = ::read(fd.get(), &probe, 1);
        if (r == 0) break;
        if (r > 0)
          EPOCH_THROW(IoError, path, ": grew past the ", describe_bytes(max_bytes),
                      " epoch reads from a file of this kind while being read");
        if (errno == EINTR) continue;
        EPOCH_THROW(IoError, path, ": read error: ", errno_text(errno));
      }
      bytes.resize(static_cast<std::size_t>(
          std::min<std::uint64_t>(max_bytes, std::max<std::uint64_t>(2 * bytes.size(), 4096))));
    }
    const ssize_t r = ::read(fd.get(), bytes.data() + got,
                             std::min<std::uint64_t>(bytes.size() - got, std::uint64_t{1} << 30));
    if (r < 0) {
      if (errno == EINTR) continue;
      EPOCH_THROW(IoError, path, ": read error: ", errno_text(errno));
    }
    if (r == 0) break;
    got += static_cast<std::uint64_t>(r);
  }
  bytes.resize(static_cast<std::size_t>(got));
  return bytes;
}

std::string read_text_file(const std::string& path, std::uint64_t max_bytes) {
  const std::vector<std::uint8_t> bytes = read_regular_file(path, max_bytes);
  return std::string(bytes.begin(), bytes.end());
}

namespace {

/// The temporary file a write goes into; removed on scope exit unless it was renamed.
class TempFile {
 public:
  explicit TempFile(const std::string& target) : target_(target) {
    static std::atomic<unsigned> counter{0};
    int err = 0;
    for (int attempt = 0; attempt < 100; ++attempt) {
      path_ = target + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
      fd_ = FileDescriptor(::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666));
      err = errno;
      if (fd_.get() >= 0 || err != EEXIST) break;
    }
    if (fd_.get() < 0)
      EPOCH_THROW(IoError, target_,
                  ": cannot create a temporary file beside it: ", errno_text(err));
    created_ = true;
  }
  ~TempFile() {
    if (created_ && !renamed_) ::unlink(path_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  /// Appends all of `bytes`.
  void write(std::span<const std::uint8_t> bytes) {
    const std::uint8_t* p = bytes.data();
    std::size_t n = bytes.size();
    while (n > 0) {
      const ssize_t w = ::write(fd_.get(), p, std::min<std::size_t>(n, std::size_t{1} << 30));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        const int err = w < 0 ? errno : EIO;
        EPOCH_THROW(IoError, target_, ": write failed: ", errno_text(err),
                    " (the previous file, if any, is unchanged)");
      }
      p += w;
      n -= static_cast<std::size_t>(w);
    }
  }

  /// (fsync,) close and rename over the target (, then fsync the directory).
  void commit(bool durable) {
    if (durable && ::fsync(fd_.get()) != 0)
      EPOCH_THROW(IoError, target_, ": fsync failed: ", errno_text(errno));
    if (const int err = fd_.close_now())
      EPOCH_THROW(IoError, target_, ": close failed: ", errno_text(err));
    if (::rename(path_.c_str(), target_.c_str()) != 0)
      EPOCH_THROW(IoError, target_,
                  ": cannot rename the temporary file over it: ", errno_text(errno));
    renamed_ = true;
    if (!durable) return;
    const std::filesystem::path parent = std::filesystem::path(target_).parent_path();
    const std::string dir = parent.empty() ? std::string(".") : parent.string();
    FileDescriptor dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dfd.get() < 0)
      EPOCH_THROW(IoError, target_,
                  ": written, but cannot open its directory to fsync it: ", errno_text(errno));
    // Some file systems cannot fsync a directory (EINVAL); the rename is then as durable as
    // they make it.
    if (::fsync(dfd.get()) != 0 && errno != EINVAL)
      EPOCH_THROW(IoError, target_,
                  ": written, but fsync of its directory failed: ", errno_text(errno));
  }

 private:
  std::string target_;
  std::string path_;
  FileDescriptor fd_;
  bool created_ = false;
  bool renamed_ = false;
};

}  // namespace

void write_file_atomic(const std::string& path, std::span<const std::uint8_t> bytes, bool durable) {
  TempFile tmp(path);
  tmp.write(bytes);
  tmp.commit(durable);
}

void write_file_atomic(const std::string& path,
                       const std::function<void(const AppendBytes& append)>& fill, bool durable) {
  TempFile tmp(path);
  fill([&tmp](std::span<const std::uint8_t> bytes) { tmp.write(bytes); });
  tmp.commit(durable);
}

}  // namespace epoch
