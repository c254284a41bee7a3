// metrics.jsonl: one JSON object per line, per logged step and per epoch, flushed as written
// so a killed run keeps everything logged so far.
#pragma once

#include <cstdio>
#include <nlohmann/json_fwd.hpp>
#include <string>

namespace epoch::train {

class MetricsLog {
 public:
  /// Opens `path` for appending (a resumed run continues the same file).
  explicit MetricsLog(const std::string& path);
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;

  void write(const nlohmann::json& record);

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
};

}  // namespace epoch::train
