// The two pieces of epoch's vectorizable exp and pow (sigmoid, LRN with a general beta): no
// libm call and no branch, so the loops that inline them vectorize.
#pragma once

#include <bit>
#include <cstdint>

namespace epoch::cpu {

/// exp(r) for |r| <= ln 2 / 2 by the degree-6 polynomial of Cephes' expf; relative error below
/// 2e-7.
inline float exp_reduced(float r) {
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  return p * r * r + r + 1.0f;
}

/// 2^k for an integer k in [-126, 127], built in the exponent bits.
inline float pow2_int(std::int32_t k) { return std::bit_cast<float>((k + 127) << 23); }

}  // namespace epoch::cpu
