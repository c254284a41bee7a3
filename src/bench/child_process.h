// Running a launcher (mpirun, for scale_run.h) as a child that cannot outlive epoch: in a
// process group of its own, its output captured, and taken down with everything it started
// when epoch is interrupted (SIGINT, SIGTERM, SIGHUP) or dies. Internal to the bench layer.
#pragma once

#include <string>
#include <vector>

namespace epoch::bench {

/// What a child printed (stdout and stderr together) and how it ended.
struct ChildResult {
  std::string output;
  int exit_code = 0;  // its exit status, or 128 + the signal that ended it
};

/// Runs argv[0] (looked up on PATH) with `argv`, in a new process group, collecting its
/// output. While it runs, SIGINT, SIGTERM and SIGHUP sent to epoch end the whole group (SIGTERM,
/// then SIGKILL after `grace_s` seconds) and then epoch itself, by the same signal; if epoch
/// dies first, the kernel sends the child SIGTERM (PR_SET_PDEATHSIG). IoError when the child
/// cannot be started.
ChildResult run_child(const std::vector<std::string>& argv, double grace_s = 3.0);

}  // namespace epoch::bench
