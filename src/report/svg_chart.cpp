// Inline SVG charts (see svg_chart.h). Every chart is a frame of the same layout: the title and
// the legend above, the plot area, the y ticks on the left and the x ticks below. Everything is
// written through Html: markup from literals, names and labels escaped, numbers formatted.
#include "epoch/report/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace epoch::report {
namespace {

// Colours told apart by people with the common colour-vision deficiencies (Okabe and Ito).
constexpr Markup kPalette[] = {"#0072b2", "#e69f00", "#009e73", "#d55e00",
                               "#cc79a7", "#56b4e9", "#f0e442", "#000000"};
constexpr int kLeft = 72, kRight = 20, kTop = 48, kBottom = 46;

Markup colour(std::size_t i) { return kPalette[i % std::size(kPalette)]; }

/// Maps data to pixels over the plot area of a width x height chart.
struct Frame {
  int width, height;
  double x0, x1, y0, y1;
  double px(double x) const {
    const double span = x1 > x0 ? x1 - x0 : 1.0;
    return kLeft + (x - x0) / span * (width - kLeft - kRight);
  }
  double py(double y) const {
    const double span = y1 > y0 ? y1 - y0 : 1.0;
    return height - kBottom - (y - y0) / span * (height - kTop - kBottom);
  }
};

void open_svg(Html& out, int width, int height, const std::string& title) {
  out.raw("<svg class=\"chart\"")
      .attr("viewBox", "0 0 " + std::to_string(width) + " " + std::to_string(height))
      .attr("width", width)
      .attr("height", height)
      .attr("role", "img")
      .attr("aria-label", title)
      .raw(">\n<text")
      .attr("x", kLeft)
      .attr("y", 18)
      .raw(" class=\"title\">")
      .text(title)
      .raw("</text>\n");
}

/// A horizontal or vertical line of the frame or the grid.
void line(Html& out, double x1, double x2, double y1, double y2, Markup css_class) {
  out.raw("<line")
      .attr("x1", x1)
      .attr("x2", x2)
      .attr("y1", y1)
      .attr("y2", y2)
      .attr("class", css_class.c_str())
      .raw("/>\n");
}

void legend(Html& out, const std::vector<std::string>& names) {
  double x = kLeft;
  for (std::size_t i = 0; i < names.size(); ++i) {
    out.raw("<rect")
        .attr("x", x)
        .raw(" y=\"28\" width=\"12\" height=\"10\"")
        .attr("fill", colour(i).c_str())
        .raw("/><text")
        .attr("x", x + 16)
        .raw(" y=\"37\" class=\"legend\">")
        .text(names[i])
        .raw("</text>\n");
    x += 30 + 6.5 * static_cast<double>(names[i].size());
  }
}

/// Ticks of a log axis over [lo, hi] (log10 values): 1, 2 and 5 times each power of ten, or
/// the powers alone where those would be more than ten.
std::vector<double> log_ticks(double lo, double hi) {
  std::vector<double> ticks;
  for (bool all : {true, false}) {
    ticks.clear();
    for (double d = std::floor(lo); d <= std::ceil(hi); d += 1.0)
      for (double m : {1.0, 2.0, 5.0}) {
        if (!all && m != 1.0) continue;
        const double t = d + std::log10(m);
        if (t >= lo && t <= hi) ticks.push_back(t);
      }
    if (ticks.size() <= 10) break;
  }
  return ticks;
}

/// The y axis with its grid lines; `log_y` labels ticks as powers of the log10 values given.
void y_axis(Html& out, const Frame& f, const std::string& label, bool log_y) {
  for (double t : log_y ? log_ticks(f.y0, f.y1) : nice_ticks(f.y0, f.y1, 5)) {
    const double y = f.py(t);
    line(out, kLeft, f.width - kRight, y, y, "grid");
    out.raw("<text")
        .attr("x", kLeft - 6)
        .attr("y", y + 4)
        .raw(" class=\"ytick\">")
        .number(log_y ? std::pow(10.0, t) : t)
        .raw("</text>\n");
  }
  out.raw("<text transform=\"translate(14,")
      .coord((kTop + f.height - kBottom) / 2.0)
      .raw(") rotate(-90)\" class=\"axis\">")
      .text(label)
      .raw("</text>\n");
  line(out, kLeft, kLeft, kTop, f.height - kBottom, "frame");
}

void x_axis_numeric(Html& out, const Frame& f, const std::string& label) {
  for (double t : nice_ticks(f.x0, f.x1, 6))
    out.raw("<text")
        .attr("x", f.px(t))
        .attr("y", f.height - kBottom + 16)
        .raw(" class=\"xtick\">")
        .number(t)
        .raw("</text>\n");
  line(out, kLeft, f.width - kRight, f.height - kBottom, f.height - kBottom, "frame");
  out.raw("<text")
      .attr("x", (kLeft + f.width - kRight) / 2.0)
      .attr("y", f.height - 8)
      .raw(" class=\"axis\">")
      .text(label)
      .raw("</text>\n");
}

Html nothing_to_draw(Html& out, int width, int height) {
  out.raw("<text")
      .attr("x", width / 2.0)
      .attr("y", height / 2.0)
      .raw(" class=\"axis\">nothing logged to draw</text>\n</svg>\n");
  return out;
}

/// The y range of values (log10 of them on a log axis), widened a little so nothing sits on
/// the frame, and never empty.
void fit_y(double& lo, double& hi) {
  if (hi <= lo) {
    const double pad = lo != 0.0 ? std::abs(lo) * 0.1 : 1.0;
    lo -= pad;
    hi += pad;
  }
  const double pad = (hi - lo) * 0.05;
  lo -= pad;
  hi += pad;
}

}  // namespace

