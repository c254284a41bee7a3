// Progress bar and periodic progress lines (see progress.h).
#include "epoch/train/progress.h"

#include <cmath>

namespace epoch::train {

Progress::Progress(std::FILE* out, bool interactive, double line_interval_s)
    : out_(out), interactive_(interactive), line_interval_s_(line_interval_s) {}

void Progress::start_epoch(std::int64_t epoch, std::int64_t epochs, std::int64_t total_steps) {
  epoch_ = epoch;
  epochs_ = epochs;
  total_ = total_steps;
  start_ = last_line_ = std::chrono::steady_clock::now();
  images_ = 0;
  step_ = 0;
}

void Progress::update(std::int64_t step, std::int64_t images_done, double loss) {
  step_ = step;
  images_ = images_done;
  loss_ = loss;
  const auto now = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double ips = elapsed > 0 ? static_cast<double>(images_done) / elapsed : 0.0;
  const double eta =
      step > 0 ? elapsed / static_cast<double>(step) * static_cast<double>(total_ - step) : 0.0;
  if (interactive_) {
    render(step, ips, loss, eta, false);
  } else if (std::chrono::duration<double>(now - last_line_).count() >= line_interval_s_) {
    last_line_ = now;
    render(step, ips, loss, eta, false);
  }
}

void Progress::end_epoch(const std::string& summary) {
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double ips = elapsed > 0 ? static_cast<double>(images_) / elapsed : 0.0;
  render(step_, ips, loss_, 0.0, true);
  std::fprintf(out_, "%s\n", summary.c_str());
  std::fflush(out_);
}

std::string Progress::format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) seconds = 0;
  const auto s = static_cast<long long>(std::llround(seconds));
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%lld:%02lld", s / 60, s % 60);
  return buf;
}

void Progress::render(std::int64_t step, double images_per_s, double loss, double eta_s,
                      bool final) {
  const std::string head = "epoch " + std::to_string(epoch_) + "/" + std::to_string(epochs_);
  char tail[160];
  std::snprintf(
      tail, sizeof tail, "%lld/%lld | %.0f %s/s | loss %.4f | %s %s", static_cast<long long>(step),
      static_cast<long long>(total_), images_per_s, unit_.c_str(), loss, final ? "took" : "ETA",
      format_duration(
          final ? std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count()
                : eta_s)
          .c_str());
  if (interactive_) {
    constexpr int kWidth = 24;
    const int filled =
        total_ > 0
            ? static_cast<int>(kWidth * static_cast<double>(step) / static_cast<double>(total_))
            : 0;
    std::string bar(static_cast<std::size_t>(filled), '#');
    bar.resize(kWidth, '.');
    std::fprintf(out_, "\r%s [%s] %s\033[K%s", head.c_str(), bar.c_str(), tail, final ? "\n" : "");
  } else {
    std::fprintf(out_, "%s %s\n", head.c_str(), tail);
  }
  std::fflush(out_);
}

}  // namespace epoch::train
