// Run directory locking, state, clean-up and retention (see run_dir.h).
#include "epoch/train/run_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <span>

#include "epoch/tensor/error.h"
#include "epoch/tensor/file_io.h"

namespace epoch::train {
namespace fs = std::filesystem;

RunDirLock::RunDirLock(const std::string& dir) : dir_(dir) {
  std::error_code ec;
  // The folders this lock creates, outermost first, so a failed run can take them away.
  std::vector<std::string> missing;
  for (fs::path p = fs::path(dir).lexically_normal(); !p.empty() && !fs::exists(p, ec);
       p = p.parent_path()) {
    missing.push_back(p.string());
    if (p == p.parent_path()) break;
  }
  fs::create_directories(dir, ec);
  if (ec) EPOCH_THROW(IoError, dir, ": cannot create: ", ec.message());
  created_.assign(missing.rbegin(), missing.rend());
  const std::string path = (fs::path(dir) / ".lock").string();
  // (never through a link, nor into anything but a regular file: the pid is written into it)
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
  if (fd_ < 0 && errno == ELOOP)
    EPOCH_THROW(IoError, path, ": is a link, not a run's lock file (epoch writes its pid there)");
  if (fd_ < 0) EPOCH_THROW(IoError, path, ": cannot open: ", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    EPOCH_THROW(IoError, path, ": is not a regular file (a run's lock file is epoch's own)");
  }
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

namespace {

/// True when `dir` holds nothing but `except` (and an empty checkpoints/ folder), or is not
/// there.
bool holds_only(const fs::path& dir, const std::string& except) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return true;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name == except) continue;
    if (name == "checkpoints" && fs::is_directory(it->path(), ec) && fs::is_empty(it->path(), ec))
      continue;
    return false;
  }
  return !ec;
}

/// True when `dir` holds an epoch run: its record, or config.json (a run written before the
/// record existed, or one that wrote nothing more).
bool holds_a_run(const fs::path& dir) {
  std::error_code ec;
  return fs::exists(dir / kRunRecordName, ec) || fs::exists(dir / "config.json", ec);
}

}  // namespace

RunDirLock::~RunDirLock() {
  if (fd_ < 0) return;
  // A run that failed before writing anything leaves no folder holding only its lock.
  // A folder that holds no run (a refused one of other files) keeps none of the lock either.
  std::error_code ec;
  const fs::path d = dir_;
  if (!holds_a_run(d)) {
    fs::remove(d / ".lock", ec);
    fs::remove(d / "checkpoints", ec);  // only when empty
    if (holds_only(d, ""))
      for (auto it = created_.rbegin(); it != created_.rend(); ++it)
        if (!fs::remove(*it, ec)) break;  // (not empty: a folder of someone else's now)
  }
  ::close(fd_);  // releases the lock
}

void check_run_dir_allowed(const std::string& dir) {
  std::error_code ec;
  const fs::path target = fs::weakly_canonical(fs::absolute(dir, ec), ec);
  if (ec) return;  // the lock's creation names what is wrong
  if (target == target.root_path())
    EPOCH_THROW(ConfigError, "--out ", dir,
                ": the root folder cannot be a run folder; choose a folder of its own");
  if (const char* home = std::getenv("HOME"); home != nullptr && home[0] != '\0') {
    const fs::path h = fs::weakly_canonical(home, ec);
    if (!ec && target == h)
      EPOCH_THROW(ConfigError, "--out ", dir,
                  ": the home folder cannot be a run folder; choose a folder of its own");
  }
}

std::string describe_contents(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name == ".lock") continue;
    names.push_back(name + (it->is_directory(ec) ? "/" : ""));
  }
  std::sort(names.begin(), names.end());
  std::string out;
  const std::size_t shown = std::min<std::size_t>(names.size(), 3);
  for (std::size_t i = 0; i < shown; ++i)
    out += (i == 0 ? "" : i + 1 == shown && names.size() == shown ? " and " : ", ") + names[i];
  if (names.size() > shown) out += " and " + std::to_string(names.size() - shown) + " more";
  return out;
}

