// epoch's OpenMP wait policy: the binary re-executes itself once with its bounded spin count
// when the user set none, never when the user set one, and never twice; `epoch info` says
// which policy is in force and whose it is. libgomp's OMP_DISPLAY_ENV shows what each
// process image started with: one block per image on stderr.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/cli_testing.h"
#include "cli/omp_wait.h"
#include "testing/testing.h"

namespace epoch {
namespace {

using testing::CommandResult;
using testing::run_epoch;

// No wait setting of the caller's may leak into these runs.
const std::string kClean = "-u OMP_WAIT_POLICY -u GOMP_SPINCOUNT -u EPOCH_OMP_DEFAULT ";
const std::string kDisplay = "OMP_DISPLAY_ENV=verbose ";

/// The GOMP_SPINCOUNT of each libgomp start that OMP_DISPLAY_ENV reported, in order.
std::vector<std::string> spin_counts_started(const std::string& err) {
  std::vector<std::string> counts;
  const std::string key = "GOMP_SPINCOUNT = '";
  for (std::size_t at = err.find(key); at != std::string::npos; at = err.find(key, at + 1)) {
    const std::size_t begin = at + key.size();
    counts.push_back(err.substr(begin, err.find('\'', begin) - begin));
  }
  return counts;
}

nlohmann::json info_wait(const CommandResult& r) {
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out)["omp_wait"];
}

TEST(OmpWait, EpochsDefaultWhenTheUserSetsNoneReExecutingOnce) {
  testing::TempDir dir;
  const CommandResult r = run_epoch("info --json", dir, kClean + kDisplay);
  const nlohmann::json wait = info_wait(r);
  EXPECT_EQ(wait["source"], "epoch");
  EXPECT_EQ(wait["setting"], std::string("GOMP_SPINCOUNT=") + cli::kDefaultSpinCount);
  EXPECT_EQ(wait["note"], "");
  // The first image started with libgomp's default, the re-executed one with epoch's; no third.
  EXPECT_EQ(spin_counts_started(r.err),
            (std::vector<std::string>{"300000", cli::kDefaultSpinCount}))
      << r.err;

  const CommandResult text = run_epoch("info", dir, kClean);
  EXPECT_NE(text.out.find(std::string("omp wait: GOMP_SPINCOUNT=") + cli::kDefaultSpinCount +
                          " (epoch's default"),
            std::string::npos)
      << text.out;
}

TEST(OmpWait, TheUsersSettingWinsAndNothingIsReExecuted) {
  testing::TempDir dir;
  CommandResult r = run_epoch("info --json", dir, kClean + kDisplay + "OMP_WAIT_POLICY=passive");
  nlohmann::json wait = info_wait(r);
  EXPECT_EQ(wait["source"], "user");
  EXPECT_EQ(wait["setting"], "OMP_WAIT_POLICY=passive");
  EXPECT_EQ(spin_counts_started(r.err), (std::vector<std::string>{"0"})) << r.err;

  r = run_epoch("info --json", dir, kClean + kDisplay + "GOMP_SPINCOUNT=1234");
  wait = info_wait(r);
  EXPECT_EQ(wait["source"], "user");
  EXPECT_EQ(wait["setting"], "GOMP_SPINCOUNT=1234");
  EXPECT_EQ(spin_counts_started(r.err), (std::vector<std::string>{"1234"})) << r.err;

  // The user's value wins even when it equals epoch's default and a marker was inherited.
  r = run_epoch("info --json", dir,
                kClean + "OMP_WAIT_POLICY=active GOMP_SPINCOUNT=" + cli::kDefaultSpinCount +
                    " EPOCH_OMP_DEFAULT=" + cli::kDefaultSpinCount);
  wait = info_wait(r);
  EXPECT_EQ(wait["source"], "user");
  EXPECT_EQ(wait["setting"],
            std::string("OMP_WAIT_POLICY=active GOMP_SPINCOUNT=") + cli::kDefaultSpinCount);

  const CommandResult text = run_epoch("info", dir, kClean + "OMP_WAIT_POLICY=passive");
  EXPECT_NE(text.out.find("omp wait: OMP_WAIT_POLICY=passive (set by the user)"), std::string::npos)
      << text.out;
}

TEST(OmpWait, AMarkedProcessNeverReExecutesAgain) {
  // The marker without GOMP_SPINCOUNT (something between the two images removed it): libgomp's
  // default stays, and info says why.
  testing::TempDir dir;
  const CommandResult r = run_epoch(
      "info --json", dir, kClean + kDisplay + "EPOCH_OMP_DEFAULT=" + cli::kDefaultSpinCount);
  const nlohmann::json wait = info_wait(r);
  EXPECT_EQ(wait["source"], "libgomp");
  EXPECT_EQ(wait["setting"], "GOMP_SPINCOUNT=300000");
  EXPECT_NE(wait["note"].get<std::string>().find("EPOCH_OMP_DEFAULT"), std::string::npos);
  EXPECT_EQ(spin_counts_started(r.err), (std::vector<std::string>{"300000"})) << r.err;
}

TEST(OmpWait, ArgumentsOutputAndExitCodesSurviveTheReExecution) {
  testing::TempDir dir;
  const CommandResult v = run_epoch("--version", dir, kClean);
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_EQ(v.out, std::string("epoch ") + EPOCH_VERSION + "\n");
  testing::expect_one_line_error(run_epoch("train --epochs 0", dir, kClean), 2, "--epochs");
  testing::expect_one_line_error(run_epoch("bench --steps 3", dir, kClean), 1, "--steps");
  // The arguments reach the re-executed image as given: one with spaces stays one.
  testing::expect_one_line_error(run_epoch("eval 'no such file.safetensors'", dir, kClean), 1,
                                 "no such file.safetensors");
}

}  // namespace
}  // namespace epoch
