// The frame every report shares: the page with its inline style sheet, headings, tables, and
// the reading of the JSON files a report is drawn from.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace epoch::report {

/// A whole HTML document: `title` in the head and as the first heading, then `body`.
std::string html_page(const std::string& title, const std::string& body);

/// A table: `header` cells, then rows of cells (already escaped HTML).
std::string html_table(const std::vector<std::string>& header,
                       const std::vector<std::vector<std::string>>& rows);

/// A two-column table of every leaf of a JSON object, keys joined by dots ("optimizer.lr").
std::string json_table(const nlohmann::json& object);

/// A JSON value as table text (escaped): numbers by format_number, strings as they are.
std::string cell(const nlohmann::json& value);

/// The JSON object of `path`; IoError naming the file when it is missing or not JSON.
nlohmann::json read_json_file(const std::string& path);

/// Every record of a JSON-lines file; IoError naming the file and the line of a bad record.
/// A missing file is no records (a run killed before it logged anything).
std::vector<nlohmann::json> read_json_lines(const std::string& path);

/// A record's field as a number, NaN where it is absent, null or not a number.
double number_or_nan(const nlohmann::json& record, const char* key);

}  // namespace epoch::report
