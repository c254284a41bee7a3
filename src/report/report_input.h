// What the reports read, and how: config.json and study.json whole (a regular file within
// kMaxJsonFileBytes), metrics.jsonl a line at a time (within kMaxLogFileBytes, no line over
// kMaxLineBytes), JSON nested at most kMaxJsonDepth deep, and every field the reports use
// checked for its type. Every failure is one IoError naming the file (and the line and field).
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>

#include "epoch/tensor/file_io.h"

namespace epoch::report {

/// The longest line of metrics.jsonl a report reads (a record is a few hundred bytes).
inline constexpr std::size_t kMaxLineBytes = std::size_t{1} << 20;
/// The deepest nesting of arrays and objects a report parses (the files hold two or three).
inline constexpr int kMaxJsonDepth = 64;

/// `text` parsed as one JSON object; IoError naming `name` (the file, or "file: line N") when it
/// is not JSON, not an object, or nested deeper than kMaxJsonDepth.
nlohmann::json parse_json_object(std::string_view text, const std::string& name);

/// The JSON object of the file at `path` (a regular file of at most kMaxJsonFileBytes; IoError
/// naming it when it is missing, a folder, a FIFO, a device, too large or not a JSON object).
nlohmann::json read_json_file(const std::string& path);

/// The lines of a JSON-lines text, read a piece at a time: from a file (open_regular_file's
/// checks, kMaxLogFileBytes) or from text in memory. Never holds more than one line and one
/// read's worth of the file.
class LineReader {
 public:
  /// The file at `path`; IoError naming it when it is no regular file within kMaxLogFileBytes.
  static LineReader open_file(const std::string& path);
  /// `text` as if it were the file `name`.
  static LineReader of_text(std::string_view text, std::string name);

  /// The next line, without its newline, into `line`; false at the end. IoError naming the file
  /// and the line for a line longer than kMaxLineBytes, and naming the file for a read error or
  /// a file that grew past kMaxLogFileBytes.
  bool next(std::string& line);
  /// The number of the line next() gave last (1 for the first).
  std::uint64_t line_number() const { return line_number_; }
  /// The file, for messages.
  const std::string& name() const { return name_; }

 private:
  LineReader(FileDescriptor fd, std::string name) : fd_(std::move(fd)), name_(std::move(name)) {}
  /// Reads one more piece of the file into buffer_; false at its end.
  bool fill();

  FileDescriptor fd_;
  std::string name_;
  std::string buffer_;
  std::size_t begin_ = 0;  // where the next line starts in buffer_
  std::uint64_t line_number_ = 0, bytes_read_ = 0;
  bool at_end_ = false;
};

/// Where a value sits, for messages: the file (or "file: line N") and the dotted path in it.
struct Where {
  std::string file, path;
  Where at(const std::string& key) const { return {file, path.empty() ? key : path + "." + key}; }
  Where at(std::size_t index) const { return {file, path + "[" + std::to_string(index) + "]"}; }
};

/// The kinds of JSON value a report expects of a field.
enum class Kind { string, number, integer, boolean, object, array };

/// The field `key` of `object` when it holds a value of kind `kind`; nullptr when it is absent or
/// null. IoError naming the file and the field when it holds another kind (`object` must be an
/// object).
const nlohmann::json* field(const nlohmann::json& object, const std::string& key, Kind kind,
                            const Where& where);

/// The text of a string field, `fallback` when it is absent or null (IoError as field()).
std::string text_field(const nlohmann::json& object, const std::string& key, const Where& where,
                       const std::string& fallback = "");

/// The value of a number field, NaN when it is absent or null (IoError as field()).
double number_field(const nlohmann::json& object, const std::string& key, const Where& where);

/// IoError naming the file and the field unless `value` is of kind `kind`.
void expect_kind(const nlohmann::json& value, Kind kind, const Where& where);

/// Checks the type of every field of config.json that `epoch train` writes (the settings of
/// train/config_fields.h, the notes beside them, and "environment" an object of plain values):
/// IoError naming the file and the first field of the wrong type. Unknown keys pass (a run from
/// another version), as do nulls.
void check_config_types(const nlohmann::json& config, const std::string& file);

}  // namespace epoch::report
