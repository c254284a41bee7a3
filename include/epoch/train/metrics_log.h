// metrics.jsonl: one JSON object per line, per logged step and per epoch, flushed as written
// so a killed run keeps everything logged so far; the same numbers go to a TensorBoard event
// file beside it (scalar_events.h).
#pragma once

#include <cstdio>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "epoch/train/scalar_events.h"

namespace epoch::train {

class MetricsLog {
 public:
  /// Opens `path` for appending (a resumed run continues the same file) and a new event file
  /// in the directory of `path`.
  explicit MetricsLog(const std::string& path);
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;

  /// Appends `record`; its finite numbers other than "epoch" and "step" also go to the event
  /// file as `<kind>/<field>` at its "step" (a record without an integer "step" does not).
  void write(const nlohmann::json& record);

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  ScalarEvents events_;
};

}  // namespace epoch::train
