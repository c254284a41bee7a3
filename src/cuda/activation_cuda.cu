// CUDA activation kernels (see activation_cuda.h): grid-stride loops over elements with the
// same formulas as the CPU reference; softmax one warp per row, fixed-order shuffle reductions.
#include "cuda/activation_cuda.h"
#include "cuda/check_cuda.h"
#include "cuda/row_softmax.cuh"

namespace epoch::cuda {
namespace {

constexpr int kThreads = 256;

#define EPOCH_GRID_STRIDE(i, n)                                                   \
  for (long long i = blockIdx.x * static_cast<long long>(kThreads) + threadIdx.x; \
       i < (n); i += static_cast<long long>(kThreads) * gridDim.x)

__global__ void relu_forward_kernel(const float* x, float* y, long long n) {
  EPOCH_GRID_STRIDE(i, n) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
__global__ void relu_backward_kernel(const float* dy, const float* x, float* dx, long long n) {
  EPOCH_GRID_STRIDE(i, n) dx[i] = x[i] > 0.0f ? dy[i] : 0.0f;
}

__global__ void sigmoid_forward_kernel(const float* x, float* y, long long n) {
  EPOCH_GRID_STRIDE(i, n) {
    const float e = expf(-fabsf(x[i]));
    const float r = 1.0f / (1.0f + e);
    y[i] = x[i] >= 0.0f ? r : e * r;
  }
}
__global__ void sigmoid_backward_kernel(const float* dy, const float* y, float* dx, long long n) {
  EPOCH_GRID_STRIDE(i, n) dx[i] = dy[i] * y[i] * (1.0f - y[i]);
}

__global__ void tanh_forward_kernel(const float* x, float* y, long long n) {
  EPOCH_GRID_STRIDE(i, n) y[i] = tanhf(x[i]);
}
__global__ void tanh_backward_kernel(const float* dy, const float* y, float* dx, long long n) {
  EPOCH_GRID_STRIDE(i, n) dx[i] = dy[i] * (1.0f - y[i] * y[i]);
}

__global__ void hard_sigmoid_forward_kernel(const float* x, float* y, long long n, float slope,
                                            float offset) {
  EPOCH_GRID_STRIDE(i, n) y[i] = fminf(fmaxf(slope * x[i] + offset, 0.0f), 1.0f);
}
__global__ void hard_sigmoid_backward_kernel(const float* dy, const float* x, float* dx,
                                             long long n, float slope, float offset) {
  EPOCH_GRID_STRIDE(i, n) {
    const float z = slope * x[i] + offset;
    dx[i] = z > 0.0f && z < 1.0f ? dy[i] * slope : 0.0f;
  }
}

__global__ void clip_forward_kernel(const float* x, float* y, long long n, float lo, float hi) {
  EPOCH_GRID_STRIDE(i, n) y[i] = fminf(fmaxf(x[i], lo), hi);
}
__global__ void clip_backward_kernel(const float* dy, const float* x, float* dx, long long n,
                                     float lo, float hi) {
  EPOCH_GRID_STRIDE(i, n) dx[i] = x[i] > lo && x[i] < hi ? dy[i] : 0.0f;
}

#undef EPOCH_GRID_STRIDE

// One warp per row, grid-stride over rows; whole warps share a row, so the loop condition is
// uniform within a warp (kThreads is a multiple of 32), as the shuffles require.
__global__ void softmax_kernel(const float* x, float* y, long long N, long long K) {
  const long long warps = static_cast<long long>(kThreads / 32) * gridDim.x;
  for (long long row = (blockIdx.x * static_cast<long long>(kThreads) + threadIdx.x) / 32;
       row < N; row += warps)
    row_softmax(x + row * K, y + row * K, K, static_cast<int>(threadIdx.x % 32));
}

}  // namespace

void relu_forward(const float* x, float* y, std::int64_t n) {
  if (n == 0) return;
  relu_forward_kernel<<<blocks_for(n), kThreads>>>(x, y, n);
  EPOCH_CUDA_CHECK_LAUNCH();
}
void relu_backward(const float* dy, const float* x, float* dx, std::int64_t n) {
  if (n == 0) return;
  relu_backward_kernel<<<blocks_for(n), kThreads>>>(dy, x, dx, n);
  EPOCH_CUDA_CHECK_LAUNCH();
}

void sigmoid_forward(const float* x, float* y, std::int64_t n) {
  if (n == 0) return;
  sigmoid_forward_kernel<<<blocks_for(n), kThreads>>>(x, y, n);
  EPOCH_CUDA_CHECK_LAUNCH();
}
void sigmoid_backward(const float* dy, const float* y, float* dx, std::int64_t n) {
  if (n == 0) return;
  sigmoid_backward_kernel<<<blocks_for(n), kThreads>>>(dy, y, dx, n);
  EPOCH_CUDA_CHECK_LAUNCH();
}

void tanh_forward(const float* x, float* y, std::int64_t n) {
  if (n == 0) return;
  tanh_forward_kernel<<<blocks_for(n), kThreads>>>(x, y, n);
  EPOCH_CUDA_CHECK_LAUNCH();
}
void tanh_backward(const float* dy, const float* y, float* dx, std::int64_t n) {
  if (n == 0) return;
  tanh_backward_kernel<<<blocks_for(n), kThreads>>>(dy, y, dx, n);
  EPOCH_CUDA_CHECK_LAUNCH();
}

void hard_sigmoid_forward(const float* x, float* y, std::int64_t n, float slope, float offset) {
  if (n == 0) return;
  hard_sigmoid_forward_kernel<<<blocks_for(n), kThreads>>>(x, y, n, slope, offset);
  EPOCH_CUDA_CHECK_LAUNCH();
}
void hard_sigmoid_backward(const float* dy, const float* x, float* dx, std::int64_t n,
                           float slope, float offset) {
  if (n == 0) return;
  hard_sigmoid_backward_kernel<<<blocks_for(n), kThreads>>>(dy, x, dx, n, slope, offset);
  EPOCH_CUDA_CHECK_LAUNCH();
}

void clip_forward(const float* x, float* y, std::int64_t n, float lo, float hi) {
  if (n == 0) return;
  clip_forward_kernel<<<blocks_for(n), kThreads>>>(x, y, n, lo, hi);
  EPOCH_CUDA_CHECK_LAUNCH();
}
void clip_backward(const float* dy, const float* x, float* dx, std::int64_t n, float lo,
                   float hi) {
  if (n == 0) return;
  clip_backward_kernel<<<blocks_for(n), kThreads>>>(dy, x, dx, n, lo, hi);
  EPOCH_CUDA_CHECK_LAUNCH();
}

void softmax_forward(const float* x, float* y, std::int64_t N, std::int64_t K) {
  if (N == 0 || K == 0) return;
  softmax_kernel<<<blocks_for(N * 32), kThreads>>>(x, y, N, K);
  EPOCH_CUDA_CHECK_LAUNCH();
}

}  // namespace epoch::cuda
