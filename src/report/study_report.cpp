// The report of a study, drawn from study.json and each run's metrics.jsonl (report.h). Every
// field of study.json the page uses is checked for its type; each run's losses are thinned as
// they are read, so the curves come from a bounded number of points.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>

#include "decimate.h"
#include "epoch/report/report.h"
#include "epoch/report/svg_chart.h"
#include "epoch/study/stats.h"
#include "epoch/tensor/error.h"
#include "html_page.h"
#include "report_input.h"

namespace epoch::report {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr std::size_t kMaxConfigs = 64;  // configurations a study report draws
constexpr std::size_t kMaxRuns = 1000;   // runs a study report reads
constexpr std::size_t kMaxCurvePoints = 2000;

/// A run of study.json, its fields checked.
struct Run {
  std::string config, seed_text;  // seed_text: "" when study.json gives no seed
  json seed, figure, wall_s;      // as study.json holds them (null when absent)
  std::string run_dir;
  std::string weights;  // the final weights' SHA-256 ("" when study.json gives none)
};

/// A machine of the study (a combined study has one per source), as text cells.
struct Machine {
  std::string label, cpu, cpu_isa, onednn_isa, cores, gpus, cudnn, version;
};

/// The comparisons and the other lists of study.json, checked.
struct Study {
  std::string figure;
  double margin = 0.0;
  std::vector<std::string> configs;
  std::vector<Run> runs;
  std::vector<std::pair<std::string, std::string>> skipped;  // configuration, why
  std::vector<json> comparisons;                             // each checked by check_comparison
  std::vector<Machine> machines;
  std::vector<std::string> sources;  // a combined study's folders
};

/// The value of `key` of `object` (null when absent), checked to be of kind `kind`.
json value_of(const json& object, const char* key, Kind kind, const Where& where) {
  const json* v = field(object, key, kind, where);
  return v != nullptr ? *v : json();
}

/// The array field `key` (empty when absent), checked to be a list of objects (or `element`).
const json& list_of(const json& object, const char* key, Kind element, const Where& where) {
  static const json empty = json::array();
  const json* list = field(object, key, Kind::array, where);
  if (list == nullptr) return empty;
  for (std::size_t i = 0; i < list->size(); ++i)
    expect_kind((*list)[i], element, where.at(key).at(i));
  return *list;
}

/// A 95% interval field: a list of two numbers (or nulls).
void check_interval(const json& object, const char* key, const Where& where) {
  const json* ci = field(object, key, Kind::array, where);
  if (ci == nullptr) return;
  for (std::size_t i = 0; i < ci->size(); ++i)
    if (!(*ci)[i].is_null()) expect_kind((*ci)[i], Kind::number, where.at(key).at(i));
}

void check_comparison(const json& c, const Where& where) {
  for (const char* key : {"a", "b", "verdict", "words", "bits"}) field(c, key, Kind::string, where);
  for (const char* key : {"seeds", "identical_bits"}) field(c, key, Kind::integer, where);
  field(c, "difference", Kind::number, where);
  check_interval(c, "bootstrap_ci", where);
  for (const char* test : {"paired", "welch", "tost", "mann_whitney"}) {
    const json* t = field(c, test, Kind::object, where);
    if (t == nullptr) continue;
    for (const char* key : {"p", "tost_p"}) field(*t, key, Kind::number, where.at(test));
    check_interval(*t, "ci", where.at(test));
  }
}

Study read_study(const json& j, const std::string& file) {
  const Where top{file, ""};
  Study s;
  s.figure = clipped(text_field(j, "figure", top, "figure"), 200);
  const double margin = number_field(j, "margin", top);
  s.margin = std::isfinite(margin) ? margin : 0.0;
  const json& configs = list_of(j, "configs", Kind::string, top);
  if (configs.size() > kMaxConfigs)
    EPOCH_THROW(IoError, file, ": ", configs.size(),
                " configurations in \"configs\", more than the ", kMaxConfigs, " a report draws");
  for (const json& c : configs) s.configs.push_back(c.get<std::string>());
  const json& runs = list_of(j, "runs", Kind::object, top);
  if (runs.size() > kMaxRuns)
    EPOCH_THROW(IoError, file, ": ", runs.size(), " runs in \"runs\", more than the ", kMaxRuns,
                " a report reads");
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const Where at = top.at("runs").at(i);
    Run r;
    r.config = text_field(runs[i], "config", at);
    r.seed = value_of(runs[i], "seed", Kind::integer, at);
    if (!r.seed.is_null()) r.seed_text = r.seed.dump();
    value_of(runs[i], "repeat", Kind::integer, at);
    r.figure = value_of(runs[i], "figure", Kind::number, at);
    r.wall_s = value_of(runs[i], "wall_s", Kind::number, at);
    r.run_dir = text_field(runs[i], "run_dir", at);
    r.weights = text_field(runs[i], "weights_sha256", at);
    s.runs.push_back(std::move(r));
  }
  const json& machines = list_of(j, "machines", Kind::object, top);
  for (std::size_t i = 0; i < machines.size() && i < kMaxConfigs; ++i) {
    const Where at = top.at("machines").at(i);
    const json& m = machines[i];
    Machine out;
    out.label = clipped(text_field(m, "label", at), 200);
    out.cpu = clipped(text_field(m, "cpu", at), 200);
    out.cpu_isa = clipped(text_field(m, "cpu_isa", at), 100);
    out.onednn_isa = clipped(text_field(m, "onednn_isa", at), 100);
    const json cores = value_of(m, "logical_cores", Kind::integer, at);
    out.cores = cores.is_null() ? "" : cores.dump();
    for (const json& g : list_of(m, "gpus", Kind::object, at)) {
      const std::string name = text_field(g, "name", at.at("gpus"));
      const std::string driver = text_field(g, "driver", at.at("gpus"));
      out.gpus += (out.gpus.empty() ? "" : ", ") + clipped(name, 100) +
                  (driver.empty() ? "" : " (driver " + clipped(driver, 40) + ")");
    }
    out.cudnn = clipped(text_field(m, "cudnn", at), 100);
    out.version = clipped(text_field(m, "epoch_version", at), 100);
    s.machines.push_back(std::move(out));
  }
  for (const json& d : list_of(j, "sources", Kind::string, top))
    if (s.sources.size() < kMaxConfigs) s.sources.push_back(clipped(d.get<std::string>(), 300));
  const json& skipped = list_of(j, "skipped", Kind::object, top);
  for (std::size_t i = 0; i < skipped.size(); ++i) {
    const Where at = top.at("skipped").at(i);
    s.skipped.emplace_back(text_field(skipped[i], "config", at),
                           text_field(skipped[i], "reason", at));
  }
  const json& comparisons = list_of(j, "comparisons", Kind::object, top);
  for (std::size_t i = 0; i < comparisons.size(); ++i) {
    check_comparison(comparisons[i], top.at("comparisons").at(i));
    s.comparisons.push_back(comparisons[i]);
  }
  return s;
}

