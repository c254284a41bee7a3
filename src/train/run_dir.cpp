// Run directory locking, state, clean-up and retention (see run_dir.h).
#include "epoch/train/run_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>

#include "epoch/tensor/error.h"
#include "epoch/tensor/file_io.h"

namespace epoch::train {
namespace fs = std::filesystem;

RunDirLock::RunDirLock(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) EPOCH_THROW(IoError, dir, ": cannot create: ", ec.message());
  const std::string path = (fs::path(dir) / ".lock").string();
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) EPOCH_THROW(IoError, path, ": cannot open: ", std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char holder[32] = {};
    const ssize_t n = ::pread(fd_, holder, sizeof holder - 1, 0);
    ::close(fd_);
    fd_ = -1;
    if (err == EWOULDBLOCK) {
      const std::string pid = n > 0 ? std::string(holder, static_cast<std::size_t>(n)) : "";
      EPOCH_THROW(ConfigError, dir, " is in use by another epoch process",
                  pid.empty() ? std::string() : " (pid " + pid + ")",
                  ": wait for it to finish, or choose another --out");
    }
    EPOCH_THROW(IoError, path, ": cannot lock: ", std::strerror(err));
  }
  const std::string pid = std::to_string(::getpid());
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) < 0) {
    // The pid is only for messages; the lock itself holds.
  }
}

RunDirLock::~RunDirLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

RunState run_state(const std::string& dir) {
  std::error_code ec;
  const fs::path d = dir;
  if (fs::exists(d / "checkpoints" / "last.safetensors", ec)) return RunState::checkpointed;
  if (fs::exists(d / "config.json", ec) || fs::exists(d / "metrics.jsonl", ec))
    return RunState::started;
  return RunState::empty;
}

int remove_orphaned_temporaries(const std::string& dir) {
  const fs::path ckpt = fs::path(dir) / "checkpoints";
  std::error_code ec;
  if (!fs::is_directory(ckpt, ec)) return 0;
  static const std::regex temporary(R"(.+\.tmp\.[0-9]+\.[0-9]+)");
  int removed = 0;
  for (fs::directory_iterator it(ckpt, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (std::regex_match(name, temporary) && fs::remove(it->path(), ec)) ++removed;
  }
  return removed;
}

void truncate_metrics_after(const std::string& dir, std::int64_t step) {
  const fs::path path = fs::path(dir) / "metrics.jsonl";
  std::error_code ec;
  if (!fs::exists(path, ec)) return;
  std::ifstream in(path);
  if (!in) EPOCH_THROW(IoError, path.string(), ": cannot read");
  std::string kept, line;
  bool changed = false;
  while (std::getline(in, line)) {
    const nlohmann::json record = nlohmann::json::parse(line, nullptr, false);
    const bool keep = record.is_object() && record.contains("step") &&
                      record["step"].is_number_integer() &&
                      record["step"].get<std::int64_t>() <= step;
    if (keep) {
      kept += line + "\n";
    } else {
      changed = true;
    }
  }
  if (!changed) return;
  write_file_atomic(path.string(),
                    std::span(reinterpret_cast<const std::uint8_t*>(kept.data()), kept.size()),
                    true);
}

void publish_copy(const std::string& from, const std::string& to) {
  const std::string temporary = to + ".tmp." + std::to_string(::getpid()) + ".0";
  std::error_code ec;
  fs::remove(temporary, ec);
  fs::create_hard_link(from, temporary, ec);
  if (ec) {
    ec.clear();
    fs::copy_file(from, temporary, fs::copy_options::overwrite_existing, ec);
  }
  if (!ec) fs::rename(temporary, to, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(temporary, ignored);
    EPOCH_THROW(IoError, to, ": cannot write: ", ec.message());
  }
}

std::string epoch_checkpoint_name(std::int64_t epoch) {
  return "epoch-" + std::to_string(epoch) + ".safetensors";
}

void prune_epoch_checkpoints(const std::string& dir, std::int64_t keep) {
  if (keep < 0) return;
  const fs::path ckpt = fs::path(dir) / "checkpoints";
  static const std::regex epoch_file(R"(epoch-([0-9]+)\.safetensors)");
  std::map<std::int64_t, fs::path> found;  // by epoch
  std::error_code ec;
  for (fs::directory_iterator it(ckpt, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::smatch m;
    if (std::regex_match(name, m, epoch_file) && m[1].length() < 18)
      found[std::stoll(m[1].str())] = it->path();
  }
  auto excess = static_cast<std::int64_t>(found.size()) - keep;
  for (auto it = found.begin(); excess > 0 && it != found.end(); ++it, --excess) {
    if (!fs::remove(it->second, ec) && ec)
      EPOCH_THROW(IoError, it->second.string(), ": cannot remove: ", ec.message());
  }
}

}  // namespace epoch::train
