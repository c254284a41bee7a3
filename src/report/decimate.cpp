// The envelope of a streamed series in bounded memory (see decimate.h).
#include "decimate.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace epoch::report {

Decimator::Decimator(std::size_t max_points)
    : max_buckets_(std::max<std::size_t>(2, max_points / 2)) {
  buckets_.reserve(max_buckets_ + 1);
}

void Decimator::add(double x, double y) {
  const Point p{count_++, x, y};
  last_ = p;
  if (buckets_.empty() || buckets_.back().size == width_) {
    Bucket b;
    b.first = p;
    buckets_.push_back(b);
  }
  Bucket& b = buckets_.back();
  ++b.size;
  if (std::isfinite(x) && std::isfinite(y)) {
    if (!b.any_finite) {
      b.low = b.high = p;
      b.any_finite = true;
    } else if (y < b.low.y) {
      b.low = p;
    } else if (y > b.high.y) {
      b.high = p;
    }
  }
  if (buckets_.size() > max_buckets_) merge_pairs();
}

// Buckets 2i and 2i+1 become bucket i, twice as wide: every bucket but the last is full, so the
// merged ones stay aligned on multiples of the new width.
void Decimator::merge_pairs() {
  std::size_t out = 0;
  for (std::size_t i = 0; i < buckets_.size(); i += 2) {
    Bucket merged = buckets_[i];
    if (i + 1 < buckets_.size()) {
      const Bucket& b = buckets_[i + 1];
      merged.size += b.size;
      if (b.any_finite) {
        if (!merged.any_finite) {
          merged.low = b.low;
          merged.high = b.high;
          merged.any_finite = true;
        } else {
          if (b.low.y < merged.low.y) merged.low = b.low;
          if (b.high.y > merged.high.y) merged.high = b.high;
        }
      }
    }
    buckets_[out++] = merged;
  }
  buckets_.resize(out);
  width_ *= 2;
}

void Decimator::points(std::vector<double>& x, std::vector<double>& y) const {
  x.clear();
  y.clear();
  if (count_ == 0) return;
  std::vector<Point> kept;
  kept.reserve(2 * buckets_.size() + 2);
  kept.push_back(buckets_.front().first);
  for (const Bucket& b : buckets_) {
    if (!b.any_finite) {
      kept.push_back({b.first.index, b.first.x, std::numeric_limits<double>::quiet_NaN()});
      continue;
    }
    const bool low_first = b.low.index <= b.high.index;
    kept.push_back(low_first ? b.low : b.high);
    kept.push_back(low_first ? b.high : b.low);
  }
  kept.push_back(last_);
  // In order of arrival, each point once: the first and the last may be a bucket's extremes.
  std::stable_sort(kept.begin(), kept.end(),
                   [](const Point& a, const Point& b) { return a.index < b.index; });
  kept.erase(std::unique(kept.begin(), kept.end(),
                         [](const Point& a, const Point& b) { return a.index == b.index; }),
             kept.end());
  for (const Point& p : kept) {
    x.push_back(p.x);
    y.push_back(p.y);
  }
}

}  // namespace epoch::report