/// Whether `name` is one plain folder name (not "", ".", ".." and without "/" or NUL).
bool plain_folder_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." &&
         name.find_first_of(std::string("/\0", 2)) == std::string::npos;
}

/// Where a run's metrics may be: for a run folder `epoch study` made, <config>/seed-<seed> under
/// the study folder (where a shared or moved study has it; <machine>/<config>/seed-<seed> in a
/// combined study), then the folder study.json names. A configuration name that is not one
/// plain folder name, or two for a combined study's ("..", "a/b/c"), is not looked for.
std::vector<fs::path> run_folders(const fs::path& study_dir, const Run& run) {
  std::vector<fs::path> out;
  const std::size_t slash = run.config.find('/');
  const bool plain =
      slash == std::string::npos
          ? plain_folder_name(run.config)
          : plain_folder_name(run.config.substr(0, slash)) &&
                plain_folder_name(run.config.substr(slash + 1));
  if (plain && !run.seed_text.empty())
    out.push_back(study_dir / fs::path(run.config) / ("seed-" + run.seed_text));
  if (!run.run_dir.empty() && run.run_dir.find('\0') == std::string::npos)
    out.push_back(fs::path(run.run_dir));
  return out;
}

/// Opens a run's metrics.jsonl from the first of `folders` that has one; nullopt when none has.
using OpenMetrics = std::function<std::optional<LineReader>(const std::vector<fs::path>& folders)>;

