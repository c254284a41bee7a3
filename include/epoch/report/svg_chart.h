// Charts as inline SVG for `epoch report`: lines with optional bands, box plots and stacked
// bars, with axes, ticks and a legend, written through Html (html.h), so every name and label
// is escaped. No scripts and no external resources: a report is one file that opens anywhere.
#pragma once

#include <string>
#include <vector>

#include "epoch/report/html.h"

namespace epoch::report {

/// One line of a LineChart: y over x, with an optional band [low, high] (same length as x,
/// or empty); `points` draws markers instead of a line (an epoch's figures, say).
struct Series {
  std::string name;
  std::vector<double> x, y, low, high;
  bool points = false;
};

struct LineChart {
  std::string title, x_label, y_label;
  std::vector<Series> series;
  bool log_y = false;  // non-positive values are left out on a log axis
  int width = 720, height = 320;
};

/// The chart as an <svg> element. Non-finite values are left out; a chart with nothing to
/// draw says so in its body.
Html line_chart_svg(const LineChart& chart);

/// One box of a BoxPlot: the five figures and every value (drawn as dots beside the box).
struct Box {
  std::string name;
  double min = 0, q1 = 0, median = 0, q3 = 0, max = 0;
  std::vector<double> values;
};

struct BoxPlot {
  std::string title, y_label;
  std::vector<Box> boxes;
  int width = 720, height = 320;
};

Html box_plot_svg(const BoxPlot& plot);

/// Bars stacked per category: parts[i].values[k] is part i's height in category k.
struct BarPart {
  std::string name;
  std::vector<double> values;
};

struct StackedBars {
  std::string title, y_label;
  std::vector<std::string> categories;
  std::vector<BarPart> parts;
  int width = 720, height = 320;
};

Html stacked_bars_svg(const StackedBars& bars);

/// Tick positions covering [lo, hi]: 1, 2 or 5 times a power of ten apart, about `target` of
/// them.
std::vector<double> nice_ticks(double lo, double hi, int target = 5);

/// A number for an axis or a table: up to 4 significant digits, no trailing zeros.
std::string format_number(double v);

}  // namespace epoch::report
