// The report of one training run, drawn from its config.json and metrics.jsonl (report.h).
#include <cmath>
#include <filesystem>
#include <sstream>

#include "epoch/report/report.h"
#include "epoch/report/svg_chart.h"
#include "html_page.h"

namespace epoch::report {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::vector<json> of_kind(const std::vector<json>& records, const std::string& kind) {
  std::vector<json> out;
  for (const json& r : records)
    if (r.value("kind", "") == kind) out.push_back(r);
  return out;
}

/// The series of `key` over the records' steps (a record without it is a gap).
Series over_steps(const std::vector<json>& records, const char* key, const std::string& name,
                  bool points) {
  Series s;
  s.name = name;
  s.points = points;
  for (const json& r : records) {
    s.x.push_back(number_or_nan(r, "step"));
    s.y.push_back(number_or_nan(r, key));
  }
  return s;
}

bool any_finite(const Series& s) {
  for (double v : s.y)
    if (std::isfinite(v)) return true;
  return false;
}

/// Milliseconds per step of each epoch, split into waiting for data, communication left
/// exposed (several ranks) and the rest, computing.
StackedBars step_breakdown(const std::vector<json>& epochs) {
  StackedBars bars;
  bars.title = "Where each step's time went, per epoch";
  bars.y_label = "ms per step";
  BarPart wait{"waiting for data", {}}, comm{"communication (exposed)", {}}, compute{"compute", {}};
  double previous_step = 0.0;
  for (const json& e : epochs) {
    const double step = number_or_nan(e, "step");
    const double steps = step - previous_step;
    previous_step = step;
    const double total = number_or_nan(e, "epoch_s");
    double w = number_or_nan(e, "data_wait_s"), c = number_or_nan(e, "comm_exposed_s");
    if (!std::isfinite(w)) w = 0.0;
    if (!std::isfinite(c)) c = 0.0;
    if (!(steps > 0) || !std::isfinite(total)) continue;
    bars.categories.push_back("epoch " + cell(e.value("epoch", json(nullptr))));
    wait.values.push_back(1e3 * w / steps);
    comm.values.push_back(1e3 * c / steps);
    compute.values.push_back(1e3 * std::max(0.0, total - w - c) / steps);
  }
  bars.parts = {compute, wait, comm};
  return bars;
}

std::string summary_table(const json& config, const std::vector<json>& epochs) {
  std::vector<std::vector<std::string>> rows;
  auto add = [&](const std::string& name, const json& value) {
    if (!value.is_null()) rows.push_back({escape_xml(name), cell(value)});
  };
  add("model", config.value("model", json(nullptr)));
  const std::string data = config.value("data", std::string());
  add("data", data.empty() ? json("Fashion-MNIST (the default)") : json(data));
  add("device", config.value("device", json(nullptr)));
  add("threads", config.value("threads_used", json(nullptr)));
  add("processes", config.value("world_size", json(nullptr)));
  add("determinism", config.value("determinism", json(nullptr)));
  add("seed", config.value("seed", json(nullptr)));
  if (!epochs.empty()) {
    const json& last = epochs.back();
    add("epochs completed", last.value("epoch", json(nullptr)));
    add("optimizer updates", last.value("step", json(nullptr)));
    for (const char* key :
         {"train_loss", "test_loss", "test_accuracy", "test_top5_accuracy", "train_baseline_mse",
          "test_baseline_mse", "images_per_s", "frames_per_s", "elapsed_s", "peak_rss_mib"})
      add(std::string("last epoch: ") + key, last.value(key, json(nullptr)));
  }
  return html_table({"", ""}, rows);
}

}  // namespace

std::string run_report_html(const std::string& run_dir) {
  const fs::path dir(run_dir);
  const json config = read_json_file((dir / "config.json").string());
  const std::vector<json> records = read_json_lines((dir / "metrics.jsonl").string());
  const std::vector<json> steps = of_kind(records, "step"), epochs = of_kind(records, "epoch");
  std::ostringstream body;
  body << "<p class=\"note\">Run folder " << escape_xml(dir.filename().string()) << ", "
       << records.size() << " records in metrics.jsonl (" << steps.size() << " steps logged, "
       << epochs.size() << " epochs).</p>\n";
  body << "<h2>Summary</h2>\n" << summary_table(config, epochs);
  if (epochs.empty())
    body << "<p class=\"note\">No epoch finished: the run stopped before its first "
            "evaluation.</p>\n";

  body << "<h2>Loss</h2>\n";
  LineChart loss;
  loss.title = "Loss per optimizer update";
  loss.x_label = "update";
  loss.y_label = "loss (log scale)";
  loss.log_y = true;
  loss.series.push_back(over_steps(steps, "loss", "training loss (logged)", false));
  if (Series base = over_steps(steps, "baseline_mse", "previous frame (baseline)", false);
      any_finite(base))
    loss.series.push_back(base);
  loss.series.push_back(over_steps(epochs, "train_loss", "epoch: training loss", true));
  loss.series.push_back(over_steps(epochs, "test_loss", "epoch: test loss", true));
  body << line_chart_svg(loss);
  if (steps.empty())
    body << "<p class=\"note\">No step was logged (--log-every 0); the points are the epochs'"
            " figures.</p>\n";

  Series acc = over_steps(epochs, "test_accuracy", "test accuracy", true);
  Series top5 = over_steps(epochs, "test_top5_accuracy", "test top-5 accuracy", true);
  if (any_finite(acc) || any_finite(top5)) {
    LineChart chart;
    chart.title = "Accuracy per epoch";
    chart.x_label = "update";
    chart.y_label = "accuracy";
    for (Series* s : {&acc, &top5})
      if (any_finite(*s)) chart.series.push_back(*s);
    body << "<h2>Accuracy</h2>\n" << line_chart_svg(chart);
  }

  if (Series lr = over_steps(steps, "lr", "learning rate", false); any_finite(lr)) {
    LineChart chart;
    chart.title = "Learning rate";
    chart.x_label = "update";
    chart.y_label = "learning rate";
    chart.series.push_back(lr);
    chart.height = 240;
    body << line_chart_svg(chart);
  }

  body << "<h2>Speed</h2>\n";
  const bool video = any_finite(over_steps(epochs, "frames_per_s", "", true));
  LineChart speed;
  speed.title =
      video ? "Training frames per second, per epoch" : "Training images per second, per epoch";
  speed.x_label = "update";
  speed.y_label = video ? "frames/s" : "images/s";
  speed.series.push_back(over_steps(epochs, video ? "frames_per_s" : "images_per_s",
                                    video ? "frames/s" : "images/s", true));
  speed.height = 260;
  body << line_chart_svg(speed) << stacked_bars_svg(step_breakdown(epochs));

  json settings = config;
  const json environment = settings.value("environment", json::object());
  settings.erase("environment");
  body << "<h2>Environment</h2>\n";
  if (environment.empty())
    body << "<p class=\"note\">Not recorded (a run from an earlier version).</p>\n";
  else
    body << json_table(environment);
  body << "<h2>Configuration</h2>\n" << json_table(settings);
  return html_page("epoch run: " + config.value("model", std::string("?")), body.str());
}

}  // namespace epoch::report
