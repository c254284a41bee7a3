// `epoch study` end to end: a short autoencoder study prints its comparison as JSON, and bad
// settings are one line.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/cli_testing.h"

namespace epoch {
namespace {

using testing::CommandResult;
using testing::expect_one_line_error;
using testing::run_epoch;

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

}  // namespace
}  // namespace epoch
