// `epoch report DIR`: which report a folder gets, written beside its files (report.h).
#include "epoch/report/report.h"

#include <cstdint>
#include <filesystem>
#include <span>

#include "epoch/tensor/error.h"
#include "epoch/tensor/file_io.h"

namespace epoch::report {
namespace fs = std::filesystem;

std::string write_report(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) EPOCH_THROW(IoError, dir, ": not a folder");
  const bool is_study = fs::exists(fs::path(dir) / "study.json", ec);
  const std::string html = is_study ? study_report_html(dir) : run_report_html(dir);
  const std::string path = (fs::path(dir) / "report.html").string();
  write_file_atomic(
      path, std::span(reinterpret_cast<const std::uint8_t*>(html.data()), html.size()), false);
  return path;
}

}  // namespace epoch::report
