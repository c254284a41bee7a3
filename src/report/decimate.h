// Thinning a series while it streams in, so that a report draws a run of any length from a
// bounded number of points in bounded memory: the envelope of a curve (the lowest and highest
// value of each bucket of consecutive points) or every k-th item. Both always keep the first
// and the last.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace epoch::report {

/// The points a report draws of a line, however many were logged: consecutive points fall into
/// buckets of equal width (doubled, and neighbours merged, whenever there would be more than
/// max_points / 2 buckets), and each bucket keeps its lowest and its highest point, so a spike
/// stays visible. A point whose x or y is not finite is a gap; a bucket of gaps only is one gap.
/// ensures: points() holds at most max_points + 2 points, in the order they came, the first
///          and the last of them among them; memory stays O(max_points).
class Decimator {
 public:
  explicit Decimator(std::size_t max_points = 2000);

  void add(double x, double y);
  /// How many points were added.
  std::uint64_t count() const { return count_; }
  /// The kept points, in order: their x and y (a gap has a NaN y).
  void points(std::vector<double>& x, std::vector<double>& y) const;

 private:
  struct Point {
    std::uint64_t index = 0;
    double x = 0.0, y = 0.0;
  };
  struct Bucket {
    Point first, low, high;
    std::uint64_t size = 0;
    bool any_finite = false;
  };
  void merge_pairs();

  std::size_t max_buckets_;
  std::uint64_t width_ = 1, count_ = 0;
  std::vector<Bucket> buckets_;
  Point last_;
};

/// Every k-th item of a stream and its last one, k doubling whenever more than `max_items`
/// would be kept. Two streams of the same length keep the same positions (the repeats of a
/// study's configuration keep the same steps).
/// ensures: items() holds at most max_items + 1 items, the first and the last among them.
template <typename T>
class Thinned {
 public:
  explicit Thinned(std::size_t max_items) : max_items_(max_items < 2 ? 2 : max_items) {}

  void add(T item) {
    if (count_ % stride_ == 0) {
      kept_.emplace_back(count_, item);
      if (kept_.size() > max_items_) {
        // Keep the positions that are multiples of the doubled stride.
        std::size_t out = 0;
        for (std::size_t i = 0; i < kept_.size(); ++i)
          if (kept_[i].first % (2 * stride_) == 0) kept_[out++] = std::move(kept_[i]);
        kept_.resize(out);
        stride_ *= 2;
      }
    }
    last_ = {count_, std::move(item)};
    ++count_;
  }
  std::uint64_t count() const { return count_; }
  /// The kept items in order, the last one added at the end.
  std::vector<T> items() const {
    std::vector<T> out;
    out.reserve(kept_.size() + 1);
    for (const auto& [index, item] : kept_) out.push_back(item);
    if (count_ > 0 && (kept_.empty() || kept_.back().first != last_.first))
      out.push_back(last_.second);
    return out;
  }

 private:
  std::size_t max_items_;
  std::uint64_t stride_ = 1, count_ = 0;
  std::vector<std::pair<std::uint64_t, T>> kept_;
  std::pair<std::uint64_t, T> last_{};
};

}  // namespace epoch::report