std::string format_number(double v) {
  if (!std::isfinite(v)) return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
  if (v == 0.0) return "0";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::vector<double> nice_ticks(double lo, double hi, int target) {
  std::vector<double> ticks;
  if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi)) return ticks;
  const double raw = (hi - lo) / std::max(1, target);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag * 1.0000001) {
      step = m * mag;
      break;
    }
  // Each tick is k * step, written to 12 digits and read back, so 3 * 0.2 is 0.6.
  for (double k = std::ceil(lo / step - 1e-9); k * step <= hi + step * 1e-9; k += 1.0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.12g", k * step);
    ticks.push_back(k == 0.0 ? 0.0 : std::strtod(buf, nullptr));
  }
  return ticks;
}

Html line_chart_svg(const LineChart& chart) {
  Html out;
  open_svg(out, chart.width, chart.height, chart.title);
  auto value = [&](double v) {
    if (!std::isfinite(v)) return std::numeric_limits<double>::quiet_NaN();
    if (chart.log_y) return v > 0 ? std::log10(v) : std::numeric_limits<double>::quiet_NaN();
    return v;
  };
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
  for (const Series& s : chart.series)
    for (std::size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      const double y = value(s.y[i]);
      if (!std::isfinite(s.x[i]) || !std::isfinite(y)) continue;
      x0 = std::min(x0, s.x[i]);
      x1 = std::max(x1, s.x[i]);
      for (double v :
           {y, i < s.low.size() ? value(s.low[i]) : y, i < s.high.size() ? value(s.high[i]) : y})
        if (std::isfinite(v)) {
          y0 = std::min(y0, v);
          y1 = std::max(y1, v);
        }
    }
  if (!std::isfinite(x0)) return nothing_to_draw(out, chart.width, chart.height);
  if (x1 <= x0) {
    x0 -= 1.0;
    x1 += 1.0;
  }
  fit_y(y0, y1);
  // Markers at the ends of the range would be cut in half by the frame.
  for (const Series& s : chart.series)
    if (s.points) {
      const double pad = (x1 - x0) * 0.03;
      x0 -= pad;
      x1 += pad;
      break;
    }
  const Frame f{chart.width, chart.height, x0, x1, y0, y1};
  y_axis(out, f, chart.y_label, chart.log_y);
  x_axis_numeric(out, f, chart.x_label);
  std::vector<std::string> names;
  for (std::size_t k = 0; k < chart.series.size(); ++k) {
    const Series& s = chart.series[k];
    names.push_back(s.name);
    const std::size_t n = std::min(s.x.size(), s.y.size());
    if (s.low.size() == n && s.high.size() == n && n > 0) {
      out.raw("<polygon class=\"band\"").attr("fill", colour(k).c_str()).raw(" points=\"");
      for (std::size_t i = 0; i < n; ++i)
        if (std::isfinite(value(s.high[i])) && std::isfinite(s.x[i]))
          out.coord(f.px(s.x[i])).raw(",").coord(f.py(value(s.high[i]))).raw(" ");
      for (std::size_t i = n; i-- > 0;)
        if (std::isfinite(value(s.low[i])) && std::isfinite(s.x[i]))
          out.coord(f.px(s.x[i])).raw(",").coord(f.py(value(s.low[i]))).raw(" ");
      out.raw("\"/>\n");
    }
    if (s.points) {
      for (std::size_t i = 0; i < n; ++i)
        if (std::isfinite(value(s.y[i])) && std::isfinite(s.x[i]))
          out.raw("<circle")
              .attr("cx", f.px(s.x[i]))
              .attr("cy", f.py(value(s.y[i])))
              .raw(" r=\"4\"")
              .attr("fill", colour(k).c_str())
              .raw("><title>")
              .text(s.name)
              .raw(" ")
              .number(s.x[i])
              .raw(": ")
              .number(s.y[i])
              .raw("</title></circle>\n");
      continue;
    }
    // A gap (a value left out) breaks the line rather than bridging it.
    out.raw("<path class=\"line\"").attr("stroke", colour(k).c_str()).raw(" d=\"");
    bool pen_down = false;
    for (std::size_t i = 0; i < n; ++i) {
      const double y = value(s.y[i]);
      if (!std::isfinite(y) || !std::isfinite(s.x[i])) {
        pen_down = false;
        continue;
      }
      (pen_down ? out.raw("L") : out.raw("M")).coord(f.px(s.x[i])).raw(" ").coord(f.py(y)).raw(" ");
      pen_down = true;
    }
    out.raw("\"/>\n");
  }
  legend(out, names);
  out.raw("</svg>\n");
  return out;
}

