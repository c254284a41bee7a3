// A TensorBoard event file of scalars in a run folder, so `tensorboard --logdir runs` shows what
// metrics.jsonl holds; written by hand (TFRecord framing around a few protobuf fields).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace epoch::train {

class ScalarEvents {
 public:
  /// Creates DIR/events.out.tfevents.<unix seconds>.<hostname>.<pid> (a new file each time,
  /// never one that exists) and writes its version event. Throws IoError naming the file.
  explicit ScalarEvents(const std::string& dir);
  ~ScalarEvents();
  ScalarEvents(const ScalarEvents&) = delete;
  ScalarEvents& operator=(const ScalarEvents&) = delete;

  /// One event at `step` with one float32 value per (tag, value), flushed as written.
  void write(std::int64_t step, const std::vector<std::pair<std::string, double>>& scalars);

  /// Marks a resumed run starting at `step`: TensorBoard drops the steps >= `step` that the
  /// folder's earlier files hold (a SessionLog START event).
  void restart(std::int64_t step);

  const std::string& path() const { return path_; }

 private:
  void write_record(const std::string& event);

  std::string path_;
  std::FILE* file_ = nullptr;
};

}  // namespace epoch::train
