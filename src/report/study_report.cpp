// The report of a study, drawn from study.json and each run's metrics.jsonl (report.h).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>

#include "epoch/report/report.h"
#include "epoch/report/svg_chart.h"
#include "epoch/study/stats.h"
#include "html_page.h"

namespace epoch::report {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

/// A run's folder: as study.json names it, or, for a study folder that was moved, the place
/// `epoch study` puts it under the study folder (<config>/seed-<seed>).
fs::path run_folder(const fs::path& study_dir, const json& run) {
  const fs::path named(run.value("run_dir", std::string()));
  std::error_code ec;
  if (!named.empty() && fs::exists(named / "metrics.jsonl", ec)) return named;
  return study_dir / run.value("config", std::string()) /
         ("seed-" + std::to_string(run.value("seed", 0ull)));
}

/// The mean training loss over a configuration's repeats at each logged step, with the lowest
/// and highest as its band.
Series loss_curve(const fs::path& study_dir, const std::vector<json>& runs,
                  const std::string& config) {
  std::map<double, std::vector<double>> at_step;
  for (const json& run : runs) {
    if (run.value("config", "") != config) continue;
    for (const json& r : read_json_lines((run_folder(study_dir, run) / "metrics.jsonl").string()))
      if (r.value("kind", "") == "step") {
        const double step = number_or_nan(r, "step"), loss = number_or_nan(r, "loss");
        if (std::isfinite(step) && std::isfinite(loss)) at_step[step].push_back(loss);
      }
  }
  Series s;
  s.name = config;
  for (const auto& [step, losses] : at_step) {
    double sum = 0.0;
    for (double v : losses) sum += v;
    s.x.push_back(step);
    s.y.push_back(sum / static_cast<double>(losses.size()));
    s.low.push_back(*std::min_element(losses.begin(), losses.end()));
    s.high.push_back(*std::max_element(losses.begin(), losses.end()));
  }
  return s;
}

std::string interval(const json& ci) {
  if (!ci.is_array() || ci.size() != 2) return "";
  return "[" + cell(ci[0]) + ", " + cell(ci[1]) + "]";
}

std::string tests_table(const json& study) {
  std::vector<std::vector<std::string>> rows;
  for (const json& c : study.value("comparisons", json::array())) {
    const json paired = c.value("paired", json::object());
    const json welch = c.value("welch", json::object());
    const json tost = c.value("tost", json::object());
    const json mw = c.value("mann_whitney", json::object());
    rows.push_back(
        {escape_xml(c.value("a", "") + " vs " + c.value("b", "")),
         cell(c.value("difference", json(nullptr))), interval(paired.value("ci", json(nullptr))),
         cell(paired.value("p", json(nullptr))), cell(paired.value("tost_p", json(nullptr))),
         interval(welch.value("ci", json(nullptr))), cell(welch.value("p", json(nullptr))),
         cell(tost.value("p", json(nullptr))), cell(mw.value("p", json(nullptr))),
         interval(c.value("bootstrap_ci", json(nullptr))),
         "<span class=\"verdict\">" + cell(c.value("verdict", json(nullptr))) + "</span>"});
  }
  return html_table(
      {"pair (a vs b)", "difference (a - b)", "paired 95% CI", "paired t p", "paired TOST p",
       "Welch 95% CI", "Welch p", "TOST p", "Mann-Whitney p", "bootstrap 95% CI", "verdict"},
      rows);
}

}  // namespace

std::string study_report_html(const std::string& study_dir) {
  const fs::path dir(study_dir);
  const json study = read_json_file((dir / "study.json").string());
  const std::string figure = study.value("figure", std::string("figure"));
  std::vector<std::string> configs;
  for (const json& c : study.value("configs", json::array()))
    if (c.is_string()) configs.push_back(c.get<std::string>());
  std::vector<json> runs;
  for (const json& r : study.value("runs", json::array())) runs.push_back(r);

  std::ostringstream body;
  body << "<p class=\"note\">Compared: the " << escape_xml(figure) << " (lower is better), "
       << runs.size() << " runs. Equivalence margin +-" << format_number(study.value("margin", 0.0))
       << ". Every configuration of a seed starts from the same initial weights and sees the "
          "same data order, so the tests pair the runs by seed.</p>\n";

  body << "<h2>Verdicts</h2>\n<ul>\n";
  for (const json& c : study.value("comparisons", json::array()))
    body << "<li><b>" << escape_xml(c.value("a", "") + " vs " + c.value("b", ""))
         << "</b>: " << escape_xml(c.value("words", std::string())) << "</li>\n";
  body << "</ul>\n";
  const json skipped = study.value("skipped", json::array());
  if (!skipped.empty()) {
    std::vector<std::vector<std::string>> rows;
    for (const json& s : skipped)
      rows.push_back(
          {cell(s.value("config", json(nullptr))), cell(s.value("reason", json(nullptr)))});
    body << "<p class=\"note\">Skipped on this machine:</p>\n"
         << html_table({"configuration", "why"}, rows);
  }

  body << "<h2>Training loss per configuration</h2>\n";
  LineChart curves;
  curves.title = "Training loss: mean over repeats, band from lowest to highest";
  curves.x_label = "update";
  curves.y_label = "loss (log scale)";
  curves.log_y = true;
  for (const std::string& c : configs) curves.series.push_back(loss_curve(dir, runs, c));
  body << line_chart_svg(curves);

  body << "<h2>The compared figure</h2>\n";
  BoxPlot boxes;
  boxes.title = figure + " per configuration";
  boxes.y_label = figure;
  for (const std::string& c : configs) {
    Box b;
    b.name = c;
    for (const json& r : runs)
      if (r.value("config", "") == c && r.contains("figure") && r["figure"].is_number())
        b.values.push_back(r["figure"].get<double>());
    if (b.values.empty()) continue;
    const study::Summary five = study::summarize(b.values);
    b.min = five.min;
    b.q1 = five.q1;
    b.median = five.median;
    b.q3 = five.q3;
    b.max = five.max;
    boxes.boxes.push_back(b);
  }
  body << box_plot_svg(boxes);

  body << "<h2>Tests</h2>\n" << tests_table(study);

  body << "<h2>Runs</h2>\n";
  std::vector<std::vector<std::string>> rows;
  for (const json& r : runs)
    rows.push_back({cell(r.value("config", json(nullptr))), cell(r.value("seed", json(nullptr))),
                    cell(r.value("figure", json(nullptr))), cell(r.value("wall_s", json(nullptr))),
                    escape_xml(run_folder(dir, r).lexically_relative(dir).string())});
  body << html_table({"configuration", "seed", figure, "wall s", "run folder"}, rows);
  return html_page("epoch study: " + figure, body.str());
}

}  // namespace epoch::report
