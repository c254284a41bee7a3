// CUDA pooling kernels (see pool_cuda.h): one thread per output (forward) or per input
// (backward), with the CPU reference's window clipping, tie rule and summation order.
#include "cuda/check_cuda.h"
#include "cuda/pool_cuda.h"

namespace epoch::cuda {

using kernels::Pool2dDims;

namespace {

constexpr int kThreads = 256;

// Plain-data copy of Pool2dDims for kernel arguments.
struct Dims {
  long long H, W, OH, OW, KH, KW, sh, sw, pt, pl;
};

Dims to_dims(const Pool2dDims& d) {
  return {d.H, d.W, d.OH, d.OW, d.KH, d.KW, d.stride_h, d.stride_w, d.pad_top, d.pad_left};
}

// The window of output (oh, ow) clipped to the real input: rows [h0, h1), columns [w0, w1).
struct Window {
  long long h0, h1, w0, w1;
};
__device__ inline Window window(const Dims& d, long long oh, long long ow) {
  const long long hs = oh * d.sh - d.pt, ws = ow * d.sw - d.pl;
  return {hs > 0 ? hs : 0, hs + d.KH < d.H ? hs + d.KH : d.H, ws > 0 ? ws : 0,
          ws + d.KW < d.W ? ws + d.KW : d.W};
}

__device__ inline float divisor(const Dims& d, const Window& win, bool include_pad) {
  return include_pad ? static_cast<float>(d.KH * d.KW)
                     : static_cast<float>((win.h1 - win.h0) * (win.w1 - win.w0));
}

// Outputs along one axis whose window (start o*stride - pad, length k) holds input i:
// o in [lo, hi], clamped to [0, out).
__device__ inline void covering(long long i, long long k, long long stride, long long pad,
                                long long out, long long* lo, long long* hi) {
  const long long a = i + pad - k + 1;  // o*stride >= a
  long long first = a <= 0 ? 0 : (a + stride - 1) / stride;
  long long last = (i + pad) / stride;  // o*stride <= i + pad
  if (last > out - 1) last = out - 1;
  *lo = first;
  *hi = last;
}

__global__ void max_forward_kernel(Dims d, long long total, const float* x, float* y,
                                   int* indices) {
  for (long long o = blockIdx.x * static_cast<long long>(kThreads) + threadIdx.x; o < total;
       o += static_cast<long long>(kThreads) * gridDim.x) {
    const long long ow = o % d.OW, oh = (o / d.OW) % d.OH, p = o / (d.OW * d.OH);
    const float* xp = x + p * d.H * d.W;
    const Window win = window(d, oh, ow);
    float best = -INFINITY;
    long long arg = win.h0 * d.W + win.w0;
    for (long long h = win.h0; h < win.h1; ++h)
      for (long long w = win.w0; w < win.w1; ++w) {
        const float v = xp[h * d.W + w];
        // Strictly greater keeps the first maximum; a NaN wins and stays (propagates).
        if (v > best || (isnan(v) && !isnan(best))) {
          best = v;
          arg = h * d.W + w;
        }
      }
    y[o] = best;
    indices[o] = static_cast<int>(arg);
  }
}

// dx[p, h, w] = sum, over outputs o of plane p in increasing order whose argmax is (h, w), of
// dy[o]: the same additions in the same order as the CPU's scatter.
__global__ void max_backward_kernel(Dims d, long long total, const float* dy, const int* indices,
                                    float* dx) {
  for (long long i = blockIdx.x * static_cast<long long>(kThreads) + threadIdx.x; i < total;
       i += static_cast<long long>(kThreads) * gridDim.x) {
    const long long w = i % d.W, h = (i / d.W) % d.H, p = i / (d.W * d.H);
    const long long base = p * d.OH * d.OW;
    const int target = static_cast<int>(h * d.W + w);
    long long oh0, oh1, ow0, ow1;
    covering(h, d.KH, d.sh, d.pt, d.OH, &oh0, &oh1);
    covering(w, d.KW, d.sw, d.pl, d.OW, &ow0, &ow1);
    float s = 0.0f;
    for (long long oh = oh0; oh <= oh1; ++oh)
      for (long long ow = ow0; ow <= ow1; ++ow) {
        const long long o = base + oh * d.OW + ow;
        if (indices[o] == target) s += dy[o];
      }
    dx[i] = s;
  }
}

__global__ void avg_forward_kernel(Dims d, bool include_pad, long long total, const float* x,
                                   float* y) {
  for (long long o = blockIdx.x * static_cast<long long>(kThreads) + threadIdx.x; o < total;
       o += static_cast<long long>(kThreads) * gridDim.x) {
    const long long ow = o % d.OW, oh = (o / d.OW) % d.OH, p = o / (d.OW * d.OH);
    const float* xp = x + p * d.H * d.W;
    const Window win = window(d, oh, ow);
    float s = 0.0f;
    for (long long h = win.h0; h < win.h1; ++h)
      for (long long w = win.w0; w < win.w1; ++w) s += xp[h * d.W + w];
    y[o] = s / divisor(d, win, include_pad);
  }
}

__global__ void avg_backward_kernel(Dims d, bool include_pad, long long total, const float* dy,
                                    float* dx) {
  for (long long i = blockIdx.x * static_cast<long long>(kThreads) + threadIdx.x; i < total;
       i += static_cast<long long>(kThreads) * gridDim.x) {
    const long long w = i % d.W, h = (i / d.W) % d.H, p = i / (d.W * d.H);
    const long long base = p * d.OH * d.OW;
    long long oh0, oh1, ow0, ow1;
    covering(h, d.KH, d.sh, d.pt, d.OH, &oh0, &oh1);
    covering(w, d.KW, d.sw, d.pl, d.OW, &ow0, &ow1);
    float s = 0.0f;
    for (long long oh = oh0; oh <= oh1; ++oh)
      for (long long ow = ow0; ow <= ow1; ++ow)
        s += dy[base + oh * d.OW + ow] / divisor(d, window(d, oh, ow), include_pad);
    dx[i] = s;
  }
}

// One warp per plane: lanes sum a fixed strided subset in double, then a fixed butterfly.
__global__ void global_avg_forward_kernel(const float* x, float* y, long long planes,
                                          long long HW) {
  const long long warps = static_cast<long long>(kThreads / 32) * gridDim.x;
  const int lane = static_cast<int>(threadIdx.x % 32);
  for (long long p = (blockIdx.x * static_cast<long long>(kThreads) + threadIdx.x) / 32;
       p < planes; p += warps) {
    double s = 0.0;
    for (long long i = lane; i < HW; i += 32) s += x[p * HW + i];
    for (int offset = 16; offset > 0; offset >>= 1)
      s += __shfl_xor_sync(0xffffffffu, s, offset);
    if (lane == 0) y[p] = static_cast<float>(s / static_cast<double>(HW));
  }
}

__global__ void global_avg_backward_kernel(const float* dy, float* dx, long long total,
                                           long long HW, float inv) {
  for (long long i = blockIdx.x * static_cast<long long>(kThreads) + threadIdx.x; i < total;
       i += static_cast<long long>(kThreads) * gridDim.x)
    dx[i] = dy[i / HW] * inv;
}

}  // namespace

void max_pool2d_forward(const Pool2dDims& d, const float* x, float* y, std::int32_t* indices) {
  const long long total = d.planes * d.OH * d.OW;
  if (total == 0) return;
  max_forward_kernel<<<blocks_for(total), kThreads>>>(to_dims(d), total, x, y, indices);
  EPOCH_CUDA_CHECK_LAUNCH();
}

void max_pool2d_backward(const Pool2dDims& d, const float* dy, const std::int32_t* indices,
                         float* dx) {
  const long long total = d.planes * d.H * d.W;
  if (total == 0) return;
  max_backward_kernel<<<blocks_for(total), kThreads>>>(to_dims(d), total, dy, indices, dx);
  EPOCH_CUDA_CHECK_LAUNCH();
}

void avg_pool2d_forward(const Pool2dDims& d, bool count_include_pad, const float* x, float* y) {
  const long long total = d.planes * d.OH * d.OW;
  if (total == 0) return;
  avg_forward_kernel<<<blocks_for(total), kThreads>>>(to_dims(d), count_include_pad, total, x,
                                                      y);
  EPOCH_CUDA_CHECK_LAUNCH();
}

void avg_pool2d_backward(const Pool2dDims& d, bool count_include_pad, const float* dy,
                         float* dx) {
  const long long total = d.planes * d.H * d.W;
  if (total == 0) return;
  avg_backward_kernel<<<blocks_for(total), kThreads>>>(to_dims(d), count_include_pad, total, dy,
                                                       dx);
  EPOCH_CUDA_CHECK_LAUNCH();
}

void global_avg_pool2d_forward(const float* x, float* y, std::int64_t planes, std::int64_t HW) {
  if (planes == 0) return;
  global_avg_forward_kernel<<<blocks_for(planes * 32), kThreads>>>(x, y, planes, HW);
  EPOCH_CUDA_CHECK_LAUNCH();
}

void global_avg_pool2d_backward(const float* dy, float* dx, std::int64_t planes,
                                std::int64_t HW) {
  const long long total = planes * HW;
  if (total == 0) return;
  global_avg_backward_kernel<<<blocks_for(total), kThreads>>>(dy, dx, total, HW,
                                                              1.0f / static_cast<float>(HW));
  EPOCH_CUDA_CHECK_LAUNCH();
}

}  // namespace epoch::cuda
