// The bounded, type-checked reading of a run's and a study's files (see report_input.h).
#include "report_input.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <variant>

#include "epoch/tensor/error.h"
#include "epoch/train/config_fields.h"
#include "html_page.h"

namespace epoch::report {
namespace {

using nlohmann::json;

constexpr std::size_t kReadBytes = std::size_t{1} << 16;

/// The deepest nesting of [ and { in `text`, outside strings, stopping once past `limit`.
int nesting_depth(std::string_view text, int limit) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > limit) break;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::string:
      return "a string";
    case Kind::number:
      return "a number";
    case Kind::integer:
      return "an integer";
    case Kind::boolean:
      return "true or false";
    case Kind::object:
      return "an object";
    case Kind::array:
      return "a list";
  }
  return "?";
}

/// What a JSON value is, for messages: "a string", "a list", ...
const char* described(const json& value) {
  if (value.is_string()) return "a string";
  if (value.is_number()) return "a number";
  if (value.is_boolean()) return "a boolean";
  if (value.is_array()) return "a list";
  if (value.is_object()) return "an object";
  return "null";
}

bool is_kind(const json& value, Kind kind) {
  switch (kind) {
    case Kind::string:
      return value.is_string();
    case Kind::number:
      return value.is_number();
    case Kind::integer:
      return value.is_number_integer();
    case Kind::boolean:
      return value.is_boolean();
    case Kind::object:
      return value.is_object();
    case Kind::array:
      return value.is_array();
  }
  return false;
}

/// The kind of JSON value a setting of train/config_fields.h is stored as, and of the elements
/// of a list setting.
std::pair<Kind, Kind> stored_kind(const train::ConfigField& f) {
  static train::TrainConfig scratch;
  return std::visit(
      [](auto&& ref) -> std::pair<Kind, Kind> {
        using R = std::decay_t<decltype(ref)>;
        if constexpr (std::is_same_v<R, bool*>)
          return {Kind::boolean, Kind::boolean};
        else if constexpr (std::is_same_v<R, int*> || std::is_same_v<R, std::int64_t*> ||
                           std::is_same_v<R, std::uint64_t*>)
          return {Kind::integer, Kind::integer};
        else if constexpr (std::is_same_v<R, float*> || std::is_same_v<R, double*>)
          return {Kind::number, Kind::number};
        else if constexpr (std::is_same_v<R, std::vector<float>*>)
          return {Kind::array, Kind::number};
        else if constexpr (std::is_same_v<R, std::vector<std::string>*>)
          return {Kind::array, Kind::string};
        else
          return {Kind::string, Kind::string};  // a string or a choice
      },
      f.ref(scratch));
}

}  // namespace

json parse_json_object(std::string_view text, const std::string& name) {
  if (nesting_depth(text, kMaxJsonDepth) > kMaxJsonDepth)
    EPOCH_THROW(IoError, name, ": JSON nested more than ", kMaxJsonDepth, " levels deep");
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    EPOCH_THROW(IoError, name, ": not valid JSON (", e.what(), ")");
  }
  if (!j.is_object()) EPOCH_THROW(IoError, name, ": expected a JSON object, found ", described(j));
  return j;
}

json read_json_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(path, ec)))
    EPOCH_THROW(IoError, path, ": no such file (is this a run or study folder?)");
  return parse_json_object(read_text_file(path, kMaxJsonFileBytes), path);
}

LineReader LineReader::open_file(const std::string& path) {
  return LineReader(open_regular_file(path, kMaxLogFileBytes), path);
}

LineReader LineReader::of_text(std::string_view text, std::string name) {
  LineReader r(FileDescriptor(), std::move(name));
  r.buffer_.assign(text.data(), text.size());
  r.at_end_ = true;
  return r;
}

