// The escaping writer of report HTML (see html.h).
#include "epoch/report/html.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "epoch/report/svg_chart.h"

namespace epoch::report {

std::string escape_xml(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      case '\t':
      case '\n':
      case '\r':
        out += c;
        break;
      default: {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7f)
          out += "\xEF\xBF\xBD";  // U+FFFD: a control character is no text to show
        else
          out += c;
      }
    }
  }
  return out;
}

Html Html::of_text(std::string_view text) {
  Html h;
  h.text(text);
  return h;
}

Html& Html::raw(Markup markup) {
  out_ += markup.c_str();
  return *this;
}

Html& Html::text(std::string_view text) {
  out_ += escape_xml(text);
  return *this;
}

Html& Html::number(double value) {
  out_ += format_number(value);
  return *this;
}

Html& Html::integer(long long value) {
  out_ += std::to_string(value);
  return *this;
}

Html& Html::coord(double value) {
  char buf[32];
  // Far off the canvas is as good as any further: the text stays short.
  const double v = std::isfinite(value) ? std::clamp(value, -1e6, 1e6) : 0.0;
  const int n = std::snprintf(buf, sizeof buf, "%.1f", v);
  // Whole pixels without the ".0": width="720".
  out_.append(buf, n >= 2 && buf[n - 2] == '.' && buf[n - 1] == '0' ? n - 2 : n);
  return *this;
}

Html& Html::attr(Markup name, std::string_view value) {
  out_ += ' ';
  out_ += name.c_str();
  out_ += "=\"";
  out_ += escape_xml(value);
  out_ += '"';
  return *this;
}

Html& Html::attr(Markup name, double value) {
  out_ += ' ';
  out_ += name.c_str();
  out_ += "=\"";
  coord(value);
  out_ += '"';
  return *this;
}

Html& Html::append(const Html& other) {
  out_ += other.out_;
  return *this;
}

}  // namespace epoch::report
