// Dropout kernels (see dropout_cpu.h); OpenMP over chunks of elements (row-major) or planes
// (blocked). Elements 4g..4g+3 are the four words of one Philox call, exactly as
// RandomStream::bits_at draws them (the CUDA twin groups them the same way), so one call serves
// four elements, and the calls of consecutive groups run side by side in vector lanes.
#include "cpu/dropout_cpu.h"

#include <algorithm>
#include <array>

#include "epoch/tensor/random.h"
// Compiled once per instruction-set level (kernels/isa_target.h): include it last.
#include "kernels/isa_target.h"
#if EPOCH_ISA_HAS_AVX2
#include <immintrin.h>
#endif

namespace epoch::cpu::EPOCH_ISA_NS {

namespace {

// Philox draws in batches: lane l of a batch is the call for group g0 + l, whose counter is
// {g, g >> 32, 0, 0} (RandomStream::bits_at's). On AVX2 the lanes run 8 to a register; one call
// at a time spent about 3 ns an element, most of a small model's dropout time.
constexpr int kLanes = 16;
using LaneBits = std::uint32_t[4][kLanes];

[[maybe_unused]] void philox_lanes_portable(std::uint64_t g0, std::uint64_t key, LaneBits& out) {
  for (int l = 0; l < kLanes; ++l) {
    const std::uint64_t g = g0 + static_cast<std::uint64_t>(l);
    const std::array<std::uint32_t, 4> r =
        philox4x32({static_cast<std::uint32_t>(g), static_cast<std::uint32_t>(g >> 32), 0, 0}, key);
    for (int w = 0; w < 4; ++w) out[w][l] = r[static_cast<std::size_t>(w)];
  }
}

#if EPOCH_ISA_HAS_AVX2
// The high 32 bits of the eight 32 x 32-bit products a * m (vpmuludq on even and odd lanes).
__m256i mulhi_epu32(__m256i a, __m256i m) {
  const __m256i even = _mm256_mul_epu32(a, m);
  const __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), m);
  return _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
}

// philox4x32 (epoch/tensor/random.h) of 8 consecutive groups per register, round for round.
void philox_lanes_avx2(std::uint64_t g0, std::uint64_t key, LaneBits& out) {
  const __m256i m0 = _mm256_set1_epi32(static_cast<int>(0xD2511F53u));
  const __m256i m1 = _mm256_set1_epi32(static_cast<int>(0xCD9E8D57u));
  for (int half = 0; half < kLanes / 8; ++half) {
    alignas(32) std::uint32_t lo[8], hi[8];
    for (int l = 0; l < 8; ++l) {
      const std::uint64_t g = g0 + static_cast<std::uint64_t>(8 * half + l);
      lo[l] = static_cast<std::uint32_t>(g);
      hi[l] = static_cast<std::uint32_t>(g >> 32);
    }
    __m256i c0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(lo));
    __m256i c1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(hi));
    __m256i c2 = _mm256_setzero_si256(), c3 = _mm256_setzero_si256();
    std::uint32_t k0 = static_cast<std::uint32_t>(key), k1 = static_cast<std::uint32_t>(key >> 32);
    for (int round = 0; round < 10; ++round) {
      const __m256i hi0 = mulhi_epu32(c0, m0), lo0 = _mm256_mullo_epi32(c0, m0);
      const __m256i hi1 = mulhi_epu32(c2, m1), lo1 = _mm256_mullo_epi32(c2, m1);
      c0 = _mm256_xor_si256(_mm256_xor_si256(hi1, c1), _mm256_set1_epi32(static_cast<int>(k0)));
      c2 = _mm256_xor_si256(_mm256_xor_si256(hi0, c3), _mm256_set1_epi32(static_cast<int>(k1)));
      c1 = lo1;
      c3 = lo0;
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(&out[0][8 * half]), c0);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(&out[1][8 * half]), c1);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(&out[2][8 * half]), c2);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(&out[3][8 * half]), c3);
  }
}
#endif

void philox_lanes(std::uint64_t g0, std::uint64_t key, LaneBits& out) {
#if EPOCH_ISA_HAS_AVX2
  philox_lanes_avx2(g0, key, out);
#else
  philox_lanes_portable(g0, key, out);
#endif
}

// Elements [begin, end) of the stream (row-major indices) as keep factors: factor[i - begin] =
// scale where (bits_at(i) >> 8) * 2^-24 >= p, else 0.
void keep_factors(std::int64_t begin, std::int64_t end, float p, float scale,
                  std::uint64_t stream_key, float* factor) {
  LaneBits bits;
  for (std::int64_t g0 = begin >> 2; 4 * g0 < end; g0 += kLanes) {
    philox_lanes(static_cast<std::uint64_t>(g0), stream_key, bits);
    for (int l = 0; l < kLanes; ++l) {
      for (int w = 0; w < 4; ++w) {
        const std::int64_t i = 4 * (g0 + l) + w;
        if (i < begin || i >= end) continue;
        const float u = static_cast<float>(bits[w][l] >> 8) * (1.0f / 16777216.0f);
        factor[i - begin] = u >= p ? scale : 0.0f;
      }
    }
  }
}

constexpr std::int64_t kChunk = 1024;  // elements per batch of factors (a multiple of 4)

}  // namespace

void dropout_forward(const float* x, float* y, float* mask, std::int64_t n, float p,
                     std::uint64_t seed, std::uint64_t key) {
  const std::uint64_t stream_key = mix64(seed, key);  // the key RandomStream(seed, key) uses
  const float scale = 1.0f / (1.0f - p);
  const std::int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (n > 8192)
  for (std::int64_t c = 0; c < chunks; ++c) {
    const std::int64_t begin = c * kChunk, end = std::min(n, begin + kChunk);
    keep_factors(begin, end, p, scale, stream_key, mask + begin);
    for (std::int64_t i = begin; i < end; ++i) y[i] = x[i] * mask[i];
  }
}

// One (n, c) plane at a time: its elements are consecutive in row-major order, so their factors
// come in batches as in dropout_forward, and no index needs a division; in the blocked layout
// the plane's elements lie `block` floats apart.
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
    float factor[kChunk];
    for (std::int64_t from = 0; from < HW; from += kChunk) {
      const std::int64_t to = std::min(HW, from + kChunk);
      keep_factors(plane * HW + from, plane * HW + to, p, scale, stream_key, factor);
      for (std::int64_t pos = from; pos < to; ++pos) {
        const float m = factor[pos - from];
        mp[pos * block] = m;
        yp[pos * block] = xp[pos * block] * m;
      }
    }
  }
}

void dropout_backward(const float* dy, const float* mask, float* dx, std::int64_t n) {
#pragma omp parallel for simd schedule(static) if (n > 32768)
  for (std::int64_t i = 0; i < n; ++i) dx[i] = dy[i] * mask[i];
}

}  // namespace epoch::cpu::EPOCH_ISA_NS

#if EPOCH_ISA_LEVEL == 0
namespace epoch::cpu {
EPOCH_ISA_KERNEL(dropout_forward);
EPOCH_ISA_KERNEL(dropout_forward_blocked);
EPOCH_ISA_KERNEL(dropout_backward);
}  // namespace epoch::cpu
#endif
