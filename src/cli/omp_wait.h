// The OpenMP wait policy of the `epoch` binary. libgomp reads OMP_WAIT_POLICY and
// GOMP_SPINCOUNT once, when it is loaded, before main: so when the user set neither, epoch
// sets its bounded spin count and re-executes itself once (docs/ARCHITECTURE.md, Threads).
#pragma once

#include <string>

namespace epoch::cli {

/// GOMP_SPINCOUNT of epoch's default, used when the user sets neither OMP_WAIT_POLICY nor
/// GOMP_SPINCOUNT (measured: docs/BENCHMARKS.md, M).
inline constexpr const char* kDefaultSpinCount = "10000";

/// Set, with GOMP_SPINCOUNT, in the environment of the re-executed process, to the spin count
/// epoch chose: says the setting is epoch's, and a process that finds it never re-executes.
inline constexpr const char* kDefaultMarker = "EPOCH_OMP_DEFAULT";

/// First thing in main. When OMP_WAIT_POLICY, GOMP_SPINCOUNT and kDefaultMarker are all
/// unset, sets GOMP_SPINCOUNT and the marker and replaces the process image with its own
/// executable (/proc/self/exe), same argv, environment, pid, open files and signal mask, before
/// anything was read or written; returns when there is nothing to do, or when that failed
/// (the two variables are then removed again and libgomp's default stays in force).
void apply_default_wait_policy(char** argv);

/// The OpenMP wait policy libgomp runs with in this process.
struct WaitPolicy {
  std::string setting;  // "GOMP_SPINCOUNT=10000", "OMP_WAIT_POLICY=passive", ...
  std::string source;   // "epoch" (its default), "user" or "libgomp" (libgomp's own default)
  std::string note;     // why epoch's default is not in force, where it should have been
};

/// The policy in force and where it came from.
WaitPolicy wait_policy_in_force();

}  // namespace epoch::cli