/// A run's logged (step, loss) pairs, thinned to at most kMaxCurvePoints.
Thinned<std::pair<double, double>> read_losses(LineReader& lines) {
  Thinned<std::pair<double, double>> losses(kMaxCurvePoints);
  std::string line;
  while (lines.next(line)) {
    if (line.empty()) continue;
    const Where at{lines.name() + ": line " + std::to_string(lines.line_number()), ""};
    const json r = parse_json_object(line, at.file);
    if (text_field(r, "kind", at) != "step") continue;
    const double step = number_field(r, "step", at), loss = number_field(r, "loss", at);
    if (std::isfinite(step) && std::isfinite(loss)) losses.add({step, loss});
  }
  return losses;
}

/// The mean training loss over a configuration's repeats at each logged step, with the lowest
/// and highest as its band; thinned again when the repeats logged different steps.
Series loss_curve(const std::vector<Run>& runs,
                  const std::vector<std::vector<std::pair<double, double>>>& losses,
                  const std::string& config) {
  std::map<double, std::vector<double>> at_step;
  for (std::size_t i = 0; i < runs.size(); ++i)
    if (runs[i].config == config)
      for (const auto& [step, loss] : losses[i]) at_step[step].push_back(loss);
  Series s;
  s.name = config;
  const std::size_t every = 1 + at_step.size() / (kMaxCurvePoints + 1);
  std::size_t k = 0;
  for (const auto& [step, values] : at_step) {
    if (k++ % every != 0 && k != at_step.size()) continue;
    double sum = 0.0;
    for (double v : values) sum += v;
    s.x.push_back(step);
    s.y.push_back(sum / static_cast<double>(values.size()));
    s.low.push_back(*std::min_element(values.begin(), values.end()));
    s.high.push_back(*std::max_element(values.begin(), values.end()));
  }
  return s;
}

Html interval(const json* ci) {
  Html out;
  if (ci == nullptr || !ci->is_array() || ci->size() != 2) return out;
  return out.raw("[").append(cell((*ci)[0])).raw(", ").append(cell((*ci)[1])).raw("]");
}

/// A field of a comparison (checked by check_comparison) or of one of its tests.
const json* part(const json& c, const char* test, const char* key) {
  const json* where = &c;
  if (test != nullptr) {
    const auto t = c.find(test);
    if (t == c.end() || !t->is_object()) return nullptr;
    where = &*t;
  }
  const auto it = where->find(key);
  return it == where->end() ? nullptr : &*it;
}

Html cell_of(const json* value) { return value != nullptr ? cell(*value) : Html(); }

std::string pair_name(const json& c) {
  const json* a = part(c, nullptr, "a");
  const json* b = part(c, nullptr, "b");
  return (a != nullptr && a->is_string() ? a->get<std::string>() : "") + " vs " +
         (b != nullptr && b->is_string() ? b->get<std::string>() : "");
}

/// "3 of 5": the seeds whose final weights were the same bits under both configurations.
Html identical_cell(const json& c) {
  const json* same = part(c, nullptr, "identical_bits");
  const json* seeds = part(c, nullptr, "seeds");
  if (same == nullptr || seeds == nullptr || !same->is_number_integer() ||
      !seeds->is_number_integer())
    return Html::of_text("");
  return Html::of_text(same->dump() + " of " + seeds->dump());
}

