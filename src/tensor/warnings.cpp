// The warning sink and the user-facing form of exception messages (warnings.h).
#include "epoch/tensor/warnings.h"

namespace epoch {

std::string without_location(std::string what) {
  for (;;) {
    const std::size_t pos = what.rfind(" [");
    if (pos == std::string::npos || what.empty() || what.back() != ']') return what;
    if (what.compare(pos, 5, " [at ") != 0 && what.compare(pos, 9, " [check `") != 0) return what;
    what.resize(pos);
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