Html box_plot_svg(const BoxPlot& plot) {
  Html out;
  open_svg(out, plot.width, plot.height, plot.title);
  double y0 = std::numeric_limits<double>::infinity(), y1 = -y0;
  for (const Box& b : plot.boxes)
    for (double v : {b.min, b.max})
      if (std::isfinite(v)) {
        y0 = std::min(y0, v);
        y1 = std::max(y1, v);
      }
  if (!std::isfinite(y0)) return nothing_to_draw(out, plot.width, plot.height);
  fit_y(y0, y1);
  const double n = static_cast<double>(plot.boxes.size());
  const Frame f{plot.width, plot.height, 0.0, n, y0, y1};
  y_axis(out, f, plot.y_label, false);
  line(out, kLeft, plot.width - kRight, plot.height - kBottom, plot.height - kBottom, "frame");
  const double slot = (plot.width - kLeft - kRight) / std::max(1.0, n);
  const double half = std::min(40.0, slot * 0.25);
  for (std::size_t k = 0; k < plot.boxes.size(); ++k) {
    const Box& b = plot.boxes[k];
    const double cx = f.px(static_cast<double>(k) + 0.5);
    line(out, cx, cx, f.py(b.min), f.py(b.max), "whisker");
    for (double v : {b.min, b.max})
      line(out, cx - half / 2, cx + half / 2, f.py(v), f.py(v), "whisker");
    // A box of no height (every value the same) is still drawn, two pixels tall.
    const double top = f.py(b.q3), bottom = f.py(b.q1);
    out.raw("<rect")
        .attr("x", cx - half)
        .attr("y", std::min(top, bottom - 2))
        .attr("width", 2 * half)
        .attr("height", std::max(2.0, bottom - top))
        .attr("fill", colour(k).c_str())
        .raw(" class=\"box\"><title>")
        .text(b.name)
        .raw(": median ")
        .number(b.median)
        .raw(", quartiles ")
        .number(b.q1)
        .raw(" to ")
        .number(b.q3)
        .raw("</title></rect>\n");
    line(out, cx - half, cx + half, f.py(b.median), f.py(b.median), "median");
    for (std::size_t i = 0; i < b.values.size(); ++i) {
      if (!std::isfinite(b.values[i])) continue;
      // Spread the dots sideways in a fixed pattern, so equal values stay visible.
      const double dx = half * 1.4 + 4.0 * static_cast<double>(i % 4);
      out.raw("<circle")
          .attr("cx", cx + dx)
          .attr("cy", f.py(b.values[i]))
          .raw(" r=\"3\"")
          .attr("fill", colour(k).c_str())
          .raw(" class=\"dot\"/>\n");
    }
    out.raw("<text")
        .attr("x", cx)
        .attr("y", plot.height - kBottom + 16)
        .raw(" class=\"xtick\">")
        .text(b.name)
        .raw("</text>\n");
  }
  out.raw("</svg>\n");
  return out;
}

