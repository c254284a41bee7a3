// `epoch report` end to end: `epoch train` leaves a report in its run folder, `epoch report`
// rewrites it, a bad folder or a field of the wrong type is one line, and headless Chromium
// (where installed) loads a run's and a study's report without a console error, and runs no
// script from a run or study whose every field holds one.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/cli_testing.h"

namespace epoch {
namespace {

namespace fs = std::filesystem;
using testing::CommandResult;
using testing::expect_one_line_error;
using testing::run_epoch;

std::string chromium() {
  for (const char* name : {"/usr/bin/chromium", "/usr/bin/chromium-browser"})
    if (fs::exists(name)) return name;
  return "";
}

TEST(ReportCli, TrainingWritesAReportAndReportRewritesIt) {
  testing::TempDir dir;
  const std::string run = dir / "run";
  const CommandResult r = run_epoch(
      "train --data synthetic --synthetic-count 256 --epochs 2 --log-every 2 --json --out " + run,
      dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["report"], run + "/report.html");
  ASSERT_TRUE(fs::exists(run + "/report.html"));
  fs::remove(run + "/report.html");
  const CommandResult again = run_epoch("report " + run, dir);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out, run + "/report.html\n");
  EXPECT_TRUE(fs::exists(run + "/report.html"));

  expect_one_line_error(run_epoch("report " + (dir / "absent"), dir), 1, "not a folder");
  fs::create_directories(dir / "empty");
  expect_one_line_error(run_epoch("report " + (dir / "empty"), dir), 1, "config.json");
}

TEST(ReportCli, AWrongTypeOrAnUnreadableFileIsOneLineNamingIt) {
  testing::TempDir dir;
  const std::string run = dir / "run";
  fs::create_directories(run);
  std::ofstream(run + "/metrics.jsonl") << "{\"kind\":\"step\",\"step\":1,\"loss\":0.5}\n";
  for (const char* config :
       {R"({"batch_size": "x"})", R"({"environment": 5})", R"({"optimizer": {"lr": "fast"}})"}) {
    std::ofstream(run + "/config.json") << config;
    const CommandResult r = run_epoch("report " + run, dir);
    expect_one_line_error(r, 1, "config.json: field");
    EXPECT_EQ(r.err.find("json.exception"), std::string::npos) << r.err;
  }
  std::ofstream(run + "/config.json") << "{}";
  fs::remove(run + "/metrics.jsonl");
  fs::create_symlink("/dev/zero", run + "/metrics.jsonl");
  expect_one_line_error(run_epoch("report " + run, dir), 1, "metrics.jsonl: is a character device");
}

// Loads `html` in headless Chromium and expects a laid-out page with no console message, no
// uncaught exception and no failed resource. The page's console messages go to the log at
// level 0 ("CONSOLE" lines) with --enable-logging; the shot shows that the page was laid out.
void expect_chromium_renders(const std::string& browser, const std::string& html,
                             const testing::TempDir& dir, const std::string& name) {
  const std::string shot = dir / (name + ".png"), log = dir / (name + ".log");
  const std::string cmd = "timeout 120 " + browser +
                          " --headless --no-sandbox --disable-gpu --hide-scrollbars"
                          " --enable-logging=stderr --v=0 --window-size=1000,1400"
                          " --user-data-dir=" +
                          (dir / (name + "-profile")) + " --screenshot=" + shot + " file://" +
                          html + " >" + log + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream in(log);
  std::string line, console;
  while (std::getline(in, line))
    if (line.find("CONSOLE") != std::string::npos || line.find("Uncaught") != std::string::npos ||
        line.find("Failed to load resource") != std::string::npos)
      console += line + "\n";
  EXPECT_EQ(console, "") << html;
  ASSERT_TRUE(fs::exists(shot)) << html;
  EXPECT_GT(fs::file_size(shot), 10000u) << html;
}

// Loads `html` in headless Chromium and expects no script to have run: the title is the
// report's, the page holds no script, image or frame element, and nothing reached the console.
void expect_no_script_runs(const std::string& browser, const std::string& html,
                           const testing::TempDir& dir, const std::string& name) {
  const std::string dom = dir / (name + ".dom.html"), log = dir / (name + ".log");
  const std::string cmd = "timeout 120 " + browser +
                          " --headless --no-sandbox --disable-gpu --enable-logging=stderr --v=0"
                          " --virtual-time-budget=2000 --user-data-dir=" +
                          (dir / (name + "-profile")) + " --dump-dom 'file://" + html + "' >" +
                          dom + " 2>" + log;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream dom_in(dom), log_in(log);
  const std::string page{std::istreambuf_iterator<char>(dom_in), {}};
  ASSERT_NE(page.find("<title>epoch "), std::string::npos) << "the report's own title";
  EXPECT_EQ(page.find("PWNED</title>"), std::string::npos) << "a script set the title";
  // Text is written back with < escaped, so only an element of the payload starts so.
  for (const char* element : {"<script", "<img", "<iframe", "<svg onload"})
    EXPECT_EQ(page.find(element), std::string::npos) << element << " in the loaded page";
  EXPECT_NE(page.find("&lt;script&gt;"), std::string::npos) << "the payload shows as text";
  std::string line, console;
  while (std::getline(log_in, line))
    if (line.find("CONSOLE") != std::string::npos || line.find("PWNED") != std::string::npos ||
        line.find("Failed to load resource") != std::string::npos)
      console += line + "\n";
  EXPECT_EQ(console, "") << html;
}

const std::string kPayload =
    "<script>document.title='PWNED';console.log('PWNED')</script>"
    "<img src=x onerror=\"document.title='PWNED'\">\"><script>document.title='PWNED'</script>"
    "'><svg onload=\"document.title='PWNED'\"></title><script>document.title='PWNED'</script>";

/// A run folder with kPayload in every string and key of config.json and metrics.jsonl.
void write_hostile_run(const std::string& dir) {
  using nlohmann::json;
  fs::create_directories(dir);
  std::ofstream(dir + "/config.json")
      << json{{"model", kPayload},  {"data", kPayload},
              {"device", kPayload}, {"optimizer", {{"name", kPayload}, {kPayload, kPayload}}},
              {kPayload, kPayload}, {"environment", {{"cpu", kPayload}, {kPayload, kPayload}}}}
             .dump();
  std::ofstream metrics(dir + "/metrics.jsonl");
  for (int step = 1; step <= 4; ++step)
    metrics
        << json{{"kind", "step"}, {"step", step}, {"loss", 1.0 / step}, {kPayload, kPayload}}.dump()
        << "\n";
  metrics << json{{"kind", "epoch"}, {"epoch", 1},          {"step", 4},         {"test_loss", 0.3},
                  {"epoch_s", 1.0},  {"images_per_s", 5.0}, {kPayload, kPayload}}
                 .dump()
          << "\n";
}

TEST(ReportCli, ChromiumRunsNoScriptFromAHostileRunOrStudy) {
  const std::string browser = chromium();
  if (browser.empty())
    GTEST_SKIP() << "Chromium is not installed (scripts/setup-test-tools.sh installs it)";
  using nlohmann::json;
  testing::TempDir dir;
  const std::string run = dir / "run";
  write_hostile_run(run);
  ASSERT_EQ(run_epoch("report " + run, dir).exit_code, 0);
  expect_no_script_runs(browser, run + "/report.html", dir, "hostile-run");

  const std::string study = dir / "study";
  json runs = json::array();
  for (const std::string& config : {kPayload + "a", kPayload + "b"})
    for (int seed = 0; seed < 2; ++seed) {
      const std::string folder =
          study + "/runs/" + (config.back() == 'a' ? "a" : "b") + std::to_string(seed);
      write_hostile_run(folder);
      runs.push_back({{"config", config},
                      {"seed", seed},
                      {"figure", 0.1 * (seed + 1)},
                      {"wall_s", 1.0},
                      {"run_dir", folder},
                      {kPayload, kPayload}});
    }
  std::ofstream(study + "/study.json")
      << json{{"figure", kPayload},
              {"margin", 0.01},
              {"configs", {kPayload + "a", kPayload + "b"}},
              {"skipped", {{{"config", kPayload}, {"reason", kPayload}}}},
              {"runs", runs},
              {"comparisons",
               {{{"a", kPayload + "a"},
                 {"b", kPayload + "b"},
                 {"verdict", kPayload},
                 {"words", kPayload},
                 {"welch", {{"p", 0.5}, {kPayload, kPayload}}}}}}}
             .dump();
  ASSERT_EQ(run_epoch("report " + study, dir).exit_code, 0);
  expect_no_script_runs(browser, study + "/report.html", dir, "hostile-study");
}

TEST(ReportCli, ChromiumLoadsARunReportWithoutConsoleErrors) {
  const std::string browser = chromium();
  if (browser.empty())
    GTEST_SKIP() << "Chromium is not installed (scripts/setup-test-tools.sh installs it)";
  testing::TempDir dir;
  const std::string run = dir / "run";
  ASSERT_EQ(
      run_epoch("train --data synthetic --synthetic-count 256 --epochs 2 --quiet --out " + run, dir)
          .exit_code,
      0);
  expect_chromium_renders(browser, run + "/report.html", dir, "run");
}

TEST(ReportCli, ChromiumLoadsAStudyReportWithoutConsoleErrors) {
  const std::string browser = chromium();
  if (browser.empty())
    GTEST_SKIP() << "Chromium is not installed (scripts/setup-test-tools.sh installs it)";
  testing::TempDir dir;
  const std::string study = dir / "study";
  const CommandResult r = run_epoch(
      "study --configs cpu:1,cpu:2,cuda --repeats 2 --limit-train 256 --limit-test 128 --out " +
          study,
      dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_chromium_renders(browser, study + "/report.html", dir, "study");
}

}  // namespace
}  // namespace epoch