RunState run_state(const std::string& dir) {
  std::error_code ec;
  const fs::path d = dir;
  if (!holds_a_run(d)) return holds_only(d, ".lock") ? RunState::empty : RunState::foreign;
  if (fs::exists(d / "checkpoints" / "last.safetensors", ec)) return RunState::checkpointed;
  return RunState::started;
}

std::set<std::string> recorded_files(const std::string& dir) {
  const fs::path path = fs::path(dir) / kRunRecordName;
  std::error_code ec;
  if (!fs::exists(path, ec)) return {};
  const std::string text = read_text_file(path.string(), kMaxJsonFileBytes);
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("files") || !j["files"].is_array())
    EPOCH_THROW(IoError, path.string(), ": not an epoch run record (expected {\"files\": [...]})");
  std::set<std::string> files;
  for (const nlohmann::json& f : j["files"]) {
    if (!f.is_string())
      EPOCH_THROW(IoError, path.string(), ": \"files\" holds a non-string entry: ", f.dump());
    files.insert(f.get<std::string>());
  }
  return files;
}

void record_files(const std::string& dir, const std::vector<std::string>& added,
                  const std::vector<std::string>& removed) {
  std::set<std::string> files = recorded_files(dir);
  std::error_code ec;
  bool changed = !fs::exists(fs::path(dir) / kRunRecordName, ec);
  for (const std::string& f : added) changed = files.insert(f).second || changed;
  for (const std::string& f : removed) changed = files.erase(f) > 0 || changed;
  if (!changed) return;
  const nlohmann::json j{{"format", "epoch-run-1"},
                         {"what",
                          "the files this epoch run wrote: the only ones it replaces or "
                          "removes"},
                         {"files", files}};
  const std::string text = j.dump(1) + "\n";
  write_file_atomic((fs::path(dir) / kRunRecordName).string(),
                    std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()),
                    false);
}

void adopt_unrecorded_run(const std::string& dir) {
  std::error_code ec;
  const fs::path d = dir;
  if (fs::exists(d / kRunRecordName, ec) || !fs::exists(d / "config.json", ec)) return;
  static const std::regex own_top(
      R"(config\.json|metrics\.jsonl|report\.html|events\.out\.tfevents\..+)");
  static const std::regex own_checkpoint(R"((last|best|epoch-[0-9]+)\.safetensors)");
  std::vector<std::string> files;
  for (fs::directory_iterator it(d, ec), end; !ec && it != end; it.increment(ec))
    if (const std::string name = it->path().filename().string();
        it->is_regular_file(ec) && std::regex_match(name, own_top))
      files.push_back(name);
  for (fs::directory_iterator it(d / "checkpoints", ec), end; !ec && it != end; it.increment(ec))
    if (const std::string name = it->path().filename().string();
        it->is_regular_file(ec) && std::regex_match(name, own_checkpoint))
      files.push_back("checkpoints/" + name);
  record_files(dir, files);
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
  (void)open_regular_file(path.string(), kMaxLogFileBytes);  // a FIFO or a device is refused
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
  static const std::regex epoch_file(R"(checkpoints/epoch-([0-9]+)\.safetensors)");
  std::map<std::int64_t, std::string> found;  // the run's own, by epoch
  for (const std::string& name : recorded_files(dir)) {
    std::smatch m;
    if (std::regex_match(name, m, epoch_file) && m[1].length() < 18)
      found[std::stoll(m[1].str())] = name;
  }
  auto excess = static_cast<std::int64_t>(found.size()) - keep;
  std::vector<std::string> removed;
  std::error_code ec;
  for (auto it = found.begin(); excess > 0 && it != found.end(); ++it, --excess) {
    const fs::path path = fs::path(dir) / it->second;
    if (!fs::remove(path, ec) && ec)
      EPOCH_THROW(IoError, path.string(), ": cannot remove: ", ec.message());
    removed.push_back(it->second);
  }
  if (!removed.empty()) record_files(dir, {}, removed);
}

}  // namespace epoch::train
