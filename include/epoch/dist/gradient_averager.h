// Averages a step's gradients across the ranks of a group as backward produces them, the way
// PyTorch DDP does: each bucket (a range of the flat gradient buffer) is handed over as soon as
// it is complete, and its all-reduce runs on a communication thread while backward goes on;
// finish() waits for the last one before the optimizer step.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "epoch/dist/process_group.h"

namespace epoch::dist {

/// What one step's communication cost, in seconds.
struct CommTimes {
  double busy_s = 0.0;     // the all-reduces themselves, on the communication thread
  double exposed_s = 0.0;  // what finish() waited: communication not hidden behind backward
  std::int64_t bytes = 0;  // gradient bytes reduced
  /// The fraction of communication hidden behind backward (1 when there was none).
  double hidden_fraction() const {
    return busy_s > 0.0 ? 1.0 - std::min(1.0, exposed_s / busy_s) : 1.0;
  }
};

class GradientAverager {
 public:
  explicit GradientAverager(ProcessGroup& group);
  ~GradientAverager();
  GradientAverager(const GradientAverager&) = delete;
  GradientAverager& operator=(const GradientAverager&) = delete;

  /// Queues `data` (host memory, n floats, untouched by the caller until finish()) to be
  /// multiplied by `weight` (this rank's share of the global batch: 1 / size for equal
  /// shares) and summed over the ranks: the global mean gradient, the same bits everywhere.
  void add(float* data, std::int64_t n, float weight);
  /// Waits for every queued bucket; rethrows a communication failure.
  CommTimes finish();

 private:
  struct Job {
    float* data;
    std::int64_t n;
    float weight;
  };
  void loop();

  ProcessGroup& group_;
  std::mutex mutex_;
  std::condition_variable work_, done_;
  std::deque<Job> queue_;
  std::int64_t pending_ = 0;  // queued or running
  bool stop_ = false;
  double busy_s_ = 0.0;
  std::int64_t bytes_ = 0;
  std::exception_ptr failure_;
  std::thread thread_;
};

}  // namespace epoch::dist
