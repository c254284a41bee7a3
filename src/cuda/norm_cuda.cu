// CUDA normalization kernels (see norm_cuda.h). Batch norm splits each channel's N*HW values
// into chunks fixed by N*HW alone; a block sums a chunk in double (reduce.cuh's fixed tree),
// and one thread per channel adds the chunk sums in order, so results never vary from run
// to run. LRN: one thread per element, window sums in the CPU's channel order.
#include "cuda/check_cuda.h"
#include "cuda/device_buffer.h"
#include "cuda/norm_cuda.h"
#include "cuda/reduce.cuh"

namespace epoch::cuda {
namespace {

constexpr int kThreads = 256;

#define EPOCH_GRID_STRIDE(i, n)                                                   \
  for (long long i = blockIdx.x * static_cast<long long>(kThreads) + threadIdx.x; \
       i < (n); i += static_cast<long long>(kThreads) * gridDim.x)

// Per-channel chunking of the M = N*HW values of a channel: S chunks of `chunk` values.
struct Chunks {
  unsigned int S;
  long long chunk;
};
Chunks chunks_for(long long M) {
  constexpr long long kTarget = 4096, kMaxChunks = 64;
  long long S = (M + kTarget - 1) / kTarget;
  S = S < 1 ? 1 : (S > kMaxChunks ? kMaxChunks : S);
  return {static_cast<unsigned int>(S), (M + S - 1) / S};
}

// Offset in (N, C, HW) of value m (= n*HW + i) of channel c.
__device__ inline long long channel_offset(long long m, long long c, long long C, long long HW) {
  const long long n = m / HW;
  return (n * C + c) * HW + (m - n * HW);
}

// Block (c, s): partial[c*S + s] = sum over chunk s of channel c of x, or of (x - center[c])^2
// when center is given. Thread t takes values begin + t, begin + t + 256, ...
__global__ void bn_sum_kernel(const float* x, const double* center, double* partial, long long C,
                              long long HW, long long M, long long chunk) {
  const long long c = blockIdx.x, s = blockIdx.y;
  const long long begin = s * chunk, end = begin + chunk < M ? begin + chunk : M;
  double acc = 0.0;
  if (center != nullptr) {
    const double mu = center[c];
    for (long long m = begin + threadIdx.x; m < end; m += kReduceThreads) {
      const double d = x[channel_offset(m, c, C, HW)] - mu;
      acc += d * d;
    }
  } else {
    for (long long m = begin + threadIdx.x; m < end; m += kReduceThreads)
      acc += x[channel_offset(m, c, C, HW)];
  }
  const double total = block_sum(acc);
  if (threadIdx.x == 0) partial[c * gridDim.y + s] = total;
}

// mean[c] = (sum of partial[c*S, c*S + S) in order) / M.
__global__ void bn_mean_kernel(const double* partial, unsigned int S, long long C, long long M,
                               double* mean) {
  const long long c = blockIdx.x * static_cast<long long>(kThreads) + threadIdx.x;
  if (c >= C) return;
  double s = 0.0;
  for (unsigned int k = 0; k < S; ++k) s += partial[c * S + k];
  mean[c] = s / static_cast<double>(M);
}

// Per channel: the statistics used (batch ones, updating the running ones, when var_partial
// is given; else the running ones), saved, and folded into y = x * scale + shift.
__global__ void bn_stats_kernel(const double* var_partial, unsigned int S,
                                const double* batch_mean, const float* gamma, const float* beta,
                                float* running_mean, float* running_var, float* save_mean,
                                float* save_invstd, float* scale, float* shift, long long C,
                                long long M, float momentum, float eps,
                                bool unbiased_running_var) {
  const long long c = blockIdx.x * static_cast<long long>(kThreads) + threadIdx.x;
  if (c >= C) return;
  double mean, var;
  if (var_partial != nullptr) {
    mean = batch_mean[c];
    var = 0.0;
    for (unsigned int k = 0; k < S; ++k) var += var_partial[c * S + k];
    var /= static_cast<double>(M);  // biased: used to normalize
    const double stored =
        unbiased_running_var ? var * static_cast<double>(M) / static_cast<double>(M - 1) : var;
    running_mean[c] = static_cast<float>((1.0 - momentum) * running_mean[c] + momentum * mean);
    running_var[c] = static_cast<float>((1.0 - momentum) * running_var[c] + momentum * stored);
  } else {
    mean = running_mean[c];
    var = running_var[c];
  }
  const double invstd = 1.0 / sqrt(var + static_cast<double>(eps));
  save_mean[c] = static_cast<float>(mean);
  save_invstd[c] = static_cast<float>(invstd);
  scale[c] = static_cast<float>(invstd * gamma[c]);
  shift[c] = static_cast<float>(beta[c] - mean * invstd * gamma[c]);
}

__global__ void bn_apply_kernel(const float* x, const float* scale, const float* shift, float* y,
                                long long total, long long C, long long HW) {
  EPOCH_GRID_STRIDE(j, total) {
    const long long c = (j / HW) % C;
    y[j] = x[j] * scale[c] + shift[c];
  }
}

// Block (c, s): sums of dy and of dy * xhat over chunk s of channel c.
__global__ void bn_backward_sum_kernel(const float* dy, const float* x, const float* save_mean,
                                       const float* save_invstd, double* partial_dy,
                                       double* partial_dy_xhat, long long C, long long HW,
                                       long long M, long long chunk) {
  const long long c = blockIdx.x, s = blockIdx.y;
  const long long begin = s * chunk, end = begin + chunk < M ? begin + chunk : M;
  const double mean = save_mean[c], invstd = save_invstd[c];
  double sum_dy = 0.0, sum_dy_xhat = 0.0;
  for (long long m = begin + threadIdx.x; m < end; m += kReduceThreads) {
    const long long j = channel_offset(m, c, C, HW);
    sum_dy += dy[j];
    sum_dy_xhat += dy[j] * (x[j] - mean) * invstd;
  }
  const double total_dy = block_sum(sum_dy);
  const double total_dy_xhat = block_sum(sum_dy_xhat);
  if (threadIdx.x == 0) {
    partial_dy[c * gridDim.y + s] = total_dy;
    partial_dy_xhat[c * gridDim.y + s] = total_dy_xhat;
  }
}

// Per channel: dgamma, dbeta, and coef[3c..3c+2] = gamma*invstd, mean(dy), mean(dy*xhat)
// (the means 0 in eval, where the statistics are constants).
__global__ void bn_backward_finish_kernel(const double* partial_dy,
                                          const double* partial_dy_xhat, unsigned int S,
                                          const float* gamma, const float* save_invstd,
                                          float* dgamma, float* dbeta, double* coef, long long C,
                                          long long M, bool training) {
  const long long c = blockIdx.x * static_cast<long long>(kThreads) + threadIdx.x;
  if (c >= C) return;
  double sum_dy = 0.0, sum_dy_xhat = 0.0;
  for (unsigned int k = 0; k < S; ++k) {
    sum_dy += partial_dy[c * S + k];
    sum_dy_xhat += partial_dy_xhat[c * S + k];
  }
  dbeta[c] = static_cast<float>(sum_dy);
  dgamma[c] = static_cast<float>(sum_dy_xhat);
  const double invstd = save_invstd[c];
  coef[3 * c] = gamma[c] * invstd;
  coef[3 * c + 1] = training ? sum_dy / static_cast<double>(M) : 0.0;
  coef[3 * c + 2] = training ? sum_dy_xhat / static_cast<double>(M) : 0.0;
}

__global__ void bn_backward_dx_kernel(const float* dy, const float* x, const float* save_mean,
                                      const float* save_invstd, const double* coef, float* dx,
                                      long long total, long long C, long long HW) {
  EPOCH_GRID_STRIDE(j, total) {
    const long long c = (j / HW) % C;
    const double mean = save_mean[c], invstd = save_invstd[c];
    const double xhat = (x[j] - mean) * invstd;
    dx[j] = static_cast<float>(coef[3 * c] *
                               (dy[j] - coef[3 * c + 1] - xhat * coef[3 * c + 2]));
  }
}

// k + a * (sum of x^2 over channels [c0, c1]) at (n, ., i), summed in channel order.
__device__ inline float lrn_scale_at(const float* x, long long n, long long i, long long C,
                                     long long HW, long long c0, long long c1, float a, float k) {
  float acc = 0.0f;
  for (long long cc = c0; cc <= c1; ++cc) {
    const float v = x[(n * C + cc) * HW + i];
    acc += v * v;
  }
  return k + a * acc;
}

__global__ void lrn_forward_kernel(const float* x, float* y, long long total, long long C,
                                   long long HW, long long size, float a, float beta, float k) {
  EPOCH_GRID_STRIDE(j, total) {
    const long long i = j % HW, c = (j / HW) % C, n = j / (HW * C);
    const long long c0 = c - size / 2 > 0 ? c - size / 2 : 0;
    const long long c1 = c + (size - 1) / 2 < C - 1 ? c + (size - 1) / 2 : C - 1;
    y[j] = x[j] * powf(lrn_scale_at(x, n, i, C, HW, c0, c1, a, k), -beta);
  }
}

// s = the forward scale, t = dy * y / s, for every element.
__global__ void lrn_backward_prepare_kernel(const float* dy, const float* x, const float* y,
                                            float* s, float* t, long long total, long long C,
                                            long long HW, long long size, float a, float k) {
  EPOCH_GRID_STRIDE(j, total) {
    const long long i = j % HW, c = (j / HW) % C, n = j / (HW * C);
    const long long c0 = c - size / 2 > 0 ? c - size / 2 : 0;
    const long long c1 = c + (size - 1) / 2 < C - 1 ? c + (size - 1) / 2 : C - 1;
    const float sj = lrn_scale_at(x, n, i, C, HW, c0, c1, a, k);
    s[j] = sj;
    t[j] = dy[j] * y[j] / sj;
  }
}

// dx = dy s^-beta - coef x sum of t over the channels whose window holds c:
// [c - (size-1)/2, c + size/2].
__global__ void lrn_backward_kernel(const float* dy, const float* x, const float* s,
                                    const float* t, float* dx, long long total, long long C,
                                    long long HW, long long size, float beta, float coef) {
  EPOCH_GRID_STRIDE(j, total) {
    const long long i = j % HW, c = (j / HW) % C, n = j / (HW * C);
    const long long c0 = c - (size - 1) / 2 > 0 ? c - (size - 1) / 2 : 0;
    const long long c1 = c + size / 2 < C - 1 ? c + size / 2 : C - 1;
    float acc = 0.0f;
    for (long long cc = c0; cc <= c1; ++cc) acc += t[(n * C + cc) * HW + i];
    dx[j] = dy[j] * powf(s[j], -beta) - coef * x[j] * acc;
  }
}

#undef EPOCH_GRID_STRIDE

unsigned int blocks_per_channel_thread(long long C) {
  return static_cast<unsigned int>((C + kThreads - 1) / kThreads);
}

}  // namespace

void batch_norm_forward(const float* x, const float* gamma, const float* beta,
                        float* running_mean, float* running_var, float* y, float* save_mean,
                        float* save_invstd, std::int64_t N, std::int64_t C, std::int64_t HW,
                        bool training, float momentum, float eps, bool unbiased_running_var) {
  if (C == 0) return;
  const long long M = N * HW, total = N * C * HW;
  const Chunks ch = chunks_for(M);
  DeviceBuffer doubles(static_cast<std::size_t>(C) * (ch.S + 1) * sizeof(double));
  DeviceBuffer floats(static_cast<std::size_t>(C) * 2 * sizeof(float));
  double* partial = doubles.as<double>();  // (C, S)
  double* mean = partial + C * ch.S;       // (C)
  float* scale = floats.as<float>();       // (C)
  float* shift = scale + C;                // (C)
  const unsigned int cb = blocks_per_channel_thread(C);
  if (training) {
    const dim3 grid(static_cast<unsigned int>(C), ch.S);
    bn_sum_kernel<<<grid, kReduceThreads>>>(x, nullptr, partial, C, HW, M, ch.chunk);
    EPOCH_CUDA_CHECK_LAUNCH();
    bn_mean_kernel<<<cb, kThreads>>>(partial, ch.S, C, M, mean);
    EPOCH_CUDA_CHECK_LAUNCH();
    bn_sum_kernel<<<grid, kReduceThreads>>>(x, mean, partial, C, HW, M, ch.chunk);
    EPOCH_CUDA_CHECK_LAUNCH();
  }
  bn_stats_kernel<<<cb, kThreads>>>(training ? partial : nullptr, ch.S, mean, gamma, beta,
                                    running_mean, running_var, save_mean, save_invstd, scale,
                                    shift, C, M, momentum, eps, unbiased_running_var);
  EPOCH_CUDA_CHECK_LAUNCH();
  if (total == 0) return;
  bn_apply_kernel<<<blocks_for(total), kThreads>>>(x, scale, shift, y, total, C, HW);
  EPOCH_CUDA_CHECK_LAUNCH();
}

void batch_norm_backward(const float* dy, const float* x, const float* gamma,
                         const float* save_mean, const float* save_invstd, float* dx,
                         float* dgamma, float* dbeta, std::int64_t N, std::int64_t C,
                         std::int64_t HW, bool training) {
  if (C == 0) return;
  const long long M = N * HW, total = N * C * HW;
  const Chunks ch = chunks_for(M);
  DeviceBuffer doubles(static_cast<std::size_t>(C) * (2 * ch.S + 3) * sizeof(double));
  double* partial_dy = doubles.as<double>();       // (C, S)
  double* partial_dy_xhat = partial_dy + C * ch.S;  // (C, S)
  double* coef = partial_dy_xhat + C * ch.S;        // (C, 3)
  const dim3 grid(static_cast<unsigned int>(C), ch.S);
  bn_backward_sum_kernel<<<grid, kReduceThreads>>>(dy, x, save_mean, save_invstd, partial_dy,
                                                   partial_dy_xhat, C, HW, M, ch.chunk);
  EPOCH_CUDA_CHECK_LAUNCH();
  bn_backward_finish_kernel<<<blocks_per_channel_thread(C), kThreads>>>(
      partial_dy, partial_dy_xhat, ch.S, gamma, save_invstd, dgamma, dbeta, coef, C, M,
      training);
  EPOCH_CUDA_CHECK_LAUNCH();
  if (total == 0) return;
  bn_backward_dx_kernel<<<blocks_for(total), kThreads>>>(dy, x, save_mean, save_invstd, coef, dx,
                                                         total, C, HW);
  EPOCH_CUDA_CHECK_LAUNCH();
}

void lrn_forward(const float* x, float* y, std::int64_t N, std::int64_t C, std::int64_t HW,
                 std::int64_t size, float alpha, float beta, float k) {
  const long long total = N * C * HW;
  if (total == 0) return;
  const float a = alpha / static_cast<float>(size);
  lrn_forward_kernel<<<blocks_for(total), kThreads>>>(x, y, total, C, HW, size, a, beta, k);
  EPOCH_CUDA_CHECK_LAUNCH();
}

void lrn_backward(const float* dy, const float* x, const float* y, float* dx, std::int64_t N,
                  std::int64_t C, std::int64_t HW, std::int64_t size, float alpha, float beta,
                  float k) {
  const long long total = N * C * HW;
  if (total == 0) return;
  const float a = alpha / static_cast<float>(size);
  const float coef = 2.0f * alpha * beta / static_cast<float>(size);
  DeviceBuffer scratch(static_cast<std::size_t>(total) * 2 * sizeof(float));
  float* s = scratch.as<float>();  // (N, C, HW)
  float* t = s + total;            // (N, C, HW)
  lrn_backward_prepare_kernel<<<blocks_for(total), kThreads>>>(dy, x, y, s, t, total, C, HW,
                                                               size, a, k);
  EPOCH_CUDA_CHECK_LAUNCH();
  lrn_backward_kernel<<<blocks_for(total), kThreads>>>(dy, x, s, t, dx, total, C, HW, size, beta,
                                                       coef);
  EPOCH_CUDA_CHECK_LAUNCH();
}

}  // namespace epoch::cuda
