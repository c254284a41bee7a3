// Append-only JSON-lines metrics file (see metrics_log.h).
#include "epoch/train/metrics_log.h"

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "epoch/tensor/error.h"

namespace epoch::train {

MetricsLog::MetricsLog(const std::string& path) : path_(path) {
  file_ = std::fopen(path.c_str(), "a");
  if (file_ == nullptr)
    EPOCH_THROW(IoError, path, ": cannot open for writing: ", std::strerror(errno));
}

MetricsLog::~MetricsLog() {
  if (file_ != nullptr) std::fclose(file_);
}

void MetricsLog::write(const nlohmann::json& record) {
  const std::string line = record.dump() + "\n";
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0)
    EPOCH_THROW(IoError, path_, ": write failed: ", std::strerror(errno));
}

}  // namespace epoch::train
