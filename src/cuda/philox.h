// Philox4x32-10 for host and device: the same function as epoch::philox4x32 in
// epoch/tensor/random.h, written without std::array so CUDA kernels can call it. A plain
// header (compiled by the host compiler too) so the CPU tests check it against RandomStream.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define EPOCH_HOST_DEVICE __host__ __device__
#else
#define EPOCH_HOST_DEVICE
#endif

namespace epoch::cuda {

struct Philox4 {
  std::uint32_t v[4];
};

/// Philox4x32-10 of the counter (c0, c1, c2, c3) under `key` (bit-identical to philox4x32).
EPOCH_HOST_DEVICE inline Philox4 philox4x32_10(std::uint32_t c0, std::uint32_t c1,
                                               std::uint32_t c2, std::uint32_t c3,
                                               std::uint64_t key) {
  std::uint32_t k0 = static_cast<std::uint32_t>(key);
  std::uint32_t k1 = static_cast<std::uint32_t>(key >> 32);
  for (int round = 0; round < 10; ++round) {
    const std::uint64_t p0 = std::uint64_t{0xD2511F53u} * c0;
    const std::uint64_t p1 = std::uint64_t{0xCD9E8D57u} * c2;
    const std::uint32_t n0 = static_cast<std::uint32_t>(p1 >> 32) ^ c1 ^ k0;
    const std::uint32_t n1 = static_cast<std::uint32_t>(p1);
    const std::uint32_t n2 = static_cast<std::uint32_t>(p0 >> 32) ^ c3 ^ k1;
    const std::uint32_t n3 = static_cast<std::uint32_t>(p0);
    c0 = n0;
    c1 = n1;
    c2 = n2;
    c3 = n3;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return Philox4{{c0, c1, c2, c3}};
}

/// The four draws at positions 4*group .. 4*group+3 of the stream whose mixed key is `key`
/// (RandomStream(seed, k).bits_at(4*group + j) == philox_group(mix64(seed, k), group).v[j]).
EPOCH_HOST_DEVICE inline Philox4 philox_group(std::uint64_t key, std::uint64_t group) {
  return philox4x32_10(static_cast<std::uint32_t>(group), static_cast<std::uint32_t>(group >> 32),
                       0u, 0u, key);
}

}  // namespace epoch::cuda
