// Helpers the benchmarks share: medians, wall-clock milliseconds, and seeded uniform inputs.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "epoch/tensor/random.h"
#include "epoch/tensor/tensor.h"

namespace epoch::bench {

/// The median of v (the mean of the middle two for an even count); 0 for none.
inline double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

using Clock = std::chrono::steady_clock;

inline double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

/// A CPU f32 tensor of the shape, uniform in [lo, hi) from (seed, key).
inline Tensor uniform_tensor(const Shape& shape, std::uint64_t seed, std::uint64_t key,
                             float lo = 0.0f, float hi = 1.0f) {
  Tensor t = Tensor::empty(shape);
  RandomStream rng(seed, key);
  float* p = t.f32();
  for (std::int64_t i = 0; i < t.numel(); ++i) p[i] = rng.uniform(lo, hi);
  return t;
}

}  // namespace epoch::bench
