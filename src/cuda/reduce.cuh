// Deterministic device reductions shared by the CUDA kernels: every thread sums a fixed
// strided subset in double, then a fixed shared-memory tree combines them. The partition
// depends only on the element count, so a result never varies from run to run.
#pragma once

namespace epoch::cuda {

constexpr int kReduceThreads = 256;

/// Sums v over the block (blockDim.x == kReduceThreads) in a fixed tree; the total is returned
/// to thread 0 (other threads get partial values). Every thread of the block must call it.
__device__ inline double block_sum(double v) {
  __shared__ double partial[kReduceThreads];
  partial[threadIdx.x] = v;
  __syncthreads();
  for (int stride = kReduceThreads / 2; stride > 0; stride >>= 1) {
    if (static_cast<int>(threadIdx.x) < stride)
      partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  const double total = partial[0];
  __syncthreads();  // the array may be reused by a following call
  return total;
}

/// partial[b] = sum over i = b*256 + t + k*256*gridDim.x < n of term(i), for block b.
template <typename Term>
__global__ void partial_sum_kernel(Term term, long long n, double* partial) {
  double s = 0.0;
  for (long long i = blockIdx.x * static_cast<long long>(kReduceThreads) + threadIdx.x; i < n;
       i += static_cast<long long>(kReduceThreads) * gridDim.x)
    s += term(i);
  const double total = block_sum(s);
  if (threadIdx.x == 0) partial[blockIdx.x] = total;
}

/// One block: *out = (sum of values[0, count)) / divisor, as float.
static __global__ void finish_mean_kernel(const double* values, long long count, double divisor,
                                          float* out) {
  double s = 0.0;
  for (long long i = threadIdx.x; i < count; i += kReduceThreads) s += values[i];
  const double total = block_sum(s);
  if (threadIdx.x == 0) *out = static_cast<float>(total / divisor);
}

/// Blocks for partial_sum_kernel over n elements: a function of n only (at most 1024).
inline unsigned int reduce_blocks(long long n) {
  const long long b = (n + kReduceThreads - 1) / kReduceThreads;
  return static_cast<unsigned int>(b < 1 ? 1 : (b > 1024 ? 1024 : b));
}

}  // namespace epoch::cuda