bool LineReader::fill() {
  if (at_end_) return false;
  // Drop the lines already given before the buffer grows.
  if (begin_ > 0) {
    buffer_.erase(0, begin_);
    begin_ = 0;
  }
  const std::size_t old = buffer_.size();
  buffer_.resize(old + kReadBytes);
  for (;;) {
    const ssize_t r = ::read(fd_.get(), buffer_.data() + old, kReadBytes);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      const int err = errno;
      buffer_.resize(old);
      EPOCH_THROW(IoError, name_, ": read error: ", std::strerror(err));
    }
    buffer_.resize(old + static_cast<std::size_t>(r));
    if (r == 0) {
      at_end_ = true;
      return false;
    }
    bytes_read_ += static_cast<std::uint64_t>(r);
    if (bytes_read_ > kMaxLogFileBytes)
      EPOCH_THROW(IoError, name_, ": grew past the ", describe_bytes(kMaxLogFileBytes),
                  " epoch reads from a metrics file while being read");
    return true;
  }
}

bool LineReader::next(std::string& line) {
  std::size_t searched = 0;  // how much of the line, from begin_, holds no newline
  for (;;) {
    const std::size_t newline = buffer_.find('\n', begin_ + searched);
    const std::size_t end = newline == std::string::npos ? buffer_.size() : newline;
    if (end - begin_ > kMaxLineBytes)
      EPOCH_THROW(IoError, name_, ": line ", line_number_ + 1, " is longer than ",
                  describe_bytes(kMaxLineBytes), " (a record is a few hundred bytes)");
    if (newline != std::string::npos) {
      line.assign(buffer_, begin_, newline - begin_);
      begin_ = newline + 1;
      ++line_number_;
      return true;
    }
    searched = buffer_.size() - begin_;
    if (!fill()) break;
  }
  if (begin_ >= buffer_.size()) return false;
  // The last line, without a newline (a run killed while writing it ends so).
  line.assign(buffer_, begin_, std::string::npos);
  begin_ = buffer_.size();
  ++line_number_;
  return true;
}

const json* field(const json& object, const std::string& key, Kind kind, const Where& where) {
  if (!object.is_object())
    EPOCH_THROW(IoError, where.file, ": field \"", where.path, "\" is ", described(object),
                ", expected an object");
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return nullptr;
  expect_kind(*it, kind, where.at(key));
  return &*it;
}

void expect_kind(const json& value, Kind kind, const Where& where) {
  if (!is_kind(value, kind))
    EPOCH_THROW(IoError, where.file, ": field \"", where.path, "\" is ", described(value),
                ", expected ", kind_name(kind));
}

std::string text_field(const json& object, const std::string& key, const Where& where,
                       const std::string& fallback) {
  const json* v = field(object, key, Kind::string, where);
  return v != nullptr ? v->get<std::string>() : fallback;
}

double number_field(const json& object, const std::string& key, const Where& where) {
  const json* v = field(object, key, Kind::number, where);
  return v != nullptr ? v->get<double>() : std::numeric_limits<double>::quiet_NaN();
}

void check_config_types(const json& config, const std::string& file) {
  const Where top{file, ""};
  for (const train::ConfigField& f : train::config_fields()) {
    if (!f.stored || f.ref == nullptr) continue;
    const std::size_t dot = f.key.find('.');
    const json* section = &config;
    Where where = top;
    if (dot != std::string::npos) {
      section = field(config, f.key.substr(0, dot), Kind::object, top);
      if (section == nullptr) continue;
      where = top.at(f.key.substr(0, dot));
    }
    const auto [kind, element] = stored_kind(f);
    const std::string name = dot == std::string::npos ? f.key : f.key.substr(dot + 1);
    const json* value = field(*section, name, kind, where);
    if (value == nullptr || kind != Kind::array) continue;
    for (std::size_t i = 0; i < value->size(); ++i)
      expect_kind((*value)[i], element, where.at(name).at(i));
  }
  for (const char* note : {"model_parameters", "threads_used", "world_size", "global_batch_size"})
    field(config, note, Kind::integer, top);
  field(config, "epoch_version", Kind::string, top);
  if (const json* env = field(config, "environment", Kind::object, top))
    for (const auto& [key, value] : env->items())
      if (value.is_object() || value.is_array())
        EPOCH_THROW(IoError, file, ": field \"environment.", clipped(key, 200), "\" is ",
                    described(value), ", expected a plain value");
}

}  // namespace epoch::report
