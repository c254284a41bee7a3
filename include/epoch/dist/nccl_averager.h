// Averages a step's CUDA gradients across the ranks with NCCL, bucket by bucket as backward
// produces them (the GPU counterpart of GradientAverager): each bucket's all-reduce is queued on
// a communication stream behind the work already queued on the default stream, so it runs
// while the rest of backward computes; finish() waits for the last one before the optimizer
// step. The communicator is made once over a ProcessGroup (rank 0 makes NCCL's id, MPI
// broadcasts it), on each rank's current CUDA device.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "epoch/dist/gradient_averager.h"
#include "epoch/dist/process_group.h"

namespace epoch::dist {

/// Whether this build has NCCL (built with CUDA and NCCL found).
bool nccl_available();
/// "NCCL 2.28.3" (the library linked; "" without NCCL).
std::string nccl_version();

class NcclAverager {
 public:
  /// A communicator over every rank of `group` on CUDA device `device`. Collective: every rank
  /// constructs one, in the same order. Throws ConfigError without NCCL, RuntimeError naming
  /// NCCL's or CUDA's error otherwise.
  NcclAverager(ProcessGroup& group, int device);
  ~NcclAverager();
  NcclAverager(const NcclAverager&) = delete;
  NcclAverager& operator=(const NcclAverager&) = delete;

  /// Queues the weighted sum over the ranks of n floats of device memory, in place: each rank's
  /// values multiplied by its `weight` (its share of the global batch), then summed (NCCL's
  /// pre-multiplied sum), after every kernel already queued on the default stream.
  void add(float* device_data, std::int64_t n, float weight);
  /// Waits for every queued all-reduce; busy is the all-reduces' own GPU time, exposed the
  /// part that ran after the default stream had finished (what backward did not hide).
  CommTimes finish();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace epoch::dist
