// The Philox copy that CUDA kernels use (cuda/philox.h) against RandomStream::bits_at, on the
// host: the GPU dropout mask can only equal the CPU one if these agree bit for bit. Runs
// everywhere, GPU or not.
#include <gtest/gtest.h>

#include <cstdint>

#include "cuda/philox.h"
#include "epoch/tensor/random.h"

namespace epoch {
namespace {

TEST(CudaPhilox, MatchesRandomStreamBitForBit) {
  const std::uint64_t seeds[] = {0, 1, 42, 0xFFFFFFFFFFFFFFFFull};
  const std::uint64_t keys[] = {0, 7, 0x123456789ABCDEFull};
  // Groups near 0, past 2^32 (the counter's second word) and large.
  const std::uint64_t groups[] = {0, 1, 2, 1000, 0xFFFFFFFFull, 0x100000000ull, 0x3FFFFFFF12345ull};
  for (std::uint64_t seed : seeds) {
    for (std::uint64_t key : keys) {
      const RandomStream stream(seed, key);
      for (std::uint64_t g : groups) {
        const cuda::Philox4 r = cuda::philox_group(mix64(seed, key), g);
        for (std::uint64_t j = 0; j < 4; ++j)
          ASSERT_EQ(r.v[j], stream.bits_at(4 * g + j)) << "seed " << seed << " key " << key
                                                       << " index " << 4 * g + j;
      }
    }
  }
}

TEST(CudaPhilox, DifferentKeysGiveDifferentStreams) {
  const cuda::Philox4 a = cuda::philox_group(mix64(1, 2), 0);
  const cuda::Philox4 b = cuda::philox_group(mix64(1, 3), 0);
  EXPECT_NE(a.v[0], b.v[0]);
}

}  // namespace
}  // namespace epoch
