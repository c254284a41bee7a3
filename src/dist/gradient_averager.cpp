// Bucketed gradient averaging on a communication thread (see gradient_averager.h).
#include "epoch/dist/gradient_averager.h"

#include <chrono>

namespace epoch::dist {

GradientAverager::GradientAverager(ProcessGroup& group) : group_(group) {
  if (group_.distributed()) thread_ = std::thread([this] { loop(); });
}

GradientAverager::~GradientAverager() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  work_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void GradientAverager::add(float* data, std::int64_t n, float weight) {
  if (!group_.distributed()) {  // one process: its mean is the mean
    if (weight != 1.0f)
      for (std::int64_t i = 0; i < n; ++i) data[i] *= weight;
    return;
  }
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back({data, n, weight});
    ++pending_;
  }
  work_.notify_one();
}

CommTimes GradientAverager::finish() {
  const auto start = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [this] { return pending_ == 0; });
  CommTimes t;
  t.exposed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  t.busy_s = busy_s_;
  t.bytes = bytes_;
  busy_s_ = 0.0;
  bytes_ = 0;
  if (failure_) {
    const std::exception_ptr f = failure_;
    failure_ = nullptr;
    std::rethrow_exception(f);
  }
  return t;
}

void GradientAverager::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    work_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping with nothing left
    const Job job = queue_.front();
    queue_.pop_front();
    lock.unlock();
    const auto start = std::chrono::steady_clock::now();
    std::exception_ptr failure;
    try {
      if (job.weight != 1.0f)
        for (std::int64_t i = 0; i < job.n; ++i) job.data[i] *= job.weight;
      group_.all_reduce_sum(job.data, job.n);
    } catch (...) {
      failure = std::current_exception();
    }
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    lock.lock();
    busy_s_ += s;
    bytes_ += job.n * static_cast<std::int64_t>(sizeof(float));
    if (failure && !failure_) failure_ = failure;
    if (--pending_ == 0) done_.notify_all();
  }
}

}  // namespace epoch::dist