Html stacked_bars_svg(const StackedBars& bars) {
  Html out;
  open_svg(out, bars.width, bars.height, bars.title);
  const std::size_t n = bars.categories.size();
  double top = 0.0;
  for (std::size_t k = 0; k < n; ++k) {
    double sum = 0.0;
    for (const BarPart& p : bars.parts)
      if (k < p.values.size() && std::isfinite(p.values[k])) sum += std::max(0.0, p.values[k]);
    top = std::max(top, sum);
  }
  if (n == 0 || !(top > 0.0) || !std::isfinite(top))
    return nothing_to_draw(out, bars.width, bars.height);
  const Frame f{bars.width, bars.height, 0.0, static_cast<double>(n), 0.0, top * 1.05};
  y_axis(out, f, bars.y_label, false);
  line(out, kLeft, bars.width - kRight, bars.height - kBottom, bars.height - kBottom, "frame");
  const double slot = (bars.width - kLeft - kRight) / static_cast<double>(n);
  const double half = std::min(36.0, slot * 0.35);
  // Category labels are thinned so that at most about 12 are written.
  const std::size_t label_every = std::max<std::size_t>(1, (n + 11) / 12);
  for (std::size_t k = 0; k < n; ++k) {
    const double cx = f.px(static_cast<double>(k) + 0.5);
    double base = 0.0;
    for (std::size_t i = 0; i < bars.parts.size(); ++i) {
      const BarPart& p = bars.parts[i];
      const double v = k < p.values.size() && std::isfinite(p.values[k]) ? p.values[k] : 0.0;
      if (v <= 0.0) continue;
      const double y_top = f.py(base + v), y_bottom = f.py(base);
      out.raw("<rect")
          .attr("x", cx - half)
          .attr("y", y_top)
          .attr("width", 2 * half)
          .attr("height", y_bottom - y_top)
          .attr("fill", colour(i).c_str())
          .raw("><title>")
          .text(bars.categories[k])
          .raw(", ")
          .text(p.name)
          .raw(": ")
          .number(v)
          .raw("</title></rect>\n");
      base += v;
    }
    if (k % label_every == 0)
      out.raw("<text")
          .attr("x", cx)
          .attr("y", bars.height - kBottom + 16)
          .raw(" class=\"xtick\">")
          .text(bars.categories[k])
          .raw("</text>\n");
  }
  std::vector<std::string> names;
  for (const BarPart& p : bars.parts) names.push_back(p.name);
  legend(out, names);
  out.raw("</svg>\n");
  return out;
}

}  // namespace epoch::report
