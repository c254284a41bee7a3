// Stop requests (stop.h): one lock-free flag, set by a signal handler or a caller.
#include "epoch/train/stop.h"

#include <atomic>
#include <csignal>

namespace epoch::train {
namespace {

std::atomic<bool> g_stop{false};
std::atomic<int> g_signal{0};
static_assert(std::atomic<bool>::is_always_lock_free && std::atomic<int>::is_always_lock_free,
              "a signal handler may only touch lock-free atomics");

extern "C" void on_stop_signal(int signal) {
  request_stop(signal);
  std::signal(signal, SIG_DFL);  // a second Ctrl-C ends the process at once
}

}  // namespace

void request_stop(int signal) {
  g_signal.store(signal);
  g_stop.store(true);
}

bool stop_requested() { return g_stop.load(); }

int stop_signal() { return g_signal.load(); }

void clear_stop_request() {
  g_stop.store(false);
  g_signal.store(0);
}

void stop_on_signals() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

}  // namespace epoch::train
