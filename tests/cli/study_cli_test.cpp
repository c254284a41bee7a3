// `epoch study` end to end: a short autoencoder study prints its comparison as JSON, bad
// settings and a failed run are one line, and a study killed mid-run is continued by the
// command its message spells, `epoch study --resume --out DIR`.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "cli/cli_testing.h"

namespace epoch {
namespace {

using testing::CommandResult;
using testing::expect_one_line_error;
using testing::run_epoch;
namespace fs = std::filesystem;

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

TEST(StudyCli, AShortStudyComparesItsConfigurations) {
  testing::TempDir dir;
  const CommandResult r = run_epoch(
      "study --configs cpu:1,cpu:2,cuda --repeats 2 --limit-train 256 --limit-test 128 --json "
      "--out " +
          (dir / "s"),
      dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["runs"].size(), 4u);
  EXPECT_EQ(j["skipped"].size(), 1u);
  ASSERT_EQ(j["comparisons"].size(), 1u);
  EXPECT_TRUE(j["comparisons"][0]["words"].is_string());
  EXPECT_TRUE(std::filesystem::exists(dir / "s/study.json"));
  EXPECT_EQ(j["report"], dir / "s/report.html");
  EXPECT_TRUE(std::filesystem::exists(dir / "s/report.html"));
  expect_one_line_error(run_epoch("study --configs cpu:0 --out " + (dir / "t"), dir), 1, "cpu:0");
  expect_one_line_error(run_epoch("study --protocol prednet-study --out " + (dir / "u"), dir), 1,
                        "--data DIR");
}

// The study of two "machines" the judge asks for: the same CPU at its own level and at the
// baseline level (EPOCH_CPU_ISA=x86-64, which caps oneDNN too), combined into one report with
// the machines told apart by their ISA and a verdict for every pair; a study of another
// protocol is refused naming the setting; and a bad EPOCH_CPU_ISA is one line.
TEST(StudyCli, StudiesOfTwoIsasCombineIntoOneReport) {
  testing::TempDir dir;
  const std::string study =
      "study --configs cpu:1,cpu:1+perturb=ulp --repeats 2 --limit-train 256 --limit-test 128 "
      "--out ";
  ASSERT_EQ(run_epoch(study + (dir / "native"), dir).exit_code, 0);
  const CommandResult baseline = run_epoch(study + (dir / "baseline"), dir, "EPOCH_CPU_ISA=x86-64");
  ASSERT_EQ(baseline.exit_code, 0) << baseline.err;
  const CommandResult r = run_epoch(
      "study combine " + (dir / "native") + " " + (dir / "baseline") + " --json --out " +
          (dir / "all"),
      dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["machines"].size(), 2u);
  EXPECT_EQ(j["machines"][1]["cpu_isa"], "x86-64");
  const std::string a = j["machines"][0]["label"], b = j["machines"][1]["label"];
  EXPECT_NE(a, b);
  EXPECT_NE(b.find("@x86-64"), std::string::npos) << b;
  ASSERT_EQ(j["comparisons"].size(), 6u);  // 4 labelled configurations
  for (const nlohmann::json& c : j["comparisons"]) EXPECT_TRUE(c["verdict"].is_string());
  EXPECT_TRUE(fs::exists(dir / "all/report.html"));
  std::ifstream page(dir / "all/report.html");
  const std::string html((std::istreambuf_iterator<char>(page)), std::istreambuf_iterator<char>());
  EXPECT_NE(html.find("Machines"), std::string::npos);
  EXPECT_NE(html.find(b + "/cpu:1+perturb=ulp"), std::string::npos);
  // Another protocol (fewer training samples) is refused by name, before anything is written.
  ASSERT_EQ(run_epoch("study --configs cpu:1,cpu:2 --repeats 2 --limit-train 128 --limit-test "
                      "128 --out " +
                          (dir / "other"),
                      dir)
                .exit_code,
            0);
  expect_one_line_error(run_epoch("study combine " + (dir / "native") + " " + (dir / "other") +
                                      " --out " + (dir / "mixed"),
                                  dir),
                        1, "limit_train is 128 there and 256 in");
  EXPECT_FALSE(fs::exists(dir / "mixed/study.json"));
  expect_one_line_error(run_epoch("info", dir, "EPOCH_CPU_ISA=pentium"), 2,
                        "EPOCH_CPU_ISA pentium: expected x86-64, x86-64-v3 or x86-64-v4");
}

TEST(StudyCli, BadConfigurationsAndFailedRunsAreOneLine) {
  testing::TempDir dir;
  expect_one_line_error(
      run_epoch("study --configs cpu:1,cpu:2+lr=1e-300 --out " + (dir / "a"), dir), 1,
      "--configs cpu:2+lr=1e-300: the learning rate 1e-300 is 0 as the optimizer's float");
  expect_one_line_error(run_epoch("study --configs cpu:1,cpu:2,cpu:02 --out " + (dir / "b"), dir),
                        1, "--configs cpu:02: the same configuration as cpu:2");
  EXPECT_FALSE(fs::exists(dir / "a"));
  // A run that diverges: its configuration, seed and folder, and the command that continues.
  const std::string out = dir / "c";
  const CommandResult r = run_epoch(
      "study --configs cpu:1,cpu:1+lr=1e30 --limit-train 256 --limit-test 64 --out " + out, dir);
  expect_one_line_error(r, 1,
                        "--configs cpu:1+lr=1e30, seed 0 (run folder " + out +
                            "/cpu:1+lr=1e30/seed-0) failed; the 1 finished run(s) are kept and "
                            "`epoch study --resume --out " +
                            out + "` trains the rest: ");
  expect_one_line_error(run_epoch("study --configs cpu:1,cpu:1+lr=1e30 --out " + out, dir), 1,
                        "`epoch study --resume --out " + out + "`");
  expect_one_line_error(run_epoch("study --resume --configs cpu:1,cpu:2 --out " + out, dir), 1,
                        "--resume: --configs \"cpu:1,cpu:2\" differs from the interrupted "
                        "study's \"cpu:1,cpu:1+lr=1e30\"");
  expect_one_line_error(run_epoch("study --resume --out " + (dir / "none"), dir), 1,
                        "no study to resume");
}

/// Starts `epoch ARGS` without waiting for it (its output to `log`); its process id.
pid_t spawn_epoch(const std::vector<std::string>& args, const std::string& log) {
  std::vector<std::string> argv_text = {EPOCH_TEST_BINARY};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

// A study killed while a run trains: `epoch study --resume --out DIR` keeps the finished runs
// (their folders untouched), trains the rest, and its study.json compares as the study run
// whole does.
TEST(StudyCli, AKilledStudyResumes) {
  testing::TempDir dir;
  const std::string out = dir / "s";
  const std::vector<std::string> flags = {"--configs",     "cpu:1,cpu:2", "--repeats",    "2",
                                          "--limit-train", "256",         "--limit-test", "64"};
  std::vector<std::string> args = {"study", "--out", out};
  args.insert(args.end(), flags.begin(), flags.end());
  const pid_t pid = spawn_epoch(args, dir / "killed.log");
  ASSERT_GT(pid, 0);
  // Killed once the second run has started (the first then has finished).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!fs::exists(out + "/cpu:2/seed-0/config.json") &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  kill(pid, SIGKILL);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the study finished before it was killed";
  ASSERT_TRUE(fs::exists(out + "/cpu:1/seed-0/study-run.json"));
  EXPECT_FALSE(fs::exists(out + "/study.json"));
  const std::string kept = out + "/cpu:1/seed-0/metrics.jsonl";
  const fs::file_time_type kept_time = fs::last_write_time(kept);

  // Run again as it was: refused, spelling the command; that command continues it.
  std::string again = "study --out " + out;
  for (const std::string& f : flags) again += " " + f;
  expect_one_line_error(run_epoch(again, dir), 1, "`epoch study --resume --out " + out + "`");
  expect_one_line_error(run_epoch("study --resume --repeats 3 --out " + out, dir), 1,
                        "--resume: --repeats 3 differs from the interrupted study's 2");
  const CommandResult resumed = run_epoch("study --resume --json --out " + out, dir);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(fs::last_write_time(kept), kept_time) << "a finished run was trained again";
  const nlohmann::json j = nlohmann::json::parse(resumed.out);
  ASSERT_EQ(j["runs"].size(), 4u);
  EXPECT_EQ(j["runs"][0]["wall_s"], read_json(out + "/cpu:1/seed-0/study-run.json")["wall_s"]);

  // The same study run whole: the same figures and comparisons.
  std::string whole = "study --json --out " + (dir / "whole");
  for (const std::string& f : flags) whole += " " + f;
  const CommandResult w = run_epoch(whole, dir);
  ASSERT_EQ(w.exit_code, 0) << w.err;
  const nlohmann::json wj = nlohmann::json::parse(w.out);
  for (std::size_t i = 0; i < 4; ++i)
    EXPECT_EQ(j["runs"][i]["figure"], wj["runs"][i]["figure"]) << i;
  EXPECT_EQ(j["comparisons"], wj["comparisons"]);
}

}  // namespace
}  // namespace epoch
