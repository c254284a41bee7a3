// A child process in a group of its own, ended with epoch (see child_process.h).
#include "child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <thread>

#include "epoch/tensor/error.h"

namespace epoch::bench {
namespace {

volatile std::sig_atomic_t g_signal = 0;  // the signal that asked epoch to stop, 0 while none

void remember_signal(int sig) { g_signal = sig; }

/// The handlers run_child installs for its duration, and the ones it restores.
class SignalRoute {
 public:
  SignalRoute() {
    struct sigaction sa {};
    sa.sa_handler = remember_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART: poll returns EINTR at once
    for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &sa, &old_[i]);
  }
  ~SignalRoute() {
    for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &old_[i], nullptr);
  }
  SignalRoute(const SignalRoute&) = delete;
  SignalRoute& operator=(const SignalRoute&) = delete;

  static constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};

 private:
  struct sigaction old_[3];
};

/// Ends the group led by `pid`: SIGTERM, then SIGKILL once `grace_s` has passed; reaps `pid`.
int end_group(pid_t pid, double grace_s) {
  ::kill(-pid, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace_s);
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      ::kill(-pid, SIGKILL);  // what the leader started and left behind
      return status;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(-pid, SIGKILL);
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace

ChildResult run_child(const std::vector<std::string>& argv, double grace_s) {
  if (argv.empty()) EPOCH_THROW(InvalidArgument, "run_child: no command");
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    EPOCH_THROW(IoError, "cannot start ", argv[0], ": pipe: ", std::strerror(errno));
  int ready[2];  // the child reports a failed exec through it
  if (::pipe2(ready, O_CLOEXEC) != 0) {
    ::close(fds[0]), ::close(fds[1]);
    EPOCH_THROW(IoError, "cannot start ", argv[0], ": pipe: ", std::strerror(errno));
  }
  g_signal = 0;
  const SignalRoute route;
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]), ::close(fds[1]), ::close(ready[0]), ::close(ready[1]);
    EPOCH_THROW(IoError, "cannot start ", argv[0], ": fork: ", std::strerror(errno));
  }
  if (pid == 0) {  // the child: only async-signal-safe calls until exec
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);  // epoch is already gone
    for (int sig : SignalRoute::kSignals) ::signal(sig, SIG_DFL);
    ::dup2(fds[1], STDOUT_FILENO);
    ::dup2(fds[1], STDERR_FILENO);
    ::execvp(args[0], args.data());
    const int err = errno;
    (void)!::write(ready[1], &err, sizeof err);
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also from here: no signal may find the group missing
  ::close(fds[1]);
  ::close(ready[1]);
  int exec_errno = 0;
  const bool exec_failed = ::read(ready[0], &exec_errno, sizeof exec_errno) == sizeof exec_errno;
  ::close(ready[0]);
  ChildResult result;
  char buf[4096];
  for (;;) {
    if (g_signal != 0) break;
    struct pollfd p {
      fds[0], POLLIN, 0
    };
    const int n = ::poll(&p, 1, 200);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    const ssize_t got = ::read(fds[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    result.output.append(buf, static_cast<std::size_t>(got));
  }
  ::close(fds[0]);
  const auto end_with_signal = [&] {  // the launcher and all it started, then epoch
    const int sig = g_signal;
    end_group(pid, grace_s);
    ::signal(sig, SIG_DFL);
    ::raise(sig);
    ::_exit(128 + sig);
  };
  if (g_signal != 0) end_with_signal();
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR)
    if (g_signal != 0) end_with_signal();
  ::kill(-pid, SIGKILL);  // nothing of the group outlives its leader
  if (exec_failed) EPOCH_THROW(IoError, "cannot start ", argv[0], ": ", std::strerror(exec_errno));
  result.exit_code = exit_code_of(status);
  return result;
}

}  // namespace epoch::bench
