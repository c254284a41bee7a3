// The frame every report shares: the page with its inline style sheet, tables, cells and notes,
// all written through Html (epoch/report/html.h), and the bounds that keep a page small: text
// clipped, tables cut short with a note saying how many rows were left out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "epoch/report/html.h"

namespace epoch::report {

/// The most rows a table of a report shows; a note says how many more there were.
inline constexpr std::size_t kMaxTableRows = 500;
/// The most bytes of one text a report shows (a cell, a name, a title); the rest is cut, "…".
inline constexpr std::size_t kMaxTextBytes = 1000;

/// `text` cut to at most `max_bytes` bytes (at a UTF-8 character boundary) and "…" added when
/// it was longer.
std::string clipped(std::string_view text, std::size_t max_bytes = kMaxTextBytes);

/// A whole HTML document: `title` in the head and as the first heading, then `body`.
Html html_page(const std::string& title, const Html& body);

/// A table: `header` cells (none when all are empty), then rows of cells; a cell that reads as a
/// number whole is aligned right. `left_out` rows that were not given are named in a note.
Html html_table(const std::vector<Html>& header, const std::vector<std::vector<Html>>& rows,
                std::uint64_t left_out = 0);

/// A two-column table of every leaf of a JSON object, keys joined by dots ("optimizer.lr"), at
/// most kMaxTableRows of them.
Html json_table(const nlohmann::json& object);

/// A JSON value as table text: numbers by format_number (integers whole), strings clipped,
/// lists joined by commas (their first 20 elements).
Html cell(const nlohmann::json& value);

/// A paragraph of the note style holding `text`.
Html note(std::string_view text);

}  // namespace epoch::report
