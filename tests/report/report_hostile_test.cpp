// The reports against hostile folders: a script in any field of a run or a study comes out as
// text, never markup; metrics.jsonl as /dev/zero, a FIFO, a folder or a 300,000-record file is
// an error or a small page, quickly; a field of the wrong type is one error naming the file and
// the field. Also the thinning of long series (decimate.h).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "epoch/report/report.h"
#include "epoch/tensor/error.h"
#include "report/decimate.h"
#include "testing/testing.h"

namespace epoch::report {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Each breaks out of a different place: text between tags, a double- or single-quoted attribute,
// the <title>, an SVG <text>, a CDATA-minded reader.
const std::string kPayload =
    "<script>document.title='PWNED';console.log('PWNED')</script>"
    "<img src=x onerror=\"document.title='PWNED'\">"
    "\"><script>document.title='PWNED'</script>"
    "'><svg onload=\"document.title='PWNED'\">"
    "</title></text></svg><script>document.title='PWNED'</script>"
    "]]><iframe src=\"javascript:document.title='PWNED'\"></iframe>";

void write(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

/// A run folder with kPayload in every string of config.json (settings, notes, environment, and
/// keys at every level) and in every string and key of metrics.jsonl.
void write_hostile_run(const std::string& dir) {
  json config = {{"model", kPayload},
                 {"data", kPayload},
                 {"device", kPayload},
                 {"determinism", kPayload},
                 {"epoch_version", kPayload},
                 {"seed", 1},
                 {"threads_used", 2},
                 {"optimizer", {{"name", kPayload}, {"lr", 0.001}, {kPayload, kPayload}}},
                 {"augment", {{"fill_mode", kPayload}}},
                 {kPayload, {{kPayload, kPayload}, {"list", {kPayload, 1, kPayload}}}},
                 {"environment", {{"cpu", kPayload}, {kPayload, kPayload}, {"cuda_build", false}}}};
  write(dir + "/config.json", config.dump());
  std::string lines;
  for (int step = 1; step <= 8; ++step) {
    lines +=
        json{{"kind", "step"}, {"step", step}, {"loss", 1.0 / step}, {kPayload, kPayload}}.dump() +
        "\n";
    if (step % 4 == 0)
      lines += json{{"kind", "epoch"},   {"epoch", step / 4},    {"step", step},
                    {"train_loss", 0.1}, {"test_loss", 0.2},     {"test_accuracy", 0.8},
                    {"epoch_s", 2.0},    {"images_per_s", 10.0}, {kPayload, kPayload}}
                   .dump() +
               "\n";
  }
  lines += json{{"kind", kPayload}, {kPayload, kPayload}}.dump() + "\n";
  write(dir + "/metrics.jsonl", lines);
}

/// A study folder with kPayload in every string of study.json: the figure, the configurations'
/// names, the runs' fields, the skipped configurations and reasons, every field of a comparison,
/// and keys. Its runs are hostile run folders, found through their run_dir (a name holding a
/// slash is no folder under the study).
void write_hostile_study(const std::string& dir) {
  const std::string a = kPayload + "a", b = kPayload + "b";
  json runs = json::array();
  for (const std::string& config : {a, b})
    for (int seed = 0; seed < 2; ++seed) {
      const std::string run_dir = dir + "/runs/" + (config == a ? "a" : "b") + std::to_string(seed);
      write_hostile_run(run_dir);
      runs.push_back({{"config", config},
                      {"seed", seed},
                      {"repeat", seed},
                      {"figure", 0.1 + 0.01 * seed},
                      {"wall_s", 1.0},
                      {"run_dir", run_dir},
                      {kPayload, kPayload}});
    }
  json comparison = {{"a", a},
                     {"b", b},
                     {"difference", 0.0},
                     {"welch", {{"p", 1.0}, {"ci", {-0.01, 0.01}}, {kPayload, kPayload}}},
                     {"paired", {{"p", 1.0}, {"ci", {0.0, 0.0}}, {"tost_p", 0.0}}},
                     {"tost", {{"p", 0.02}}},
                     {"mann_whitney", {{"p", 1.0}}},
                     {"bootstrap_ci", {-0.008, 0.008}},
                     {"verdict", kPayload},
                     {"words", kPayload},
                     {kPayload, kPayload}};
  write(dir + "/study.json", json{{"figure", kPayload},
                                  {"margin", 0.001},
                                  {"configs", {a, b}},
                                  {"skipped", {{{"config", kPayload}, {"reason", kPayload}}}},
                                  {"runs", runs},
                                  {"comparisons", {comparison}},
                                  {"machines",
                                   {{{"label", kPayload},
                                     {"cpu", kPayload},
                                     {"cpu_isa", kPayload},
                                     {"onednn_isa", kPayload},
                                     {"logical_cores", 2},
                                     {"gpus", {{{"name", kPayload}, {"driver", kPayload}}}},
                                     {"cudnn", kPayload},
                                     {"epoch_version", kPayload}}}},
                                  {"sources", {kPayload}},
                                  {kPayload, kPayload}}
                                 .dump());
}

/// No payload markup in the page; the payload is there as escaped text.
void expect_payload_inert(const std::string& html) {
  for (const char* markup : {"<script", "<img", "<iframe", "<svg onload", "onerror=\"", "onload=\"",
                             "'PWNED'", "</title></text>"})
    EXPECT_EQ(html.find(markup), std::string::npos) << "raw markup from a field: " << markup;
  EXPECT_NE(html.find("&lt;script&gt;document.title=&#39;PWNED&#39;"), std::string::npos)
      << "the payload is shown, as text";
  EXPECT_NE(html.find("onerror=&quot;"), std::string::npos);
  EXPECT_NE(html.find("&quot;&gt;&lt;script&gt;"), std::string::npos);
  EXPECT_NE(html.find("&#39;&gt;&lt;svg onload"), std::string::npos);
}

TEST(ReportEscaping, EveryFieldOfARunIsText) {
  testing::TempDir tmp;
  write_hostile_run(tmp / "run");
  const std::string html = run_report_html(tmp / "run");
  expect_payload_inert(html);
  // The keys of the settings and of the environment are shown too, escaped.
  EXPECT_NE(html.find("optimizer.&lt;script&gt;"), std::string::npos);
  EXPECT_NE(html.find("<title>epoch run: &lt;script&gt;"), std::string::npos);
}

TEST(ReportEscaping, EveryFieldOfAStudyIsText) {
  testing::TempDir tmp;
  write_hostile_study(tmp / "study");
  const std::string html = study_report_html(tmp / "study");
  expect_payload_inert(html);
  EXPECT_NE(html.find("<th>&lt;script&gt;"), std::string::npos) << "the figure as a header";
  EXPECT_NE(html.find("<title>epoch study: &lt;script&gt;"), std::string::npos);
  EXPECT_EQ(html.find("metrics.jsonl missing"), std::string::npos) << "runs found by run_dir";
}

TEST(ReportEscaping, AFolderNamedWithMarkupIsText) {
  testing::TempDir tmp;
  const std::string dir = tmp / "run<img src=x onerror=\"document.title='PWNED'\">";
  write_hostile_run(dir);
  const std::string html = run_report_html(dir);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_NE(html.find("run&lt;img src=x"), std::string::npos);
}

/// The IoError `f` throws; fails when it throws nothing or something else.
template <typename F>
std::string io_error_of(F&& f) {
  try {
    f();
  } catch (const IoError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not an IoError: " << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

void write_small_run(const std::string& dir) {
  write(dir + "/config.json", json{{"model", "mlp"}}.dump());
  write(dir + "/metrics.jsonl", json{{"kind", "step"}, {"step", 1}, {"loss", 0.5}}.dump() + "\n");
}

TEST(ReportBounds, MetricsThatAreNoRegularFileAreAnErrorNamingThemAtOnce) {
  testing::TempDir tmp;
  const auto start = std::chrono::steady_clock::now();
  write_small_run(tmp / "zero");
  fs::remove(tmp / "zero/metrics.jsonl");
  fs::create_symlink("/dev/zero", tmp / "zero/metrics.jsonl");
  std::string e = io_error_of([&] { run_report_html(tmp / "zero"); });
  EXPECT_NE(e.find("zero/metrics.jsonl: "), std::string::npos) << e;
  EXPECT_NE(e.find("device"), std::string::npos) << e;

  write_small_run(tmp / "fifo");
  fs::remove(tmp / "fifo/metrics.jsonl");
  ASSERT_EQ(::mkfifo((tmp / "fifo/metrics.jsonl").c_str(), 0600), 0);
  e = io_error_of([&] { run_report_html(tmp / "fifo"); });
  EXPECT_NE(e.find("fifo/metrics.jsonl: "), std::string::npos) << e;
  EXPECT_NE(e.find("FIFO"), std::string::npos) << e;

  write_small_run(tmp / "folder");
  fs::remove(tmp / "folder/metrics.jsonl");
  fs::create_directories(tmp / "folder/metrics.jsonl");
  e = io_error_of([&] { run_report_html(tmp / "folder"); });
  EXPECT_NE(e.find("folder/metrics.jsonl: "), std::string::npos) << e;
  EXPECT_NE(e.find("directory"), std::string::npos) << e;

  write_small_run(tmp / "config-fifo");
  fs::remove(tmp / "config-fifo/config.json");
  ASSERT_EQ(::mkfifo((tmp / "config-fifo/config.json").c_str(), 0600), 0);
  e = io_error_of([&] { run_report_html(tmp / "config-fifo"); });
  EXPECT_NE(e.find("config.json: "), std::string::npos) << e;

  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 5.0) << "nothing waits on a FIFO or reads a device";
}

TEST(ReportBounds, ALineLongerThanAMegabyteIsRefusedNamingFileAndLine) {
  testing::TempDir tmp;
  write_small_run(tmp / "run");
  std::ofstream(tmp / "run/metrics.jsonl", std::ios::app)
      << "{\"kind\": \"step\", \"note\": \"" << std::string(3 << 20, 'x') << "\"}\n";
  const std::string e = io_error_of([&] { run_report_html(tmp / "run"); });
  EXPECT_NE(e.find("metrics.jsonl: line 2 is longer than"), std::string::npos) << e;
}

TEST(ReportBounds, DeeplyNestedJsonIsRefused) {
  testing::TempDir tmp;
  write_small_run(tmp / "run");
  write(tmp / "run/config.json", std::string(100000, '[') + std::string(100000, ']'));
  const std::string e = io_error_of([&] { run_report_html(tmp / "run"); });
  EXPECT_NE(e.find("config.json: JSON nested more than"), std::string::npos) << e;
}

TEST(ReportBounds, ALongRunMakesASmallPage) {
  testing::TempDir tmp;
  write(tmp / "run/config.json", json{{"model", "mlp"}}.dump());
  constexpr int kSteps = 300000, kEvery = 1000;
  std::string text;
  text.reserve(std::size_t{kSteps} * 80);
  char line[256];
  for (int step = 1; step <= kSteps; ++step) {
    // One spike, which the thinning keeps.
    const double loss = step == kSteps / 2 ? 1e4 : 1.0 / std::sqrt(step);
    std::snprintf(line, sizeof line,
                  "{\"kind\":\"step\",\"epoch\":%d,\"step\":%d,\"loss\":%.6g,\"lr\":0.001}\n",
                  step / kEvery + 1, step, loss);
    text += line;
    if (step % kEvery == 0) {
      std::snprintf(line, sizeof line,
                    "{\"kind\":\"epoch\",\"epoch\":%d,\"step\":%d,\"train_loss\":%.6g,"
                    "\"test_loss\":%.6g,\"test_accuracy\":0.5,\"images_per_s\":1000,"
                    "\"epoch_s\":2,\"data_wait_s\":0.1}\n",
                    step / kEvery, step, loss, loss);
      text += line;
    }
  }
  write(tmp / "run/metrics.jsonl", text);
  text.clear();
  text.shrink_to_fit();
  const std::string html = run_report_html(tmp / "run");
  EXPECT_LT(html.size(), 3u << 20) << "a page of a few MB, whatever the run's length";
  EXPECT_NE(html.find("300300 records"), std::string::npos);
  EXPECT_NE(html.find("A long run"), std::string::npos) << "the page says it thinned";
  EXPECT_NE(html.find(">1e+04<"), std::string::npos) << "the spike sets the y axis";
}

TEST(ReportBounds, AStudyRunWithoutMetricsIsNamedInANote) {
  testing::TempDir tmp;
  write_small_run(tmp / "study/cpu:1/seed-0");
  write_small_run(tmp / "study/cpu:2/seed-0");
  json runs = json::array();
  for (const char* config : {"cpu:1", "cpu:2", "cpu:3"})
    runs.push_back({{"config", config}, {"seed", 0}, {"figure", 0.1}, {"run_dir", "/gone"}});
  write(tmp / "study/study.json",
        json{{"figure", "loss"}, {"configs", {"cpu:1", "cpu:2", "cpu:3"}}, {"runs", runs}}.dump());
  const std::string html = study_report_html(tmp / "study");
  EXPECT_NE(html.find("1 runs whose metrics.jsonl is missing (cpu:3 seed 0)"), std::string::npos);
  EXPECT_NE(html.find("(metrics.jsonl missing)"), std::string::npos);
  // Something there that is no file is an error, not a missing run.
  fs::create_directories(tmp / "study/cpu:3/seed-0/metrics.jsonl");
  const std::string e = io_error_of([&] { study_report_html(tmp / "study"); });
  EXPECT_NE(e.find("cpu:3/seed-0/metrics.jsonl: "), std::string::npos) << e;
}

/// The error of a run whose config.json is `config` and metrics.jsonl `metrics`.
std::string run_error(const json& config, const std::string& metrics = "") {
  testing::TempDir tmp;
  write(tmp / "run/config.json", config.dump());
  write(tmp / "run/metrics.jsonl", metrics);
  return io_error_of([&] { run_report_html(tmp / "run"); });
}

TEST(ReportTypes, AWrongTypeInConfigNamesTheFileAndTheField) {
  for (const auto& [config, field] : std::vector<std::pair<json, std::string>>{
           {{{"batch_size", "x"}}, "\"batch_size\" is a string, expected an integer"},
           {{{"environment", 5}}, "\"environment\" is a number, expected an object"},
           {{{"environment", {{"cpu", {1, 2}}}}}, "\"environment.cpu\" is a list"},
           {{{"model", 3}}, "\"model\" is a number, expected a string"},
           {{{"optimizer", 5}}, "\"optimizer\" is a number, expected an object"},
           {{{"optimizer", {{"lr", "fast"}}}}, "\"optimizer.lr\" is a string, expected a number"},
           {{{"augment", {{"horizontal_flip", 1}}}}, "\"augment.horizontal_flip\" is a number"},
           {{{"threads_used", 1.5}}, "\"threads_used\" is a number, expected an integer"},
           {{{"data", json::array()}}, "\"data\" is a list, expected a string"}}) {
    const std::string e = run_error(config);
    EXPECT_NE(e.find("config.json: field " + field), std::string::npos) << e;
  }
}

TEST(ReportTypes, AWrongTypeInMetricsNamesTheFileTheLineAndTheField) {
  const json config = {{"model", "mlp"}};
  const std::string ok = "{\"kind\":\"step\",\"step\":1,\"loss\":0.5}\n";
  for (const auto& [record, field] : std::vector<std::pair<std::string, std::string>>{
           {"{\"kind\":5}", "\"kind\" is a number, expected a string"},
           {"{\"kind\":\"step\",\"step\":\"x\"}", "\"step\" is a string, expected a number"},
           {"{\"kind\":\"step\",\"step\":2,\"loss\":[1]}", "\"loss\" is a list"},
           {"{\"kind\":\"epoch\",\"step\":2,\"test_accuracy\":\"high\"}", "\"test_accuracy\""},
           {"{\"kind\":\"epoch\",\"step\":2,\"epoch\":{}}", "\"epoch\" is an object"},
           {"[1, 2]", "expected a JSON object"}}) {
    const std::string e = run_error(config, ok + record + "\n");
    EXPECT_NE(e.find("metrics.jsonl: line 2: "), std::string::npos) << e;
    EXPECT_NE(e.find(field), std::string::npos) << e;
  }
}

TEST(ReportTypes, AWrongTypeInStudyNamesTheFileAndTheField) {
  const json run = {{"config", "a"}, {"seed", 0}, {"figure", 0.1}};
  const json good = {{"figure", "loss"}, {"configs", {"a"}}, {"runs", {run}}};
  for (const auto& [patch, field] : std::vector<std::pair<json, std::string>>{
           {{{"figure", 5}}, "\"figure\" is a number, expected a string"},
           {{{"margin", "x"}}, "\"margin\" is a string"},
           {{{"configs", "a"}}, "\"configs\" is a string, expected a list"},
           {{{"configs", {1}}}, "\"configs[0]\" is a number, expected a string"},
           {{{"runs", {5}}}, "\"runs[0]\" is a number, expected an object"},
           {{{"runs", {{{"config", "a"}, {"seed", "x"}}}}}, "\"runs[0].seed\" is a string"},
           {{{"runs", {{{"config", "a"}, {"figure", "x"}}}}}, "\"runs[0].figure\" is a string"},
           {{{"runs", {{{"config", 1}}}}}, "\"runs[0].config\" is a number"},
           {{{"runs", {{{"run_dir", 1}}}}}, "\"runs[0].run_dir\" is a number"},
           {{{"skipped", {{{"config", "c"}, {"reason", 5}}}}}, "\"skipped[0].reason\" is a number"},
           {{{"comparisons", {{{"welch", {{"p", "x"}}}}}}},
            "\"comparisons[0].welch.p\" is a string"},
           {{{"comparisons", {{{"paired", "x"}}}}}, "\"comparisons[0].paired\" is a string"},
           {{{"comparisons", {{{"bootstrap_ci", {"a", 1}}}}}},
            "\"comparisons[0].bootstrap_ci[0]\" is a string"},
           {{{"comparisons", {{{"verdict", 1}}}}}, "\"comparisons[0].verdict\" is a number"}}) {
    testing::TempDir tmp;
    write_small_run(tmp / "study/a/seed-0");
    json study = good;
    study.update(patch);
    write(tmp / "study/study.json", study.dump());
    const std::string e = io_error_of([&] { study_report_html(tmp / "study"); });
    EXPECT_NE(e.find("study.json: field " + field), std::string::npos) << e;
  }
}

TEST(ReportInMemory, TheTextEntryPointsDrawTheSamePages) {
  testing::TempDir tmp;
  write_hostile_run(tmp / "run");
  std::ifstream config(tmp / "run/config.json"), metrics(tmp / "run/metrics.jsonl");
  const std::string config_text{std::istreambuf_iterator<char>(config), {}};
  const std::string metrics_text{std::istreambuf_iterator<char>(metrics), {}};
  EXPECT_EQ(run_report_html_from_text(config_text, metrics_text, "run"),
            run_report_html(tmp / "run"));
  EXPECT_THROW(run_report_html_from_text("{", "", "run"), IoError);
  EXPECT_THROW(study_report_html_from_text("{\"runs\": 5}", ""), IoError);
}

TEST(Decimate, ALongSeriesKeepsItsEndsAndItsExtremesInFewPoints) {
  Decimator d(100);
  const int n = 100000;
  for (int i = 0; i < n; ++i) d.add(i, i == 54321 ? 1e9 : (i == 77777 ? -1e9 : std::sin(i * 0.01)));
  std::vector<double> x, y;
  d.points(x, y);
  EXPECT_EQ(d.count(), static_cast<std::uint64_t>(n));
  EXPECT_LE(x.size(), 102u);
  EXPECT_GE(x.size(), 50u);
  EXPECT_EQ(x.front(), 0.0);
  EXPECT_EQ(x.back(), n - 1.0);
  EXPECT_TRUE(std::is_sorted(x.begin(), x.end()));
  EXPECT_NE(std::find(y.begin(), y.end(), 1e9), y.end()) << "the spike is kept";
  EXPECT_NE(std::find(y.begin(), y.end(), -1e9), y.end()) << "the dip is kept";
}

TEST(Decimate, AShortSeriesIsKeptWholeAndGapsStayGaps) {
  Decimator d(100);
  for (int i = 0; i < 10; ++i) d.add(i, i == 4 ? NAN : i);
  std::vector<double> x, y;
  d.points(x, y);
  ASSERT_EQ(x.size(), 10u);
  EXPECT_TRUE(std::isnan(y[4]));
  EXPECT_EQ(y[9], 9.0);
}

TEST(Decimate, ThinnedKeepsEveryKthAndTheLastAtTheSamePositions) {
  Thinned<int> a(10), b(10);
  for (int i = 0; i < 1000; ++i) a.add(i), b.add(i * 2);
  const std::vector<int> kept = a.items(), twice = b.items();
  EXPECT_LE(kept.size(), 11u);
  EXPECT_EQ(kept.front(), 0);
  EXPECT_EQ(kept.back(), 999);
  ASSERT_EQ(kept.size(), twice.size());
  for (std::size_t i = 0; i < kept.size(); ++i) EXPECT_EQ(twice[i], 2 * kept[i]);
}

}  // namespace
}  // namespace epoch::report
