// The chart primitives of `epoch report`: ticks, numbers, escaping, and what each chart draws
// (a gap breaks a line, a log axis leaves out what it cannot show, an empty chart says so).
#include "epoch/report/svg_chart.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace epoch::report {
namespace {

int count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
    ++n;
  return n;
}

TEST(SvgChart, TicksAreOneTwoOrFiveTimesAPowerOfTen) {
  EXPECT_EQ(nice_ticks(0.0, 1.0, 5), (std::vector<double>{0.0, 0.2, 0.4, 0.6, 0.8, 1.0}));
  EXPECT_EQ(nice_ticks(3.0, 47.0, 5), (std::vector<double>{10.0, 20.0, 30.0, 40.0}));
  const std::vector<double> t = nice_ticks(-0.013, 0.021, 4);
  ASSERT_FALSE(t.empty());
  EXPECT_NEAR(t[1] - t[0], 0.01, 1e-12);
  EXPECT_TRUE(nice_ticks(1.0, 1.0).empty());
  EXPECT_TRUE(nice_ticks(0.0, NAN).empty());
}

TEST(SvgChart, NumbersAndTextAreWrittenSafely) {
  EXPECT_EQ(format_number(0.0), "0");
  EXPECT_EQ(format_number(0.001234567), "0.001235");
  EXPECT_EQ(format_number(250.0), "250");
  EXPECT_EQ(format_number(NAN), "nan");
  EXPECT_EQ(escape_xml("a<b & \"c\">"), "a&lt;b &amp; &quot;c&quot;&gt;");
  EXPECT_EQ(escape_xml("it's"), "it&#39;s") << "safe inside a single-quoted attribute too";
  EXPECT_EQ(escape_xml(std::string("a\0b\x1b", 4)),
            "a\xEF\xBF\xBD"
            "b\xEF\xBF\xBD");
  EXPECT_EQ(escape_xml("tab\tline\n"), "tab\tline\n");
}

TEST(SvgChart, ALineBreaksAtAGapAndABandIsOnePolygon) {
  LineChart c;
  c.title = "loss <per step>";
  Series s;
  s.name = "train";
  s.x = {1, 2, 3, 4, 5};
  s.y = {0.5, 0.4, NAN, 0.2, 0.1};
  c.series.push_back(s);
  Series banded = s;
  banded.name = "mean";
  banded.y = {0.5, 0.4, 0.3, 0.2, 0.1};
  banded.low = {0.4, 0.3, 0.2, 0.1, 0.05};
  banded.high = {0.6, 0.5, 0.4, 0.3, 0.2};
  c.series.push_back(banded);
  const std::string svg = line_chart_svg(c).str();
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("loss &lt;per step&gt;"), std::string::npos);
  EXPECT_EQ(count(svg, "<path"), 2);
  EXPECT_EQ(count(svg, "M"), 3) << "the gap in the first line starts a second stroke";
  EXPECT_EQ(count(svg, "<polygon"), 1);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
}

TEST(SvgChart, ALogAxisLeavesOutWhatItCannotShow) {
  LineChart c;
  c.log_y = true;
  Series s;
  s.x = {1, 2, 3};
  s.y = {0.0, 0.01, 1.0};
  s.points = true;
  c.series.push_back(s);
  const std::string svg = line_chart_svg(c).str();
  EXPECT_EQ(count(svg, "<circle"), 2);
  EXPECT_NE(svg.find(">0.01<"), std::string::npos) << "decades are labelled as values";
  EXPECT_NE(svg.find(">1<"), std::string::npos);
}

TEST(SvgChart, AChartWithNothingToDrawSaysSo) {
  LineChart c;
  c.series.push_back(Series{"empty", {}, {}, {}, {}, false});
  EXPECT_NE(line_chart_svg(c).str().find("nothing logged"), std::string::npos);
  EXPECT_NE(box_plot_svg(BoxPlot{}).str().find("nothing logged"), std::string::npos);
  EXPECT_NE(stacked_bars_svg(StackedBars{}).str().find("nothing logged"), std::string::npos);
}

TEST(SvgChart, BoxesAndBarsDrawOneShapePerFigure) {
  BoxPlot p;
  p.boxes.push_back(Box{"cpu:1", 1.0, 1.5, 2.0, 2.5, 3.0, {1.0, 2.0, 3.0}});
  p.boxes.push_back(Box{"cpu:2", 2.0, 2.0, 2.0, 2.0, 2.0, {2.0, 2.0}});  // no spread at all
  const std::string box = box_plot_svg(p).str();
  EXPECT_EQ(count(box, "class=\"box\""), 2);
  EXPECT_EQ(count(box, "class=\"dot\""), 5);
  EXPECT_NE(box.find(">cpu:2<"), std::string::npos);

  StackedBars b;
  b.categories = {"epoch 1", "epoch 2"};
  b.parts = {{"compute", {10.0, 12.0}}, {"waiting for data", {1.0, 0.0}}};
  const std::string bars = stacked_bars_svg(b).str();
  EXPECT_EQ(count(bars, "<rect x="), 3 + 2) << "three bars with height, two legend swatches";
}

}  // namespace
}  // namespace epoch::report