Html tests_table(const std::vector<json>& comparisons) {
  std::vector<std::vector<Html>> rows;
  for (std::size_t i = 0; i < comparisons.size() && i < kMaxTableRows; ++i) {
    const json& c = comparisons[i];
    rows.push_back({Html::of_text(clipped(pair_name(c))), cell_of(part(c, nullptr, "difference")),
                    interval(part(c, "paired", "ci")), cell_of(part(c, "paired", "p")),
                    cell_of(part(c, "paired", "tost_p")), interval(part(c, "welch", "ci")),
                    cell_of(part(c, "welch", "p")), cell_of(part(c, "tost", "p")),
                    cell_of(part(c, "mann_whitney", "p")),
                    interval(part(c, nullptr, "bootstrap_ci")), identical_cell(c),
                    Html()
                        .raw("<span class=\"verdict\">")
                        .append(cell_of(part(c, nullptr, "verdict")))
                        .raw("</span>")});
  }
  std::vector<Html> header;
  for (const char* h :
       {"pair (a vs b)", "difference (a - b)", "paired 95% CI", "paired t p", "paired TOST p",
        "Welch 95% CI", "Welch p", "TOST p", "Mann-Whitney p", "bootstrap 95% CI",
        "identical bits (seeds)", "verdict"})
    header.push_back(Html::of_text(h));
  return html_table(header, rows, comparisons.size() - rows.size());
}

