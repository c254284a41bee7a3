// A run directory's life: one process at a time (an exclusive lock), what it already holds,
// temporary files a killed writer left, metrics past a resumed checkpoint, and how many epoch
// checkpoints are kept.
#pragma once

#include <cstdint>
#include <string>

namespace epoch::train {

/// Exclusive use of a run directory (created if missing): flock on RUN/.lock, which the kernel
/// releases when the process ends however it ends, so a lock left by a killed process is
/// simply taken over. The file records the holder's pid for the message a second process gets
/// (ConfigError: "RUN is in use by another epoch process (pid N)").
class RunDirLock {
 public:
  explicit RunDirLock(const std::string& dir);
  ~RunDirLock();
  RunDirLock(const RunDirLock&) = delete;
  RunDirLock& operator=(const RunDirLock&) = delete;

 private:
  int fd_ = -1;
};

/// What a run directory holds: nothing of a run, a run that has not written its first
/// checkpoint yet (config.json or metrics.jsonl only), or a checkpointed run.
enum class RunState { empty, started, checkpointed };
RunState run_state(const std::string& dir);

/// Removes the temporary files of atomic writes that a killed process left in RUN/checkpoints
/// ("<name>.tmp.<pid>.<n>"). Only with the lock held: no live writer is then using them.
/// Returns how many were removed.
int remove_orphaned_temporaries(const std::string& dir);

/// Rewrites RUN/metrics.jsonl (atomically) without the records of steps after `step`: a run
/// resumed from the checkpoint of `step` logs those steps again. Lines that are not JSON (a
/// line cut by a kill) are dropped too.
void truncate_metrics_after(const std::string& dir, std::int64_t step);

/// Makes `to` a copy of the finished file `from`, atomically (a hard link when the file
/// system allows, else a copy; through a temporary name and a rename either way), replacing
/// what `to` held. IoError naming `to` on failure.
void publish_copy(const std::string& from, const std::string& to);

/// The epoch checkpoint file name: "epoch-<K>.safetensors".
std::string epoch_checkpoint_name(std::int64_t epoch);

/// Keeps the newest `keep` "epoch-<K>.safetensors" files of RUN/checkpoints (by K) and removes
/// the others; keep < 0 keeps all. last.safetensors and best.safetensors are never touched.
void prune_epoch_checkpoints(const std::string& dir, std::int64_t keep);

}  // namespace epoch::train
