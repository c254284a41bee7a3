// Counter-based randomness (Philox4x32-10): every consumer (initialization, shuffling,
// augmentation of sample i, dropout of step t) derives its own stream from (seed, key), so a
// result never depends on thread scheduling or worker count.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <string_view>

namespace epoch {

/// Philox4x32-10 of a 128-bit counter under a 64-bit key.
inline std::array<std::uint32_t, 4> philox4x32(std::array<std::uint32_t, 4> ctr, std::uint64_t key) {
  std::uint32_t k0 = static_cast<std::uint32_t>(key), k1 = static_cast<std::uint32_t>(key >> 32);
  for (int round = 0; round < 10; ++round) {
    const std::uint64_t p0 = std::uint64_t{0xD2511F53u} * ctr[0];
    const std::uint64_t p1 = std::uint64_t{0xCD9E8D57u} * ctr[2];
    ctr = {static_cast<std::uint32_t>(p1 >> 32) ^ ctr[1] ^ k0, static_cast<std::uint32_t>(p1),
           static_cast<std::uint32_t>(p0 >> 32) ^ ctr[3] ^ k1, static_cast<std::uint32_t>(p0)};
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return ctr;
}

/// Mixes two 64-bit values into one (SplitMix64 finalizer); used to derive stream keys.
inline std::uint64_t mix64(std::uint64_t a, std::uint64_t b) {
  std::uint64_t z = a + 0x9E3779B97F4A7C15ull * (b + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// A stable 64-bit key for a name (FNV-1a), e.g. a parameter path.
inline std::uint64_t hash_name(std::string_view name) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  return h;
}

/// A random stream identified by (seed, key): draw i is a pure function of (seed, key, i).
class RandomStream {
 public:
  RandomStream(std::uint64_t seed, std::uint64_t key) : key_(mix64(seed, key)) {}

  /// 32 random bits at position `index` of the stream (random access).
  std::uint32_t bits_at(std::uint64_t index) const {
    const auto r = philox4x32({static_cast<std::uint32_t>(index >> 2),
                               static_cast<std::uint32_t>(index >> 34), 0, 0},
                              key_);
    return r[index & 3];
  }
  /// Next 32 random bits.
  std::uint32_t next_bits() { return bits_at(position_++); }
  /// Uniform in [0, 1).
  float uniform() { return static_cast<float>(next_bits() >> 8) * (1.0f / 16777216.0f); }
  float uniform(float lo, float hi) { return lo + (hi - lo) * uniform(); }
  /// Uniform integer in [0, n) (64 random bits reduced modulo n; the bias is below 2^-32
  /// for any n under 2^32).
  std::uint64_t below(std::uint64_t n) {
    const std::uint64_t hi = next_bits();
    return ((hi << 32) | next_bits()) % n;
  }
  /// Standard normal (Box-Muller).
  float normal() {
    const float u1 = (static_cast<float>(next_bits() >> 8) + 1.0f) * (1.0f / 16777217.0f);
    const float u2 = uniform();
    return std::sqrt(-2.0f * std::log(u1)) * std::cos(6.283185307179586f * u2);
  }
  std::uint64_t position() const { return position_; }
  void set_position(std::uint64_t p) { position_ = p; }

 private:
  std::uint64_t key_;
  std::uint64_t position_ = 0;
};

}  // namespace epoch
