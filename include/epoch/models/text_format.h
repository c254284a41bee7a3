// Protocol Buffers' text format, as Caffe's .prototxt files use it, read by hand (epoch does not
// depend on protobuf): fields `name: value` and messages `name { ... }` (also `name: { ... }`
// and `name < ... >`), repeated at will, `#` comments, quoted strings with C escapes, numbers
// and identifiers (enum values). A parse gives a tree of fields in file order; what the fields
// mean is the reader's (caffe_reader.h).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace epoch::models {

struct TextMessage;

struct TextField {
  std::string name;
  std::string value;      // a scalar's text (a string without its quotes, escapes applied)
  bool quoted = false;    // the scalar was a quoted string
  std::shared_ptr<TextMessage> message;  // set for a message field
  int line = 0;
};

struct TextMessage {
  std::vector<TextField> fields;
  /// Every field of this name, in order.
  std::vector<const TextField*> all(std::string_view name) const;
  /// The last field of this name (text format's rule for a field given twice), or null.
  const TextField* find(std::string_view name) const;
};

/// Parses `text`; ConfigError "FILE:LINE: ..." on a syntax error, nesting deeper than 100, or
/// a file of more than 10^7 fields.
TextMessage parse_text_format(std::string_view text, const std::string& file);

}  // namespace epoch::models
