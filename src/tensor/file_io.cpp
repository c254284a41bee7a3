// Atomic file replacement (temporary file beside the target, rename over it, fsync when the
// file must survive a crash) and the file-descriptor owner (see file_io.h).
#include "epoch/tensor/file_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
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
