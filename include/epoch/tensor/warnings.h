// Warnings for the user, on one stream (stderr), one line each without source locations;
// after the first few of a kind, the rest are counted and summarized in one line.
#pragma once

#include <cstdint>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>

namespace epoch {

/// The message of an exception as a user reads it: without the " [at file:line]" and
/// " [check `...` failed at file:line]" suffixes that EPOCH_THROW and EPOCH_CHECK add for
/// developers (all of them, when a message wraps another).
std::string without_location(std::string what);

/// A thread-safe warning sink. warn(kind, message) prints "epoch: warning: <message>" for the
/// first `shown_per_kind` warnings of each kind and counts the rest; summarize() (also run by
/// the destructor) prints one line per kind with warnings not shown. A null stream prints
/// nothing but still counts.
class Warnings {
 public:
  explicit Warnings(std::FILE* out = stderr, int shown_per_kind = 5);
  ~Warnings();
  Warnings(const Warnings&) = delete;
  Warnings& operator=(const Warnings&) = delete;

  void warn(const std::string& kind, const std::string& message);
  /// Warnings of `kind` so far, shown or not.
  std::int64_t count(const std::string& kind) const;
  void summarize();

 private:
  std::FILE* out_;
  int shown_per_kind_;
  mutable std::mutex mutex_;
  std::map<std::string, std::int64_t> counts_;
  std::map<std::string, std::int64_t> summarized_;
};

}  // namespace epoch