std::string render_study(const json& j, const std::string& file, const fs::path& dir,
                         const OpenMetrics& open_metrics) {
  const Study study = read_study(j, file);
  // Each run's losses, read once; the runs whose metrics.jsonl is nowhere are named below.
  std::vector<std::vector<std::pair<double, double>>> losses(study.runs.size());
  std::vector<std::string> found(study.runs.size());
  std::vector<std::string> missing;
  for (std::size_t i = 0; i < study.runs.size(); ++i) {
    const std::vector<fs::path> folders = run_folders(dir, study.runs[i]);
    std::optional<LineReader> lines = open_metrics(folders);
    if (!lines) {
      missing.push_back(clipped(study.runs[i].config, 200) + " seed " +
                        (study.runs[i].seed_text.empty() ? "?" : study.runs[i].seed_text));
      continue;
    }
    // Shown under the study folder where it is there, else as study.json names it.
    const fs::path folder = fs::path(lines->name()).parent_path();
    const fs::path relative = dir.empty() ? fs::path() : folder.lexically_relative(dir);
    found[i] = (relative.empty() || *relative.begin() == ".." ? folder : relative).string();
    losses[i] = read_losses(*lines).items();
  }

  Html body;
  body.append(note("Compared: the " + study.figure + " (lower is better), " +
                   std::to_string(study.runs.size()) + " runs. Equivalence margin +-" +
                   format_number(study.margin) +
                   ". Every configuration of a seed starts from the same initial weights and "
                   "sees the same data order, so the tests pair the runs by seed."));

  body.raw("<h2>Verdicts</h2>\n<ul>\n");
  for (std::size_t i = 0; i < study.comparisons.size() && i < kMaxTableRows; ++i) {
    const json& c = study.comparisons[i];
    const json* words = part(c, nullptr, "words");
    body.raw("<li><b>")
        .text(clipped(pair_name(c)))
        .raw("</b>: ")
        .text(words != nullptr && words->is_string() ? clipped(words->get<std::string>()) : "")
        .raw("</li>\n");
  }
  body.raw("</ul>\n");
  if (!study.machines.empty()) {
    std::vector<std::vector<Html>> rows;
    for (const Machine& m : study.machines)
      rows.push_back({Html::of_text(m.label), Html::of_text(m.cpu), Html::of_text(m.cpu_isa),
                      Html::of_text(m.onednn_isa), Html::of_text(m.cores),
                      Html::of_text(m.gpus.empty() ? "none" : m.gpus),
                      Html::of_text(m.cudnn.empty() ? "none" : m.cudnn),
                      Html::of_text(m.version)});
    body.raw("<h2>Machines</h2>\n");
    if (!study.sources.empty()) {
      std::string list;
      for (const std::string& s : study.sources) list += (list.empty() ? "" : ", ") + s;
      body.append(note("Combined from the studies in " + list +
                       "; each machine's configurations are named <machine>/<configuration>."));
    }
    body.append(html_table({Html::of_text("machine"), Html::of_text("CPU"),
                            Html::of_text("epoch's ISA"), Html::of_text("oneDNN's ISA"),
                            Html::of_text("logical cores"), Html::of_text("GPUs"),
                            Html::of_text("cuDNN"), Html::of_text("epoch")},
                           rows, 0));
  }
  if (!study.skipped.empty()) {
    std::vector<std::vector<Html>> rows;
    for (std::size_t i = 0; i < study.skipped.size() && i < kMaxTableRows; ++i)
      rows.push_back({Html::of_text(clipped(study.skipped[i].first)),
                      Html::of_text(clipped(study.skipped[i].second))});
    body.append(note("Skipped on this machine:"))
        .append(html_table({Html::of_text("configuration"), Html::of_text("why")}, rows,
                           study.skipped.size() - rows.size()));
  }

  body.raw("<h2>Training loss per configuration</h2>\n");
  LineChart curves;
  curves.title = "Training loss: mean over repeats, band from lowest to highest";
  curves.x_label = "update";
  curves.y_label = "loss (log scale)";
  curves.log_y = true;
  for (const std::string& c : study.configs) {
    curves.series.push_back(loss_curve(study.runs, losses, c));
    curves.series.back().name = clipped(c, 200);
  }
  body.append(line_chart_svg(curves));
  if (!missing.empty()) {
    std::string names;
    for (std::size_t i = 0; i < missing.size() && i < 20; ++i)
      names += (i == 0 ? "" : ", ") + missing[i];
    if (missing.size() > 20) names += ", and " + std::to_string(missing.size() - 20) + " more";
    body.append(note("Left out of the curves: " + std::to_string(missing.size()) +
                     " runs whose metrics.jsonl is missing (" + names + ")."));
  }

  body.raw("<h2>The compared figure</h2>\n");
  BoxPlot boxes;
  boxes.title = study.figure + " per configuration";
  boxes.y_label = study.figure;
  for (const std::string& c : study.configs) {
    Box b;
    b.name = clipped(c, 200);
    for (const Run& r : study.runs)
      if (r.config == c && r.figure.is_number()) b.values.push_back(r.figure.get<double>());
    if (b.values.empty()) continue;
    const study::Summary five = study::summarize(b.values);
    b.min = five.min;
    b.q1 = five.q1;
    b.median = five.median;
    b.q3 = five.q3;
    b.max = five.max;
    boxes.boxes.push_back(b);
  }
  body.append(box_plot_svg(boxes));

  body.raw("<h2>Tests</h2>\n").append(tests_table(study.comparisons));

  body.raw("<h2>Runs</h2>\n");
  std::vector<std::vector<Html>> rows;
  for (std::size_t i = 0; i < study.runs.size() && i < kMaxTableRows; ++i) {
    const Run& r = study.runs[i];
    rows.push_back(
        {Html::of_text(clipped(r.config)), cell(r.seed), cell(r.figure), cell(r.wall_s),
         Html::of_text(clipped(r.weights, 12)),
         Html::of_text(found[i].empty() ? "(metrics.jsonl missing)" : clipped(found[i]))});
  }
  body.append(html_table(
      {Html::of_text("configuration"), Html::of_text("seed"), Html::of_text(study.figure),
       Html::of_text("wall s"), Html::of_text("weights (SHA-256)"), Html::of_text("run folder")},
      rows, study.runs.size() - rows.size()));
  return html_page("epoch study: " + study.figure, body).str();
}

}  // namespace

std::string study_report_html(const std::string& study_dir) {
  const fs::path dir(study_dir);
  const std::string file = (dir / "study.json").string();
  const json study = read_json_file(file);
  const OpenMetrics open = [](const std::vector<fs::path>& folders) -> std::optional<LineReader> {
    for (const fs::path& folder : folders) {
      const fs::path path = folder / "metrics.jsonl";
      std::error_code ec;
      // Only a file that is not there is a missing run; anything else there must be readable.
      if (fs::exists(fs::symlink_status(path, ec))) return LineReader::open_file(path.string());
    }
    return std::nullopt;
  };
  return render_study(study, file, dir, open);
}

std::string study_report_html_from_text(std::string_view study_json,
                                        std::string_view metrics_jsonl) {
  const json study = parse_json_object(study_json, "study.json");
  const OpenMetrics open = [&](const std::vector<fs::path>& folders) -> std::optional<LineReader> {
    if (folders.empty()) return std::nullopt;
    return LineReader::of_text(metrics_jsonl, (folders.front() / "metrics.jsonl").string());
  };
  return render_study(study, "study.json", fs::path(), open);
}

}  // namespace epoch::report
