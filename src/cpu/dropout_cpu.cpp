// Reference dropout kernels (see dropout_cpu.h); OpenMP over groups of four elements. Elements
// 4g..4g+3 are the four words of one Philox call, exactly as RandomStream::bits_at draws them
// (the CUDA twin groups them the same way), so one call serves four elements.
#include "cpu/dropout_cpu.h"

#include <algorithm>
#include <array>

#include "epoch/tensor/random.h"

namespace epoch::cpu {

namespace {

// Element i (row-major order) draws its keep decision from bits_at(i) and is stored at at(i).
template <typename At>
void dropout_forward_at(const float* x, float* y, float* mask, std::int64_t n, float p,
                        std::uint64_t seed, std::uint64_t key, At at) {
  const std::uint64_t stream_key = mix64(seed, key);  // the key RandomStream(seed, key) uses
  const float scale = 1.0f / (1.0f - p);
  const std::int64_t groups = (n + 3) / 4;
#pragma omp parallel for schedule(static) if (n > 8192)
  for (std::int64_t g = 0; g < groups; ++g) {
    const auto c = static_cast<std::uint64_t>(g);
    // bits_at(i) = philox4x32({i >> 2, i >> 34, 0, 0}, key)[i & 3]
    const std::array<std::uint32_t, 4> bits = philox4x32(
        {static_cast<std::uint32_t>(c), static_cast<std::uint32_t>(c >> 32), 0, 0}, stream_key);
    const std::int64_t end = std::min(n, 4 * g + 4);
    for (std::int64_t i = 4 * g; i < end; ++i) {
      const float u =
          static_cast<float>(bits[static_cast<std::size_t>(i & 3)] >> 8) * (1.0f / 16777216.0f);
      const float m = u >= p ? scale : 0.0f;
      const std::int64_t j = at(i);
      mask[j] = m;
      y[j] = x[j] * m;
    }
  }
}

}  // namespace

void dropout_forward(const float* x, float* y, float* mask, std::int64_t n, float p,
                     std::uint64_t seed, std::uint64_t key) {
  dropout_forward_at(x, y, mask, n, p, seed, key, [](std::int64_t i) { return i; });
}

// One (n, c) plane at a time: its elements are consecutive in row-major order, so a Philox call
// serves four of them as in dropout_forward, and no index needs a division; in the blocked
// layout the plane's elements lie `block` floats apart.
void dropout_forward_blocked(const float* x, float* y, float* mask, std::int64_t N, std::int64_t C,
                             std::int64_t HW, std::int64_t block, float p, std::uint64_t seed,
                             std::uint64_t key) {
  const std::uint64_t stream_key = mix64(seed, key);
  const float scale = 1.0f / (1.0f - p);
  const std::int64_t planes = N * C;
#pragma omp parallel for schedule(static) if (planes * HW > 8192)
  for (std::int64_t plane = 0; plane < planes; ++plane) {
    const std::int64_t n = plane / C, c = plane % C;
    const std::int64_t offset = (n * (C / block) + c / block) * HW * block + c % block;
    const float* xp = x + offset;
    float* yp = y + offset;
    float* mp = mask + offset;
    std::array<std::uint32_t, 4> bits{};
    std::int64_t group = -1;
    for (std::int64_t pos = 0; pos < HW; ++pos) {
      const std::int64_t i = plane * HW + pos;  // the row-major index
      if ((i >> 2) != group) {
        group = i >> 2;
        const auto g = static_cast<std::uint64_t>(group);
        bits = philox4x32(
            {static_cast<std::uint32_t>(g), static_cast<std::uint32_t>(g >> 32), 0, 0}, stream_key);
      }
      const float u =
          static_cast<float>(bits[static_cast<std::size_t>(i & 3)] >> 8) * (1.0f / 16777216.0f);
      const float m = u >= p ? scale : 0.0f;
      mp[pos * block] = m;
      yp[pos * block] = xp[pos * block] * m;
    }
  }
}

void dropout_backward(const float* dy, const float* mask, float* dx, std::int64_t n) {
#pragma omp parallel for simd schedule(static) if (n > 32768)
  for (std::int64_t i = 0; i < n; ++i) dx[i] = dy[i] * mask[i];
}

}  // namespace epoch::cpu
