// The shared page, tables and JSON reading of the reports (see html_page.h).
#include "html_page.h"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

#include "epoch/report/svg_chart.h"
#include "epoch/tensor/error.h"

namespace epoch::report {
namespace {

constexpr const char* kStyle = R"(
body { font-family: system-ui, sans-serif; margin: 24px auto; max-width: 1000px; color: #222; }
h1 { font-size: 22px; } h2 { font-size: 17px; margin-top: 28px; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; font-size: 13px; margin: 8px 0; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f4f4f4; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
p.note { color: #555; font-size: 13px; } .verdict { font-weight: 600; }
svg.chart { display: block; margin: 8px 0; background: #fff; }
svg .title { font-size: 14px; font-weight: 600; } svg .legend { font-size: 12px; }
svg .axis { font-size: 12px; text-anchor: middle; fill: #444; }
svg .xtick { font-size: 11px; text-anchor: middle; fill: #444; }
svg .ytick { font-size: 11px; text-anchor: end; fill: #444; }
svg .grid { stroke: #e8e8e8; } svg .frame { stroke: #888; }
svg .line { fill: none; stroke-width: 1.6; } svg .band { opacity: 0.18; stroke: none; }
svg .whisker { stroke: #555; } svg .median { stroke: #000; stroke-width: 2; }
svg .box { opacity: 0.55; stroke: #333; } svg .dot { opacity: 0.8; }
)";

void flatten(const nlohmann::json& j, const std::string& prefix,
             std::vector<std::vector<std::string>>& rows) {
  if (j.is_object() && !j.empty()) {
    for (const auto& [key, value] : j.items())
      flatten(value, prefix.empty() ? key : prefix + "." + key, rows);
    return;
  }
  rows.push_back({escape_xml(prefix), cell(j)});
}

}  // namespace

std::string html_page(const std::string& title, const std::string& body) {
  std::ostringstream out;
  // The empty icon keeps a browser from asking for favicon.ico beside the file.
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      << "<link rel=\"icon\" href=\"data:,\">\n<title>" << escape_xml(title) << "</title>\n<style>"
      << kStyle << "</style>\n</head>\n<body>\n<h1>" << escape_xml(title) << "</h1>\n"
      << body << "</body>\n</html>\n";
  return out.str();
}

std::string html_table(const std::vector<std::string>& header,
                       const std::vector<std::vector<std::string>>& rows) {
  std::ostringstream out;
  out << "<table>\n";
  bool any_header = false;
  for (const std::string& h : header) any_header = any_header || !h.empty();
  if (any_header) {
    out << "<tr>";
    for (const std::string& h : header) out << "<th>" << h << "</th>";
    out << "</tr>\n";
  }
  for (const auto& row : rows) {
    out << "<tr>";
    for (const std::string& c : row) {
      // Figures align right; a cell is a figure when it parses as one whole.
      char* end = nullptr;
      const bool figure = !c.empty() && (std::strtod(c.c_str(), &end), *end == '\0');
      out << (figure ? "<td class=\"num\">" : "<td>") << c << "</td>";
    }
    out << "</tr>\n";
  }
  out << "</table>\n";
  return out.str();
}

std::string json_table(const nlohmann::json& object) {
  std::vector<std::vector<std::string>> rows;
  flatten(object, "", rows);
  return html_table({"setting", "value"}, rows);
}

std::string cell(const nlohmann::json& value) {
  if (value.is_null()) return "";
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  if (value.is_number_integer()) return std::to_string(value.get<long long>());
  if (value.is_number()) return format_number(value.get<double>());
  if (value.is_string()) return escape_xml(value.get<std::string>());
  if (value.is_array()) {
    std::string out;
    for (const auto& v : value) out += (out.empty() ? "" : ", ") + cell(v);
    return out;
  }
  return escape_xml(value.dump());
}

nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) EPOCH_THROW(IoError, path, ": cannot open (is this a run or study folder?)");
  try {
    nlohmann::json j = nlohmann::json::parse(in);
    if (!j.is_object()) EPOCH_THROW(IoError, path, ": expected a JSON object");
    return j;
  } catch (const nlohmann::json::exception& e) {
    EPOCH_THROW(IoError, path, ": not valid JSON (", e.what(), ")");
  }
}

std::vector<nlohmann::json> read_json_lines(const std::string& path) {
  std::vector<nlohmann::json> records;
  std::ifstream in(path);
  if (!in) return records;
  std::string line;
  for (std::int64_t number = 1; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    try {
      records.push_back(nlohmann::json::parse(line));
    } catch (const nlohmann::json::exception&) {
      EPOCH_THROW(IoError, path, ": line ", number, " is not a JSON record");
    }
    if (!records.back().is_object())
      EPOCH_THROW(IoError, path, ": line ", number, " is not a JSON object");
  }
  return records;
}

double number_or_nan(const nlohmann::json& record, const char* key) {
  const auto it = record.find(key);
  if (it == record.end() || !it->is_number()) return std::numeric_limits<double>::quiet_NaN();
  return it->get<double>();
}

}  // namespace epoch::report
