// libFuzzer target: the report's readers and page writers on arbitrary bytes, through the
// in-memory entry points run_report_html_from_text and study_report_html_from_text. The input
// is config.json, metrics.jsonl and study.json joined by lines of "@@". Only epoch::Error may
// come out, and a page never holds a script, whatever the input.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "epoch/report/report.h"
#include "epoch/tensor/error.h"

namespace {

constexpr std::string_view kSeparator = "\n@@\n";

/// The part of `rest` before the next separator (all of it when there is none); `rest` moves on.
std::string_view take_part(std::string_view& rest) {
  const std::size_t at = rest.find(kSeparator);
  const std::string_view part = rest.substr(0, at);
  rest = at == std::string_view::npos ? std::string_view() : rest.substr(at + kSeparator.size());
  return part;
}

void expect_no_markup_from_input(const std::string& html) {
  if (html.find("<script") != std::string::npos || html.find("<img") != std::string::npos)
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  const std::string_view config = take_part(rest);
  const std::string_view metrics = take_part(rest);
  const std::string_view study = take_part(rest);
  try {
    expect_no_markup_from_input(epoch::report::run_report_html_from_text(config, metrics, "fuzz"));
  } catch (const epoch::Error&) {
    // A clear error is the expected outcome for most inputs.
  }
  try {
    expect_no_markup_from_input(epoch::report::study_report_html_from_text(study, metrics));
  } catch (const epoch::Error&) {
  }
  return 0;
}
