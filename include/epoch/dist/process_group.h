// The processes of one data-parallel job: rank and world size from MPI (OpenMPI from Debian),
// and the collectives training needs (broadcast, all-reduce, all-gather) on host memory. A
// process not started by an MPI launcher (mpirun, srun) is a group of one that never calls
// MPI, so a plain `epoch train` behaves as it always did.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "epoch/tensor/error.h"

namespace epoch::dist {

/// Ranks started with settings that must match and do not (a different --model, --batch-size,
/// data, ...). Every rank throws the same one, with the same line, at the same point, so rank
/// 0 alone needs to report it.
class RanksDisagree : public ConfigError {
  using ConfigError::ConfigError;
};

/// True when an MPI launcher started this process (its environment names a rank: Open MPI's
/// OMPI_COMM_WORLD_SIZE, PMIx's PMIX_RANK, Slurm's PMI_SIZE with SLURM_STEP_ID, ...).
bool launched_by_mpi();

/// One per process (MPI_COMM_WORLD). Every collective is called by every rank in the same
/// order; calls are serialized (MPI_THREAD_SERIALIZED), so a communication thread may issue
/// them while the caller of another waits its turn.
class ProcessGroup {
 public:
  /// The job's group, initializing MPI on first use when launched by MPI. Finalized at exit.
  static ProcessGroup& world();

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool distributed() const { return size_ > 1; }
  /// This rank among the ranks of its own host (0 for a group of one): which GPU it takes.
  int local_rank() const { return local_rank_; }
  /// "rank 1 of 4 on host-b" (or "a single process").
  std::string describe() const;
  /// The MPI library, e.g. "Open MPI v4.1.4" ("" without MPI).
  std::string library() const;

  /// data (bytes) from `root` to every rank. The ranks' byte counts are compared first
  /// (RanksDisagree naming `what` on every rank when they differ): a size is checked, never
  /// trusted, so a rank's buffer is never overrun.
  void broadcast(void* data, std::int64_t bytes, int root = 0, const char* what = "a broadcast");
  /// In place: the element-wise sum over ranks (the same bits on every rank).
  void all_reduce_sum(float* data, std::int64_t n);
  void all_reduce_sum(double* data, std::int64_t n);
  /// Every rank's value, in rank order.
  std::vector<std::uint64_t> all_gather(std::uint64_t value);
  /// Every rank's text, in rank order (the lengths are exchanged first: they may differ).
  std::vector<std::string> all_gather(const std::string& text);
  void barrier();
  /// Ends every rank of the job with `code` (MPI_Abort); a group of one just exits.
  [[noreturn]] void abort(int code);

  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

 private:
  ProcessGroup();
  ~ProcessGroup();
  int rank_ = 0, size_ = 1, local_rank_ = 0;
  bool mpi_ = false;
  std::string host_;
};

/// One setting every rank must hold alike: its name for messages (a flag such as
/// "--batch-size", or a fact such as "parameters") and its value as text.
struct Setting {
  std::string name, value;
};

/// Compares every rank's settings with rank 0's; the first collective of a distributed
/// command, so no other collective runs on ranks that disagree. Throws RanksDisagree on every
/// rank, the same line: "ranks disagree on --batch-size: rank 0 has 32, rank 1 has 64 (every
/// rank of <what> must be given the same)", naming the first setting that differs (a rank
/// running another command differs on "the command").
void expect_same_settings(ProcessGroup& group, const std::vector<Setting>& settings,
                          const std::string& what);

/// A 64-bit hash of `bytes` bytes (word-wise multiply-xor), cheap enough for every step.
std::uint64_t checksum(const void* data, std::int64_t bytes);

/// Throws NumericalError, one line naming the ranks whose `value` differs from rank 0's and
/// `where` ("parameters after step 120"), unless every rank holds the same value.
void expect_same_on_every_rank(ProcessGroup& group, std::uint64_t value, const std::string& where);

}  // namespace epoch::dist
