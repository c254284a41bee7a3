// Running the built `epoch` binary from a test: its exit code, stdout and stderr, and the
// check that a failure is exactly one clear stderr line.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <string>

#include "testing/testing.h"

namespace epoch::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

/// Runs `epoch ARGS` (a shell command line) with stderr captured in dir/stderr.txt; `env`, when
/// given, are arguments of env(1) that change its environment ("-u NAME", "NAME=value").
inline CommandResult run_epoch(const std::string& args, const TempDir& dir,
                               const std::string& env = "") {
  const std::string err_file = dir / "stderr.txt";
  const std::string cmd =
      (env.empty() ? "" : "env " + env + " ") + EPOCH_TEST_BINARY + " " + args + " 2>" + err_file;
  CommandResult r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buf{};
  std::size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::ifstream in(err_file);
  r.err.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return r;
}

inline int count_lines(const std::string& s) {
  return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

/// A failing command prints exactly one line on stderr, mentioning `needle`.
inline void expect_one_line_error(const CommandResult& r, int code, const std::string& needle) {
  EXPECT_EQ(r.exit_code, code) << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("[at "), std::string::npos) << "developer location leaked: " << r.err;
}

}  // namespace epoch::testing
