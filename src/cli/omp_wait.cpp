// epoch's default OpenMP wait policy (omp_wait.h). Setting the variable from inside the
// process is too late for libgomp, whose constructor parses the environment before main; and
// a setenv from the executable's .preinit_array is undone when libc initializes, which
// happens before libgomp does. So the process runs its own executable again, once.
#include "cli/omp_wait.h"

#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

namespace epoch::cli {
namespace {

constexpr const char* kLibgompSpinCount = "300000";  // the libgomp manual, GOMP_SPINCOUNT

/// Why the re-execution did not happen, when it should have.
std::string& failure_note() {
  static std::string note;
  return note;
}

/// Running /proc/self/exe names the process (comm: ps, top, pgrep) "exe"; give it the name
/// the executable's own path gives it.
void restore_process_name() {
  char name[17] = {};
  if (prctl(PR_GET_NAME, name) != 0 || std::strcmp(name, "exe") != 0) return;
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) return;
  std::string base(path, static_cast<std::size_t>(n));
  base = base.substr(base.rfind('/') + 1);
  const std::string deleted = " (deleted)";
  if (base.size() > deleted.size() &&
      base.compare(base.size() - deleted.size(), deleted.size(), deleted) == 0)
    base.resize(base.size() - deleted.size());
  prctl(PR_SET_NAME, base.substr(0, 15).c_str());
}

}  // namespace

void apply_default_wait_policy(char** argv) {
  if (std::getenv(kDefaultMarker) != nullptr) {  // already re-executed (or inherited): never again
    restore_process_name();
    return;
  }
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) return;
  if (setenv("GOMP_SPINCOUNT", kDefaultSpinCount, 1) == 0 &&
      setenv(kDefaultMarker, kDefaultSpinCount, 1) == 0)
    execv("/proc/self/exe", argv);  // returns only on failure
  const int error = errno;
  unsetenv("GOMP_SPINCOUNT");
  unsetenv(kDefaultMarker);
  failure_note() = std::string("could not re-execute /proc/self/exe: ") + std::strerror(error);
}

WaitPolicy wait_policy_in_force() {
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  const char* spin = std::getenv("GOMP_SPINCOUNT");
  const char* marker = std::getenv(kDefaultMarker);
  if (policy == nullptr && spin != nullptr && marker != nullptr && std::strcmp(spin, marker) == 0)
    return {std::string("GOMP_SPINCOUNT=") + spin, "epoch", ""};
  if (policy != nullptr || spin != nullptr) {
    std::string setting;
    if (policy != nullptr) setting = std::string("OMP_WAIT_POLICY=") + policy;
    if (spin != nullptr)
      setting += (setting.empty() ? "GOMP_SPINCOUNT=" : " GOMP_SPINCOUNT=") + std::string(spin);
    return {setting, "user", ""};
  }
  std::string note = failure_note();
  if (marker != nullptr)
    note = std::string(kDefaultMarker) + " is set without GOMP_SPINCOUNT: not re-executing again";
  return {std::string("GOMP_SPINCOUNT=") + kLibgompSpinCount, "libgomp", note};
}

}  // namespace epoch::cli
