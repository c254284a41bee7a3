// The one writer of report HTML and SVG. Markup comes only from compile-time literals (a Markup
// cannot be made from a string read at run time); every runtime string goes in through text()
// or attr(), which escape it. So no field of a run or study folder can become markup, and a
// report holds no script whatever its folder holds.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace epoch::report {

/// Markup fixed when the program is compiled: tags, attribute names, class names, entities, the
/// style sheet. The constructor is consteval, so only a constant expression (a string literal)
/// makes one; a string built at run time never does.
class Markup {
 public:
  consteval Markup(const char* text) : text_(text) {}  // NOLINT: implicit from literals
  constexpr const char* c_str() const { return text_; }

 private:
  const char* text_;
};

/// Text made safe anywhere in HTML or SVG, between tags or inside a quoted attribute value:
/// & < > " ' become entities; a control character other than tab, newline and carriage return
/// becomes U+FFFD.
std::string escape_xml(std::string_view text);

/// A fragment of HTML (or SVG) that is safe by construction: it only ever holds markup from
/// Markup literals, escaped text, numbers, and other fragments made the same way.
class Html {
 public:
  Html() = default;
  /// A fragment holding `text`, escaped.
  static Html of_text(std::string_view text);

  /// Appends markup fixed at compile time, as it is.
  Html& raw(Markup markup);
  /// Appends text, escaped (escape_xml).
  Html& text(std::string_view text);
  /// Appends a number as format_number writes it ("0.001235", "250", "nan").
  Html& number(double value);
  /// Appends an integer in decimal.
  Html& integer(long long value);
  /// Appends a pixel coordinate with at most one decimal ("12.5", "720"; not finite: "0").
  Html& coord(double value);
  /// Appends ` name="value"` with the value escaped.
  Html& attr(Markup name, std::string_view value);
  /// Appends ` name="value"` with a pixel coordinate as the value.
  Html& attr(Markup name, double value);
  /// Appends another safe fragment.
  Html& append(const Html& other);

  /// The markup written so far.
  const std::string& str() const { return out_; }
  std::size_t size() const { return out_.size(); }
  bool empty() const { return out_.empty(); }

 private:
  std::string out_;
};

}  // namespace epoch::report
