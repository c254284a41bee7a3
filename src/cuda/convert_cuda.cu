// CUDA i32 -> f32 conversion (see convert_cuda.h).
#include "cuda/check_cuda.h"
#include "cuda/convert_cuda.h"

namespace epoch::cuda {
namespace {

__global__ void i32_to_f32_kernel(const std::int32_t* x, float* y, long long n) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    y[i] = static_cast<float>(x[i]);
}

}  // namespace

void i32_to_f32(const std::int32_t* x, float* y, std::int64_t n) {
  if (n == 0) return;
  i32_to_f32_kernel<<<blocks_for(n), 256>>>(x, y, n);
  EPOCH_CUDA_CHECK_LAUNCH();
}

}  // namespace epoch::cuda
