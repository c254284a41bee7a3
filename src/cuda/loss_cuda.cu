// CUDA loss kernels (see loss_cuda.h): the same formulas as the CPU reference, per-element
// terms summed in double by the fixed-order reductions of reduce.cuh.
#include "cuda/check_cuda.h"
#include "cuda/device_buffer.h"
#include "cuda/loss_cuda.h"
#include "cuda/reduce.cuh"
#include "cuda/row_softmax.cuh"

namespace epoch::cuda {
namespace {

constexpr int kThreads = 256;

struct BceTerm {
  const float* x;
  const float* t;
  __device__ double operator()(long long i) const {
    const double xi = x[i];
    return fmax(xi, 0.0) - xi * t[i] + log1p(exp(-fabs(xi)));
  }
};

struct SquaredTerm {
  const float* x;
  const float* t;
  __device__ double operator()(long long i) const {
    const double d = static_cast<double>(x[i]) - t[i];
    return d * d;
  }
};

struct AbsTerm {
  const float* x;
  const float* t;
  __device__ double operator()(long long i) const {
    return fabs(static_cast<double>(x[i]) - t[i]);
  }
};

// *loss = mean of term(i) over [0, n): per-block partials, then one block sums them in order.
template <typename Term>
void mean_of(Term term, float* loss, long long n) {
  const unsigned int blocks = reduce_blocks(n);
  DeviceBuffer partial(blocks * sizeof(double));
  partial_sum_kernel<Term><<<blocks, kReduceThreads>>>(term, n, partial.as<double>());
  EPOCH_CUDA_CHECK_LAUNCH();
  finish_mean_kernel<<<1, kReduceThreads>>>(partial.as<double>(), blocks,
                                            static_cast<double>(n), loss);
  EPOCH_CUDA_CHECK_LAUNCH();
}

// One warp per row (grid-stride over rows): probs and the row's loss, in double.
__global__ void softmax_xent_rows_kernel(const float* logits, const int* labels, float* probs,
                                         double* row_loss, long long N, long long K) {
  const long long warps = static_cast<long long>(kThreads / 32) * gridDim.x;
  const int lane = static_cast<int>(threadIdx.x % 32);
  for (long long row = (blockIdx.x * static_cast<long long>(kThreads) + threadIdx.x) / 32;
       row < N; row += warps) {
    const float* x = logits + row * K;  // (K)
    float m = 0.0f;
    const double log_s = row_softmax(x, probs + row * K, K, lane, &m);
    if (lane == 0) row_loss[row] = log_s - (static_cast<double>(x[labels[row]]) - m);
  }
}

__global__ void softmax_xent_backward_kernel(const float* probs, const int* labels,
                                             float* dlogits, long long N, long long K,
                                             float scale) {
  const long long n = N * K;
  for (long long i = blockIdx.x * static_cast<long long>(kThreads) + threadIdx.x; i < n;
       i += static_cast<long long>(kThreads) * gridDim.x) {
    const long long row = i / K, k = i - row * K;
    dlogits[i] = k == labels[row] ? (probs[i] - 1.0f) * scale : probs[i] * scale;
  }
}

__global__ void bce_backward_kernel(const float* x, const float* t, float* dx, long long n,
                                    float scale) {
  for (long long i = blockIdx.x * static_cast<long long>(kThreads) + threadIdx.x; i < n;
       i += static_cast<long long>(kThreads) * gridDim.x) {
    const float e = expf(-fabsf(x[i]));
    const float r = 1.0f / (1.0f + e);
    const float s = x[i] >= 0.0f ? r : e * r;
    dx[i] = (s - t[i]) * scale;
  }
}

// scale already holds 2 * dloss / n.
__global__ void mse_backward_kernel(const float* x, const float* t, float* dx, long long n,
                                    float scale) {
  for (long long i = blockIdx.x * static_cast<long long>(kThreads) + threadIdx.x; i < n;
       i += static_cast<long long>(kThreads) * gridDim.x)
    dx[i] = (x[i] - t[i]) * scale;
}

__global__ void l1_backward_kernel(const float* x, const float* t, float* dx, long long n,
                                   float scale) {
  for (long long i = blockIdx.x * static_cast<long long>(kThreads) + threadIdx.x; i < n;
       i += static_cast<long long>(kThreads) * gridDim.x) {
    const float d = x[i] - t[i];
    dx[i] = d > 0.0f ? scale : (d < 0.0f ? -scale : 0.0f);
  }
}

}  // namespace

void softmax_cross_entropy_forward(const float* logits, const std::int32_t* labels, float* probs,
                                   float* loss, std::int64_t N, std::int64_t K) {
  if (N == 0 || K == 0) EPOCH_THROW(InvalidArgument, "softmax_cross_entropy: empty logits");
  DeviceBuffer row_loss(static_cast<std::size_t>(N) * sizeof(double));
  softmax_xent_rows_kernel<<<blocks_for(N * 32), kThreads>>>(logits, labels, probs,
                                                             row_loss.as<double>(), N, K);
  EPOCH_CUDA_CHECK_LAUNCH();
  finish_mean_kernel<<<1, kReduceThreads>>>(row_loss.as<double>(), N, static_cast<double>(N),
                                            loss);
  EPOCH_CUDA_CHECK_LAUNCH();
}

void softmax_cross_entropy_backward(float dloss, const float* probs, const std::int32_t* labels,
                                    float* dlogits, std::int64_t N, std::int64_t K) {
  if (N == 0 || K == 0) return;
  const float scale = dloss / static_cast<float>(N);
  softmax_xent_backward_kernel<<<blocks_for(N * K), kThreads>>>(probs, labels, dlogits, N, K,
                                                                scale);
  EPOCH_CUDA_CHECK_LAUNCH();
}

void bce_with_logits_forward(const float* x, const float* t, float* loss, std::int64_t n) {
  if (n == 0) EPOCH_THROW(InvalidArgument, "bce_with_logits: the mean of no elements");
  mean_of(BceTerm{x, t}, loss, n);
}

void bce_with_logits_backward(float dloss, const float* x, const float* t, float* dx,
                              std::int64_t n) {
  if (n == 0) return;
  bce_backward_kernel<<<blocks_for(n), kThreads>>>(x, t, dx, n, dloss / static_cast<float>(n));
  EPOCH_CUDA_CHECK_LAUNCH();
}

void mse_forward(const float* x, const float* t, float* loss, std::int64_t n) {
  if (n == 0) EPOCH_THROW(InvalidArgument, "mse: the mean of no elements");
  mean_of(SquaredTerm{x, t}, loss, n);
}

void mse_backward(float dloss, const float* x, const float* t, float* dx, std::int64_t n) {
  if (n == 0) return;
  mse_backward_kernel<<<blocks_for(n), kThreads>>>(x, t, dx, n,
                                                   2.0f * dloss / static_cast<float>(n));
  EPOCH_CUDA_CHECK_LAUNCH();
}

void l1_forward(const float* x, const float* t, float* loss, std::int64_t n) {
  if (n == 0) EPOCH_THROW(InvalidArgument, "l1: the mean of no elements");
  mean_of(AbsTerm{x, t}, loss, n);
}

void l1_backward(float dloss, const float* x, const float* t, float* dx, std::int64_t n) {
  if (n == 0) return;
  l1_backward_kernel<<<blocks_for(n), kThreads>>>(x, t, dx, n, dloss / static_cast<float>(n));
  EPOCH_CUDA_CHECK_LAUNCH();
}

}  // namespace epoch::cuda
