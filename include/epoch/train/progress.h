// The training progress display: a redrawn bar (step/total, images/s, loss, ETA) on a terminal,
// plain periodic lines otherwise (logs, CI, pipes).
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace epoch::train {

class Progress {
 public:
  /// interactive: redraw one line with '\r' (a terminal); otherwise print a line every
  /// `line_interval_s` seconds and at the end of each epoch.
  Progress(std::FILE* out, bool interactive, double line_interval_s = 10.0);

  /// Starts an epoch of `total_steps` steps.
  void start_epoch(std::int64_t epoch, std::int64_t epochs, std::int64_t total_steps);
  /// Reports that `step` (1-based) steps of this epoch are done, with the running loss.
  void update(std::int64_t step, std::int64_t images_done, double loss);
  /// Ends the epoch's bar with a summary line.
  void end_epoch(const std::string& summary);

  /// What `images_done` counts, as the rate shows it: "img" (the default) or "frames".
  void set_unit(std::string unit) { unit_ = std::move(unit); }

  /// "1:05" or "1:02:03".
  static std::string format_duration(double seconds);

 private:
  void render(std::int64_t step, double images_per_s, double loss, double eta_s, bool final);

  std::FILE* out_;
  bool interactive_;
  double line_interval_s_;
  std::int64_t epoch_ = 0, epochs_ = 0, total_ = 0;
  std::chrono::steady_clock::time_point start_, last_line_;
  std::int64_t images_ = 0;
  double loss_ = 0.0;
  std::int64_t step_ = 0;
  std::string unit_ = "img";
};

}  // namespace epoch::train
