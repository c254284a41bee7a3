// CUDA dropout (see dropout_cuda.h): one thread per group of four elements, which share one
// Philox call, exactly as RandomStream::bits_at draws them on the CPU.
#include "cuda/check_cuda.h"
#include "cuda/dropout_cuda.h"
#include "cuda/philox.h"
#include "epoch/tensor/random.h"

namespace epoch::cuda {
namespace {

constexpr int kThreads = 256;

__global__ void dropout_forward_kernel(const float* x, float* y, float* mask, long long n,
                                       float p, float scale, unsigned long long key) {
  const long long groups = (n + 3) / 4;
  for (long long g = blockIdx.x * static_cast<long long>(kThreads) + threadIdx.x; g < groups;
       g += static_cast<long long>(kThreads) * gridDim.x) {
    const Philox4 r = philox_group(key, static_cast<std::uint64_t>(g));
    for (int j = 0; j < 4; ++j) {
      const long long i = 4 * g + j;
      if (i >= n) break;
      const float u = static_cast<float>(r.v[j] >> 8) * (1.0f / 16777216.0f);
      const float m = u >= p ? scale : 0.0f;
      mask[i] = m;
      y[i] = x[i] * m;
    }
  }
}

__global__ void dropout_backward_kernel(const float* dy, const float* mask, float* dx,
                                        long long n) {
  for (long long i = blockIdx.x * static_cast<long long>(kThreads) + threadIdx.x; i < n;
       i += static_cast<long long>(kThreads) * gridDim.x)
    dx[i] = dy[i] * mask[i];
}

}  // namespace

void dropout_forward(const float* x, float* y, float* mask, std::int64_t n, float p,
                     std::uint64_t seed, std::uint64_t key) {
  if (n == 0) return;
  // RandomStream(seed, key) draws under the key mix64(seed, key).
  const std::uint64_t mixed = mix64(seed, key);
  const float scale = 1.0f / (1.0f - p);
  dropout_forward_kernel<<<blocks_for((n + 3) / 4), kThreads>>>(x, y, mask, n, p, scale, mixed);
  EPOCH_CUDA_CHECK_LAUNCH();
}

void dropout_backward(const float* dy, const float* mask, float* dx, std::int64_t n) {
  if (n == 0) return;
  dropout_backward_kernel<<<blocks_for(n), kThreads>>>(dy, mask, dx, n);
  EPOCH_CUDA_CHECK_LAUNCH();
}

}  // namespace epoch::cuda
