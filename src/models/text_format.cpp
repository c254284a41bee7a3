// A tokenizer and a recursive-descent parser (depth-limited) for the text format.
#include "epoch/models/text_format.h"

#include <cctype>

#include "epoch/tensor/error.h"

namespace epoch::models {
namespace {

constexpr int kMaxDepth = 100;
constexpr std::size_t kMaxFields = 10000000;

class Parser {
 public:
  Parser(std::string_view text, const std::string& file) : text_(text), file_(file) {}

  TextMessage message(int depth, char close) {
    if (depth > kMaxDepth) fail("messages nested more than ", kMaxDepth, " deep");
    TextMessage m;
    for (;;) {
      skip();
      if (at_end()) {
        if (close != 0) fail("the file ends inside a message ('", close, "' missing)");
        return m;
      }
      if (close != 0 && peek() == close) {
        ++pos_;
        return m;
      }
      if (peek() == ';' || peek() == ',') {  // optional separators
        ++pos_;
        continue;
      }
      TextField f;
      f.line = line_;
      f.name = identifier();
      if (f.name.empty()) fail("expected a field name, found '", peek(), "'");
      if (++fields_ > kMaxFields) fail("more than ", kMaxFields, " fields");
      skip();
      bool colon = false;
      if (!at_end() && peek() == ':') {
        ++pos_;
        colon = true;
        skip();
      }
      if (!at_end() && (peek() == '{' || peek() == '<')) {
        const char open = text_[pos_++];
        f.message = std::make_shared<TextMessage>(message(depth + 1, open == '{' ? '}' : '>'));
        m.fields.push_back(std::move(f));
        continue;
      }
      if (!colon) fail("expected ':' or '{' after ", f.name);
      if (!at_end() && peek() == '[') {  // a list of scalars: name: [a, b]
        ++pos_;
        for (;;) {
          skip();
          if (!at_end() && peek() == ']') {
            ++pos_;
            break;
          }
          TextField item = f;
          scalar(item);
          m.fields.push_back(std::move(item));
          skip();
          if (!at_end() && peek() == ',') ++pos_;
        }
        continue;
      }
      scalar(f);
      m.fields.push_back(std::move(f));
    }
  }

 private:
  template <typename... Args>
  [[noreturn]] void fail(const Args&... args) const {
    EPOCH_THROW(ConfigError, file_, ":", line_, ": ", args...);
  }

  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return text_[pos_]; }

  void skip() {
    while (!at_end()) {
      const char c = peek();
      if (c == '\n') {
        ++line_;
        ++pos_;
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        ++pos_;
      } else if (c == '#') {
        while (!at_end() && peek() != '\n') ++pos_;
      } else {
        return;
      }
    }
  }

  /// [A-Za-z_][A-Za-z0-9_]*, or "" when none starts here.
  std::string identifier() {
    const std::size_t start = pos_;
    if (at_end() || !(std::isalpha(static_cast<unsigned char>(peek())) || peek() == '_')) return "";
    while (!at_end() && (std::isalnum(static_cast<unsigned char>(peek())) || peek() == '_')) ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }

  void scalar(TextField& f) {
    if (at_end()) fail("the file ends where ", f.name, "'s value should be");
    const char c = peek();
    if (c == '"' || c == '\'') {
      f.quoted = true;
      // Adjacent strings concatenate, as in C.
      while (!at_end() && (peek() == '"' || peek() == '\'')) {
        f.value += quoted(peek());
        skip();
      }
      return;
    }
    const std::size_t start = pos_;
    while (!at_end() && (std::isalnum(static_cast<unsigned char>(peek())) || peek() == '_' ||
                         peek() == '.' || peek() == '-' || peek() == '+'))
      ++pos_;
    if (pos_ == start) fail("expected a value for ", f.name, ", found '", c, "'");
    f.value = std::string(text_.substr(start, pos_ - start));
  }

  std::string quoted(char quote) {
    ++pos_;
    std::string out;
    for (;;) {
      if (at_end() || peek() == '\n') fail("a string is not closed");
      const char c = text_[pos_++];
      if (c == quote) return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_end()) fail("a string is not closed");
      const char e = text_[pos_++];
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case '\\': case '\'': case '"': out += e; break;
        default:
          if (e >= '0' && e <= '7') {  // up to three octal digits
            int v = e - '0';
            for (int i = 0; i < 2 && !at_end() && peek() >= '0' && peek() <= '7'; ++i)
              v = v * 8 + (text_[pos_++] - '0');
            out += static_cast<char>(v);
          } else {
            fail("unknown escape \\", e, " in a string");
          }
      }
    }
  }

  std::string_view text_;
  const std::string& file_;
  std::size_t pos_ = 0;
  int line_ = 1;
  std::size_t fields_ = 0;
};

}  // namespace

std::vector<const TextField*> TextMessage::all(std::string_view name) const {
  std::vector<const TextField*> out;
  for (const TextField& f : fields)
    if (f.name == name) out.push_back(&f);
  return out;
}

const TextField* TextMessage::find(std::string_view name) const {
  const TextField* last = nullptr;
  for (const TextField& f : fields)
    if (f.name == name) last = &f;
  return last;
}

TextMessage parse_text_format(std::string_view text, const std::string& file) {
  Parser p(text, file);
  return p.message(0, 0);
}

}  // namespace epoch::models
