// The shared page, tables and cells of the reports (see html_page.h).
#include "html_page.h"

#include <cstdlib>

#include "epoch/report/svg_chart.h"

namespace epoch::report {
namespace {

using nlohmann::json;

constexpr Markup kStyle = R"(
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

constexpr std::size_t kMaxListItems = 20;

void flatten(const json& j, const std::string& prefix, std::vector<std::vector<Html>>& rows,
             std::uint64_t& left_out) {
  if (j.is_object() && !j.empty()) {
    for (const auto& [key, value] : j.items())
      flatten(value, prefix.empty() ? key : prefix + "." + key, rows, left_out);
    return;
  }
  if (rows.size() >= kMaxTableRows) {
    ++left_out;
    return;
  }
  rows.push_back({Html::of_text(clipped(prefix)), cell(j)});
}

}  // namespace

std::string clipped(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  std::size_t end = max_bytes;
  // Back to the start of a UTF-8 character (not a continuation byte 10xxxxxx).
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return std::string(text.substr(0, end)) + "\xE2\x80\xA6";
}

Html html_page(const std::string& title, const Html& body) {
  // The empty icon keeps a browser from asking for favicon.ico beside the file.
  Html page;
  page.raw("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
      .raw("<link rel=\"icon\" href=\"data:,\">\n<title>")
      .text(clipped(title, 200))
      .raw("</title>\n<style>")
      .raw(kStyle)
      .raw("</style>\n</head>\n<body>\n<h1>")
      .text(clipped(title, 200))
      .raw("</h1>\n")
      .append(body)
      .raw("</body>\n</html>\n");
  return page;
}

Html html_table(const std::vector<Html>& header, const std::vector<std::vector<Html>>& rows,
                std::uint64_t left_out) {
  Html out;
  out.raw("<table>\n");
  bool any_header = false;
  for (const Html& h : header) any_header = any_header || !h.empty();
  if (any_header) {
    out.raw("<tr>");
    for (const Html& h : header) out.raw("<th>").append(h).raw("</th>");
    out.raw("</tr>\n");
  }
  for (const auto& row : rows) {
    out.raw("<tr>");
    for (const Html& c : row) {
      // Figures align right; a cell is a figure when it parses as one whole.
      const std::string& text = c.str();
      char* end = nullptr;
      const bool figure = !text.empty() && (std::strtod(text.c_str(), &end), *end == '\0');
      (figure ? out.raw("<td class=\"num\">") : out.raw("<td>")).append(c).raw("</td>");
    }
    out.raw("</tr>\n");
  }
  out.raw("</table>\n");
  if (left_out > 0)
    out.append(note(std::to_string(left_out) + " more rows not shown (a report shows " +
                    std::to_string(kMaxTableRows) + ")."));
  return out;
}

Html json_table(const json& object) {
  std::vector<std::vector<Html>> rows;
  std::uint64_t left_out = 0;
  flatten(object, "", rows, left_out);
  return html_table({Html::of_text("setting"), Html::of_text("value")}, rows, left_out);
}

Html cell(const json& value) {
  Html out;
  if (value.is_null()) return out;
  if (value.is_boolean()) return out.text(value.get<bool>() ? "true" : "false");
  if (value.is_number_integer()) return out.text(value.dump());
  if (value.is_number()) return out.number(value.get<double>());
  if (value.is_string()) return out.text(clipped(value.get_ref<const std::string&>()));
  if (value.is_array()) {
    std::size_t i = 0;
    for (const json& v : value) {
      if (i > 0) out.raw(", ");
      if (i++ == kMaxListItems) return out.raw("\xE2\x80\xA6");
      if (v.is_array() || v.is_object())
        out.text(v.is_array() ? "[...]" : "{...}");
      else
        out.append(cell(v));
    }
    return out;
  }
  return out.text(clipped(value.dump()));
}

Html note(std::string_view text) {
  Html out;
  out.raw("<p class=\"note\">").text(text).raw("</p>\n");
  return out;
}

}  // namespace epoch::report
