// Device helper shared by softmax and softmax cross-entropy: the stable softmax of one row by
// one warp, with the same arithmetic as the CPU reference (float exp, double sum).
#pragma once

namespace epoch::cuda {

/// Writes y (K) = softmax(x (K)) using the 32 lanes of the calling warp (lane in [0, 32)), and
/// returns log(sum exp(x - max)) in double; *row_max receives max(x). Every lane sums a fixed
/// strided subset and the xor butterfly adds them in a fixed pattern, so the result is
/// deterministic and identical on every lane.
__device__ inline double row_softmax(const float* x, float* y, long long K, int lane,
                                     float* row_max = nullptr) {
  float m = x[0];
  for (long long k = lane; k < K; k += 32) m = fmaxf(m, x[k]);
  for (int offset = 16; offset > 0; offset >>= 1)
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, offset));
  double s = 0.0;
  for (long long k = lane; k < K; k += 32) {
    const float e = expf(x[k] - m);
    y[k] = e;
    s += e;
  }
  for (int offset = 16; offset > 0; offset >>= 1) s += __shfl_xor_sync(0xffffffffu, s, offset);
  const float inv = static_cast<float>(1.0 / s);
  for (long long k = lane; k < K; k += 32) y[k] *= inv;
  if (row_max != nullptr) *row_max = m;
  return log(s);
}

}  // namespace epoch::cuda
