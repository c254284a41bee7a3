// The report of one training run, drawn from its config.json and metrics.jsonl (report.h). The
// records are read one line at a time and thinned as they come (decimate.h), so a run of any
// length is drawn from a bounded number of points in bounded memory.
#include <cmath>
#include <filesystem>
#include <limits>

#include "decimate.h"
#include "epoch/report/report.h"
#include "epoch/report/svg_chart.h"
#include "epoch/tensor/error.h"
#include "html_page.h"
#include "report_input.h"

namespace epoch::report {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr std::size_t kMaxLinePoints = 2000;  // per line: the envelope of its buckets
constexpr std::size_t kMaxMarkers = 400;      // per series of epoch markers
constexpr std::size_t kMaxBars = 60;          // epochs in the time breakdown

/// Milliseconds per step of one epoch: computing, waiting for data, communication left exposed.
struct Bar {
  double epoch = 0.0, compute = 0.0, wait = 0.0, comm = 0.0;
};

/// What the report draws of metrics.jsonl, gathered in one pass over its lines.
struct RunMetrics {
  std::uint64_t records = 0, steps = 0, epochs = 0;
  Decimator loss{kMaxLinePoints}, baseline{kMaxLinePoints}, lr{kMaxLinePoints};
  Decimator train_loss{kMaxMarkers}, test_loss{kMaxMarkers}, accuracy{kMaxMarkers},
      top5{kMaxMarkers}, images_per_s{kMaxMarkers}, frames_per_s{kMaxMarkers};
  Thinned<Bar> bars{kMaxBars};
  json last_epoch = json::object();  // the last epoch record's summary figures
};

constexpr const char* kSummaryKeys[] = {
    "train_loss",         "test_loss",         "test_accuracy", "test_top5_accuracy",
    "train_baseline_mse", "test_baseline_mse", "images_per_s",  "frames_per_s",
    "elapsed_s",          "peak_rss_mib"};

RunMetrics read_metrics(LineReader& lines) {
  RunMetrics m;
  double previous_step = 0.0;
  std::string line;
  while (lines.next(line)) {
    if (line.empty()) continue;
    const Where at{lines.name() + ": line " + std::to_string(lines.line_number()), ""};
    const json r = parse_json_object(line, at.file);
    ++m.records;
    const std::string kind = text_field(r, "kind", at);
    if (kind != "step" && kind != "epoch") continue;
    const double step = number_field(r, "step", at);
    if (kind == "step") {
      ++m.steps;
      m.loss.add(step, number_field(r, "loss", at));
      m.baseline.add(step, number_field(r, "baseline_mse", at));
      m.lr.add(step, number_field(r, "lr", at));
      continue;
    }
    ++m.epochs;
    m.train_loss.add(step, number_field(r, "train_loss", at));
    m.test_loss.add(step, number_field(r, "test_loss", at));
    m.accuracy.add(step, number_field(r, "test_accuracy", at));
    m.top5.add(step, number_field(r, "test_top5_accuracy", at));
    m.images_per_s.add(step, number_field(r, "images_per_s", at));
    m.frames_per_s.add(step, number_field(r, "frames_per_s", at));
    const double steps = step - previous_step;
    previous_step = step;
    const double total = number_field(r, "epoch_s", at);
    double wait = number_field(r, "data_wait_s", at), comm = number_field(r, "comm_exposed_s", at);
    const double epoch = number_field(r, "epoch", at);
    if (!std::isfinite(wait)) wait = 0.0;
    if (!std::isfinite(comm)) comm = 0.0;
    if (steps > 0 && std::isfinite(total))
      m.bars.add({epoch, 1e3 * std::max(0.0, total - wait - comm) / steps, 1e3 * wait / steps,
                  1e3 * comm / steps});
    m.last_epoch = json::object();
    for (const char* key : {"epoch", "step"})
      if (const json* v = field(r, key, Kind::number, at)) m.last_epoch[key] = *v;
    for (const char* key : kSummaryKeys)
      if (const json* v = field(r, key, Kind::number, at)) m.last_epoch[key] = *v;
  }
  return m;
}

Series series(const Decimator& d, const std::string& name, bool points) {
  Series s;
  s.name = name;
  s.points = points;
  d.points(s.x, s.y);
  return s;
}

bool any_finite(const Series& s) {
  for (double v : s.y)
    if (std::isfinite(v)) return true;
  return false;
}

StackedBars step_breakdown(const Thinned<Bar>& thinned) {
  StackedBars bars;
  bars.title = "Where each step's time went, per epoch";
  bars.y_label = "ms per step";
  BarPart wait{"waiting for data", {}}, comm{"communication (exposed)", {}}, compute{"compute", {}};
  for (const Bar& b : thinned.items()) {
    bars.categories.push_back("epoch " + format_number(b.epoch));
    wait.values.push_back(b.wait);
    comm.values.push_back(b.comm);
    compute.values.push_back(b.compute);
  }
  bars.parts = {compute, wait, comm};
  return bars;
}

Html summary_table(const json& config, const std::string& file, const json& last_epoch) {
  std::vector<std::vector<Html>> rows;
  auto add = [&](const std::string& name, const json* value) {
    if (value != nullptr && !value->is_null()) rows.push_back({Html::of_text(name), cell(*value)});
  };
  auto find = [&](const char* key) -> const json* {
    const auto it = config.find(key);
    return it == config.end() ? nullptr : &*it;
  };
  add("model", find("model"));
  const std::string data = text_field(config, "data", {file, ""});
  const json data_shown = data.empty() ? json("Fashion-MNIST (the default)") : json(data);
  add("data", &data_shown);
  add("device", find("device"));
  add("threads", find("threads_used"));
  add("processes", find("world_size"));
  add("determinism", find("determinism"));
  add("seed", find("seed"));
  if (!last_epoch.empty()) {
    auto last = [&](const char* key) -> const json* {
      const auto it = last_epoch.find(key);
      return it == last_epoch.end() ? nullptr : &*it;
    };
    add("epochs completed", last("epoch"));
    add("optimizer updates", last("step"));
    for (const char* key : kSummaryKeys) add(std::string("last epoch: ") + key, last(key));
  }
  return html_table({Html(), Html()}, rows);
}

/// The page of a run from its parsed config.json and its metrics.jsonl's lines.
std::string render_run(const json& config, const std::string& config_file, LineReader& metrics,
                       const std::string& run_name) {
  check_config_types(config, config_file);
  const RunMetrics m = read_metrics(metrics);
  Html body;
  body.append(note("Run folder " + clipped(run_name) + ", " + std::to_string(m.records) +
                   " records in metrics.jsonl (" + std::to_string(m.steps) + " steps logged, " +
                   std::to_string(m.epochs) + " epochs)."));
  body.raw("<h2>Summary</h2>\n").append(summary_table(config, config_file, m.last_epoch));
  if (m.epochs == 0)
    body.append(note("No epoch finished: the run stopped before its first evaluation."));

  body.raw("<h2>Loss</h2>\n");
  LineChart loss;
  loss.title = "Loss per optimizer update";
  loss.x_label = "update";
  loss.y_label = "loss (log scale)";
  loss.log_y = true;
  loss.series.push_back(series(m.loss, "training loss (logged)", false));
  if (Series base = series(m.baseline, "previous frame (baseline)", false); any_finite(base))
    loss.series.push_back(base);
  loss.series.push_back(series(m.train_loss, "epoch: training loss", true));
  loss.series.push_back(series(m.test_loss, "epoch: test loss", true));
  body.append(line_chart_svg(loss));
  if (m.steps == 0)
    body.append(note("No step was logged (--log-every 0); the points are the epochs' figures."));
  if (m.steps > kMaxLinePoints || m.epochs > kMaxMarkers)
    body.append(note("A long run: each line is drawn from at most " +
                     std::to_string(kMaxLinePoints) +
                     " points (the lowest and the highest of each stretch of steps), each "
                     "series of epoch markers from at most " +
                     std::to_string(kMaxMarkers) + ", and the time breakdown shows at most " +
                     std::to_string(kMaxBars + 1) + " epochs."));

  Series acc = series(m.accuracy, "test accuracy", true);
  Series top5 = series(m.top5, "test top-5 accuracy", true);
  if (any_finite(acc) || any_finite(top5)) {
    LineChart chart;
    chart.title = "Accuracy per epoch";
    chart.x_label = "update";
    chart.y_label = "accuracy";
    for (Series* s : {&acc, &top5})
      if (any_finite(*s)) chart.series.push_back(*s);
    body.raw("<h2>Accuracy</h2>\n").append(line_chart_svg(chart));
  }

  if (Series lr = series(m.lr, "learning rate", false); any_finite(lr)) {
    LineChart chart;
    chart.title = "Learning rate";
    chart.x_label = "update";
    chart.y_label = "learning rate";
    chart.series.push_back(lr);
    chart.height = 240;
    body.append(line_chart_svg(chart));
  }

  body.raw("<h2>Speed</h2>\n");
  const bool video = any_finite(series(m.frames_per_s, "", true));
  LineChart speed;
  speed.title =
      video ? "Training frames per second, per epoch" : "Training images per second, per epoch";
  speed.x_label = "update";
  speed.y_label = video ? "frames/s" : "images/s";
  speed.series.push_back(
      series(video ? m.frames_per_s : m.images_per_s, video ? "frames/s" : "images/s", true));
  speed.height = 260;
  body.append(line_chart_svg(speed)).append(stacked_bars_svg(step_breakdown(m.bars)));

  json settings = config;
  // The model's layer table, as `epoch models --show` prints it (runs since model files).
  if (const auto it = config.find("model_summary"); it != config.end() && it->is_string()) {
    body.raw("<h2>Model</h2>\n<pre>").text(it->get<std::string>()).raw("</pre>\n");
    settings.erase("model_summary");
  }
  const json* environment = field(config, "environment", Kind::object, {config_file, ""});
  settings.erase("environment");
  body.raw("<h2>Environment</h2>\n");
  if (environment == nullptr || environment->empty())
    body.append(note("Not recorded (a run from an earlier version)."));
  else
    body.append(json_table(*environment));
  body.raw("<h2>Configuration</h2>\n").append(json_table(settings));
  return html_page("epoch run: " + text_field(config, "model", {config_file, ""}, "?"), body).str();
}

}  // namespace

std::string run_report_html(const std::string& run_dir) {
  const fs::path dir(run_dir);
  const std::string config_file = (dir / "config.json").string();
  const json config = read_json_file(config_file);
  LineReader metrics = LineReader::open_file((dir / "metrics.jsonl").string());
  return render_run(config, config_file, metrics, dir.filename().string());
}

std::string run_report_html_from_text(std::string_view config_json, std::string_view metrics_jsonl,
                                      const std::string& run_name) {
  const json config = parse_json_object(config_json, "config.json");
  LineReader metrics = LineReader::of_text(metrics_jsonl, "metrics.jsonl");
  return render_run(config, "config.json", metrics, run_name);
}

}  // namespace epoch::report
