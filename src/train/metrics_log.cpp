// Append-only JSON-lines metrics file and its TensorBoard scalars (see metrics_log.h).
#include "epoch/train/metrics_log.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "epoch/tensor/error.h"
#include "epoch/tensor/file_io.h"
#include "epoch/train/run_dir.h"

namespace epoch::train {
namespace {

std::string directory_of(const std::string& path) {
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  return dir.empty() ? "." : dir.string();
}

// The largest step of the records a metrics file holds, -1 when it holds none.
std::int64_t last_logged_step(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return -1;
  (void)open_regular_file(path, kMaxLogFileBytes);  // a FIFO or a device is refused, not read
  std::ifstream in(path);
  std::int64_t last = -1;
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json record = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    const auto step = record.is_object() ? record.find("step") : record.end();
    if (step != record.end() && step->is_number_integer())
      last = std::max(last, step->get<std::int64_t>());
  }
  return last;
}

}  // namespace

// The event file is opened first so that a failure there leaves no metrics file open. A
// resumed run opens a new event file: TensorBoard reads a folder's files in order, and the
// restart marked at the step after the last one metrics.jsonl kept (the trainers truncate it
// to the checkpoint first) has it drop the orphaned steps a killed run logged past its
// checkpoint, which the resumed run logs again.
MetricsLog::MetricsLog(const std::string& path) : path_(path), events_(directory_of(path)) {
  if (const std::int64_t last = last_logged_step(path); last >= 0) events_.restart(last + 1);
  file_ = std::fopen(path.c_str(), "a");
  if (file_ == nullptr)
    EPOCH_THROW(IoError, path, ": cannot open for writing: ", std::strerror(errno));
  record_files(directory_of(path), {std::filesystem::path(path).filename().string(),
                                    std::filesystem::path(events_.path()).filename().string()});
}

MetricsLog::~MetricsLog() {
  if (file_ != nullptr) std::fclose(file_);
}

void MetricsLog::write(const nlohmann::json& record) {
  const std::string line = record.dump() + "\n";
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0)
    EPOCH_THROW(IoError, path_, ": write failed: ", std::strerror(errno));

  const auto step = record.is_object() ? record.find("step") : record.end();
  if (step == record.end() || !step->is_number_integer()) return;
  const auto kind = record.find("kind");
  const std::string prefix =
      kind != record.end() && kind->is_string() ? kind->get<std::string>() + "/" : "";
  std::vector<std::pair<std::string, double>> scalars;
  for (const auto& [field, value] : record.items()) {
    if (field == "epoch" || field == "step" || !value.is_number()) continue;
    const double x = value.get<double>();
    if (std::isfinite(x)) scalars.emplace_back(prefix + field, x);
  }
  if (!scalars.empty()) events_.write(step->get<std::int64_t>(), scalars);
}

}  // namespace epoch::train
