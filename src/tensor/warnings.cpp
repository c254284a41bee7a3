// The warning sink and the user-facing form of exception messages (warnings.h).
#include "epoch/tensor/warnings.h"

#include <algorithm>
#include <cctype>

namespace epoch {

std::string without_location(std::string what) {
  // Every marker, wherever a wrapping message left it: " [at FILE:LINE]" and
  // " [check `EXPR` failed at FILE:LINE]" (FILE:LINE ends in digits before the bracket).
  for (std::size_t from = 0;;) {
    const std::size_t at = what.find(" [at ", from), check = what.find(" [check `", from);
    const std::size_t pos = std::min(at, check);
    if (pos == std::string::npos) return what;
    // (an expression may hold brackets: its marker ends after "` failed at ")
    const std::size_t failed = pos == check ? what.find("` failed at ", pos) : pos;
    const std::size_t close =
        failed == std::string::npos ? std::string::npos : what.find(']', failed + 5);
    const bool located = close != std::string::npos && close > pos &&
                         std::isdigit(static_cast<unsigned char>(what[close - 1])) != 0 &&
                         what.rfind(':', close) > pos;
    if (!located) {
      from = pos + 2;
      continue;
    }
    what.erase(pos, close + 1 - pos);
    from = pos;
  }
}

Warnings::Warnings(std::FILE* out, int shown_per_kind)
    : out_(out), shown_per_kind_(shown_per_kind) {}

Warnings::~Warnings() { summarize(); }

void Warnings::warn(const std::string& kind, const std::string& message) {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::int64_t n = ++counts_[kind];
  if (out_ != nullptr && n <= shown_per_kind_)
    std::fprintf(out_, "epoch: warning: %s\n", without_location(message).c_str());
}

std::int64_t Warnings::count(const std::string& kind) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = counts_.find(kind);
  return it == counts_.end() ? 0 : it->second;
}

void Warnings::summarize() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [kind, n] : counts_) {
    const std::int64_t hidden = n - shown_per_kind_ - summarized_[kind];
    if (hidden <= 0) continue;
    summarized_[kind] += hidden;
    if (out_ != nullptr)
      std::fprintf(out_, "epoch: warning: %lld more %s not shown\n", static_cast<long long>(hidden),
                   kind.c_str());
  }
}

}  // namespace epoch
