// The run and study reports from folders written here: what they draw, that they stay one
// self-contained file, and that a broken folder is one clear error naming the file.
#include "epoch/report/report.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "epoch/tensor/error.h"
#include "testing/testing.h"

namespace epoch::report {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

int count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
    ++n;
  return n;
}

void write(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

/// A run folder as `epoch train` leaves it: two epochs of 4 logged steps each.
void write_run(const std::string& dir, double loss_scale = 1.0) {
  write(dir + "/config.json", json{{"model", "mlp"},
                                   {"data", "<fashion-mnist>"},
                                   {"threads_used", 2},
                                   {"optimizer", {{"name", "adam"}, {"lr", 0.001}}},
                                   {"environment", {{"cpu", "Test CPU"}, {"onednn_isa", "avx2"}}}}
                                  .dump());
  std::string lines;
  for (int step = 1; step <= 8; ++step) {
    lines += json{{"kind", "step"},
                  {"epoch", (step + 3) / 4},
                  {"step", step},
                  {"loss", loss_scale / step},
                  {"lr", 0.001}}
                 .dump() +
             "\n";
    if (step % 4 == 0)
      lines += json{{"kind", "epoch"},          {"epoch", step / 4},       {"step", step},
                    {"train_loss", 0.5 / step}, {"test_loss", 0.6 / step}, {"test_accuracy", 0.8},
                    {"images_per_s", 900.0},    {"epoch_s", 2.0},          {"data_wait_s", 0.1}}
                   .dump() +
               "\n";
  }
  write(dir + "/metrics.jsonl", lines);
}

void expect_self_contained(const std::string& html) {
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http:"), std::string::npos);
  EXPECT_EQ(html.find("https:"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(count(html, "<svg"), count(html, "</svg>"));
}

TEST(RunReport, DrawsLossAccuracySpeedAndTheSettings) {
  testing::TempDir tmp;
  write_run(tmp / "run");
  const std::string html = run_report_html(tmp / "run");
  expect_self_contained(html);
  EXPECT_NE(html.find("epoch run: mlp"), std::string::npos);
  EXPECT_NE(html.find("Loss per optimizer update"), std::string::npos);
  EXPECT_NE(html.find("Accuracy per epoch"), std::string::npos);
  EXPECT_NE(html.find("images per second"), std::string::npos);
  EXPECT_NE(html.find("Where each step&#39;s time went"), std::string::npos);
  EXPECT_NE(html.find("optimizer.lr"), std::string::npos) << "nested settings are flattened";
  EXPECT_NE(html.find("Test CPU"), std::string::npos);
  EXPECT_NE(html.find("&lt;fashion-mnist&gt;"), std::string::npos) << "text is escaped";
  // 2 epochs: two bars of compute and two of waiting for data, then the legend's three.
  EXPECT_GE(count(html, "<rect"), 4 + 3);
}

TEST(RunReport, WriteReportPutsOneFileInTheFolder) {
  testing::TempDir tmp;
  write_run(tmp / "run");
  const std::string path = write_report(tmp / "run");
  EXPECT_EQ(path, tmp / "run/report.html");
  EXPECT_GT(fs::file_size(path), 1000u);
}

TEST(RunReport, ABrokenFolderIsAnErrorNamingTheFile) {
  testing::TempDir tmp;
  EXPECT_THROW(write_report(tmp / "absent"), IoError);
  fs::create_directories(tmp / "empty");
  try {
    run_report_html(tmp / "empty");
    FAIL() << "a folder without config.json has no report";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("config.json"), std::string::npos) << e.what();
  }
  write_run(tmp / "bad");
  std::ofstream(tmp / "bad/metrics.jsonl", std::ios::app) << "{\"kind\": \"step\", \"lo\n";
  try {
    run_report_html(tmp / "bad");
    FAIL() << "a torn record is reported";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("metrics.jsonl: line 11"), std::string::npos) << e.what();
  }
  write(tmp / "badjson/config.json", "{\"model\": ");
  EXPECT_THROW(run_report_html(tmp / "badjson"), IoError);
}

TEST(RunReport, ARunThatLoggedNothingStillHasAReport) {
  testing::TempDir tmp;
  write(tmp / "run/config.json", json{{"model", "mlp"}}.dump());
  write(tmp / "run/metrics.jsonl", "");  // `epoch train` makes it before the first step
  const std::string html = run_report_html(tmp / "run");
  EXPECT_NE(html.find("No epoch finished"), std::string::npos);
  EXPECT_NE(html.find("Not recorded"), std::string::npos);
}

TEST(RunReport, AMissingMetricsFileIsAnErrorNamingIt) {
  testing::TempDir tmp;
  write(tmp / "run/config.json", json{{"model", "mlp"}}.dump());
  try {
    run_report_html(tmp / "run");
    FAIL() << "a run folder without metrics.jsonl is no run to report";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("metrics.jsonl: no such file"), std::string::npos)
        << e.what();
  }
}

/// A study folder as `epoch study` leaves it, with its runs under <config>/seed-<seed>; the
/// runs' folders are named by a path that no longer exists (the folder was moved).
void write_study(const std::string& dir) {
  json runs = json::array();
  for (const char* config : {"cpu:1", "cpu:2"})
    for (int seed = 0; seed < 3; ++seed) {
      write_run(dir + "/" + config + "/seed-" + std::to_string(seed), 1.0 + 0.1 * seed);
      runs.push_back({{"config", config},
                      {"seed", seed},
                      {"repeat", seed},
                      {"figure", 0.1 + 0.01 * seed},
                      {"wall_s", 1.5},
                      {"run_dir", "/moved/away/" + std::string(config)}});
    }
  json comparison{{"a", "cpu:1"},
                  {"b", "cpu:2"},
                  {"difference", 0.0},
                  {"welch", {{"p", 1.0}, {"ci", {-0.01, 0.01}}}},
                  {"paired", {{"p", 1.0}, {"ci", {0.0, 0.0}}, {"tost_p", 0.0}}},
                  {"tost", {{"p", 0.02}}},
                  {"mann_whitney", {{"p", 1.0}}},
                  {"bootstrap_ci", {-0.008, 0.008}},
                  {"verdict", "equivalent"},
                  {"words", "cpu:1 vs cpu:2: equivalent within margin +-0.001"}};
  write(dir + "/study.json", json{{"figure", "final test loss"},
                                  {"margin", 0.001},
                                  {"configs", {"cpu:1", "cpu:2"}},
                                  {"skipped", {{{"config", "cuda"}, {"reason", "no CUDA device"}}}},
                                  {"runs", runs},
                                  {"comparisons", {comparison}}}
                                 .dump());
}

TEST(StudyReport, DrawsCurvesWithBandsBoxesAndTheTests) {
  testing::TempDir tmp;
  write_study(tmp / "study");
  const std::string path = write_report(tmp / "study");
  std::ifstream in(path);
  const std::string html((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  expect_self_contained(html);
  EXPECT_NE(html.find("epoch study: final test loss"), std::string::npos);
  EXPECT_EQ(count(html, "<polygon"), 2) << "one band per configuration, found in the moved folder";
  EXPECT_EQ(count(html, "class=\"box\""), 2);
  EXPECT_NE(html.find("equivalent within margin"), std::string::npos);
  EXPECT_NE(html.find("no CUDA device"), std::string::npos);
  EXPECT_NE(html.find("[-0.008, 0.008]"), std::string::npos);
  EXPECT_NE(html.find("cpu:2/seed-2"), std::string::npos);
}

}  // namespace
}  // namespace epoch::report
