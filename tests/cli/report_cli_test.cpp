// `epoch report` end to end: `epoch train` leaves a report in its run folder, `epoch report`
// rewrites it, a bad folder is one line, and headless Chromium (where installed) loads a run's
// and a study's report without a console error.
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
