// A run directory's life: one process at a time (an exclusive lock), what it already holds,
// the record of the files the run wrote (the only ones it overwrites or prunes), temporary
// files a killed writer left, metrics past a resumed checkpoint, and how many epoch
// checkpoints are kept.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace epoch::train {

/// Exclusive use of a run directory (created if missing): flock on RUN/.lock, which the kernel
/// releases when the process ends however it ends, so a lock left by a killed process is
/// simply taken over. The file records the holder's pid for the message a second process gets
/// (ConfigError: "RUN is in use by another epoch process (pid N)"). When the holder goes and
/// the folder holds nothing but the lock (a run that failed before writing anything), the
/// lock file goes too, with an empty checkpoints/ and the folders the lock created.
class RunDirLock {
 public:
  explicit RunDirLock(const std::string& dir);
  ~RunDirLock();
  RunDirLock(const RunDirLock&) = delete;
  RunDirLock& operator=(const RunDirLock&) = delete;

 private:
  int fd_ = -1;
  std::string dir_;
  std::vector<std::string> created_;  // folders the lock made, the deepest last
};

/// ConfigError for a --out no run may take: the root folder and the home folder.
void check_run_dir_allowed(const std::string& dir);

/// What a run directory holds: nothing, a run that has not written its first checkpoint yet
/// (config.json or metrics.jsonl only), a checkpointed run, or files that are not an epoch
/// run's (a folder epoch must not write into).
enum class RunState { empty, started, checkpointed, foreign };
RunState run_state(const std::string& dir);

/// A few of the entries of a folder, for a message ("checkpoints/, notes.txt and 2 more").
std::string describe_contents(const std::string& dir);

/// The record of the files a run wrote (RUN/epoch-run.json), relative to RUN: the files it may
/// replace, truncate or prune, and the mark of a folder that holds an epoch run.
inline constexpr const char* kRunRecordName = "epoch-run.json";
/// The recorded files (empty when there is no record). IoError naming the record when it is
/// not one.
std::set<std::string> recorded_files(const std::string& dir);
/// Adds `added` to the record and takes `removed` out of it (atomically rewritten).
void record_files(const std::string& dir, const std::vector<std::string>& added,
                  const std::vector<std::string>& removed = {});
/// A run written before the record existed (config.json, no record): records the files of its
/// own names it holds now (config.json, metrics.jsonl, its event files, report.html, the
/// checkpoints last, best and epoch-K), so resuming it goes on as before.
void adopt_unrecorded_run(const std::string& dir);

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

/// Keeps the newest `keep` "epoch-<K>.safetensors" files of RUN/checkpoints (by K) that the run
/// recorded as its own and removes the others of them; keep < 0 keeps all. Files the run did
/// not write are never touched, nor are last.safetensors and best.safetensors.
void prune_epoch_checkpoints(const std::string& dir, std::int64_t keep);

}  // namespace epoch::train
