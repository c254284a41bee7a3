// CUDA elementwise kernels: grid-stride loops; broadcasting through per-dimension strides.
#include "cuda/check_cuda.h"
#include "cuda/elementwise_cuda.h"
#include "cuda/reduce.cuh"

namespace epoch::cuda {

using kernels::BinaryOp;

namespace {

constexpr int kMaxDims = 8;

struct StridedShape {
  long long shape[kMaxDims];
  long long a_strides[kMaxDims];
  long long b_strides[kMaxDims];
  int ndim;
};

template <BinaryOp Op>
__device__ inline float apply(float a, float b) {
  if constexpr (Op == BinaryOp::add) return a + b;
  if constexpr (Op == BinaryOp::sub) return a - b;
  if constexpr (Op == BinaryOp::mul) return a * b;
  return a / b;
}

template <BinaryOp Op>
__global__ void same_shape_kernel(const float* a, const float* b, float* y, long long n) {
  for (long long i = blockIdx.x * 256LL + threadIdx.x; i < n; i += 256LL * gridDim.x)
    y[i] = apply<Op>(a[i], b[i]);
}

template <BinaryOp Op>
__global__ void strided_kernel(const float* a, const float* b, float* y, long long n,
                               StridedShape s) {
  for (long long i = blockIdx.x * 256LL + threadIdx.x; i < n; i += 256LL * gridDim.x) {
    long long rem = i, aoff = 0, boff = 0;
    for (int d = s.ndim - 1; d >= 0; --d) {
      const long long idx = rem % s.shape[d];
      rem /= s.shape[d];
      aoff += idx * s.a_strides[d];
      boff += idx * s.b_strides[d];
    }
    y[i] = apply<Op>(a[aoff], b[boff]);
  }
}

__global__ void affine_kernel(const float* x, float* y, long long n, float s, float t) {
  for (long long i = blockIdx.x * 256LL + threadIdx.x; i < n; i += 256LL * gridDim.x)
    y[i] = x[i] * s + t;
}

__global__ void pow_kernel(const float* x, float* y, long long n, float p) {
  for (long long i = blockIdx.x * 256LL + threadIdx.x; i < n; i += 256LL * gridDim.x)
    y[i] = powf(x[i], p);
}

__global__ void axpy_kernel(float* y, const float* x, long long n, float alpha) {
  for (long long i = blockIdx.x * 256LL + threadIdx.x; i < n; i += 256LL * gridDim.x)
    y[i] += alpha * x[i];
}

__global__ void fill_kernel(float* y, long long n, float value) {
  for (long long i = blockIdx.x * 256LL + threadIdx.x; i < n; i += 256LL * gridDim.x) y[i] = value;
}

// One block of 256 threads; each thread sums a fixed strided subset, then a fixed tree.
__global__ void sum_kernel(const float* x, long long n, float* out) {
  __shared__ double partial[256];
  double s = 0.0;
  for (long long i = threadIdx.x; i < n; i += 256) s += x[i];
  partial[threadIdx.x] = s;
  __syncthreads();
  for (int stride = 128; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = static_cast<float>(partial[0]);
}

// sum_to's view of x: dimensions kept in the output (with their x and out strides) and the
// dimensions summed over (size > 1, out stride 0), both in x's order.
struct SumToDims {
  long long kept_size[kMaxDims], kept_x[kMaxDims], kept_out[kMaxDims];
  long long red_size[kMaxDims], red_x[kMaxDims];
  int nkept, nred;
};

// Output element o (row-major over the kept dimensions): its x offset and its out offset.
__device__ inline void sum_to_locate(const SumToDims& s, long long o, long long* x_off,
                                     long long* out_off) {
  long long xo = 0, oo = 0;
  for (int d = s.nkept - 1; d >= 0; --d) {
    const long long idx = o % s.kept_size[d];
    o /= s.kept_size[d];
    xo += idx * s.kept_x[d];
    oo += idx * s.kept_out[d];
  }
  *x_off = xo;
  *out_off = oo;
}

// One thread per output: sums its R inputs in x's index order (the CPU's order), in double.
__global__ void sum_to_serial_kernel(const float* x, float* out, long long out_numel, long long R,
                                     SumToDims s) {
  for (long long o = blockIdx.x * 256LL + threadIdx.x; o < out_numel; o += 256LL * gridDim.x) {
    long long base, oo;
    sum_to_locate(s, o, &base, &oo);
    long long idx[kMaxDims] = {};
    long long off = base;
    double acc = 0.0;
    for (long long r = 0; r < R; ++r) {
      acc += x[off];
      for (int d = s.nred - 1; d >= 0; --d) {  // odometer over the summed dimensions
        if (++idx[d] < s.red_size[d]) {
          off += s.red_x[d];
          break;
        }
        off -= (s.red_size[d] - 1) * s.red_x[d];
        idx[d] = 0;
      }
    }
    out[oo] = static_cast<float>(acc);
  }
}

// One block per output: thread t sums inputs r = t, t + 256, ... in double, then
// block_sum's fixed tree.
__global__ void sum_to_block_kernel(const float* x, float* out, long long out_numel, long long R,
                                    SumToDims s) {
  for (long long o = blockIdx.x; o < out_numel; o += gridDim.x) {
    long long base, oo;
    sum_to_locate(s, o, &base, &oo);
    double acc = 0.0;
    for (long long r = threadIdx.x; r < R; r += kReduceThreads) {
      long long rem = r, off = base;
      for (int d = s.nred - 1; d >= 0; --d) {
        off += (rem % s.red_size[d]) * s.red_x[d];
        rem /= s.red_size[d];
      }
      acc += x[off];
    }
    const double total = block_sum(acc);
    if (threadIdx.x == 0) out[oo] = static_cast<float>(total);
  }
}

template <BinaryOp Op>
void launch_same(const float* a, const float* b, float* y, long long n) {
  same_shape_kernel<Op><<<blocks_for(n), 256>>>(a, b, y, n);
}
template <BinaryOp Op>
void launch_strided(const float* a, const float* b, float* y, long long n, const StridedShape& s) {
  strided_kernel<Op><<<blocks_for(n), 256>>>(a, b, y, n, s);
}

}  // namespace

void binary_same_shape(BinaryOp op, const float* a, const float* b, float* y, std::int64_t n) {
  if (n == 0) return;
  switch (op) {
    case BinaryOp::add: launch_same<BinaryOp::add>(a, b, y, n); break;
    case BinaryOp::sub: launch_same<BinaryOp::sub>(a, b, y, n); break;
    case BinaryOp::mul: launch_same<BinaryOp::mul>(a, b, y, n); break;
    case BinaryOp::div: launch_same<BinaryOp::div>(a, b, y, n); break;
  }
  EPOCH_CUDA_CHECK_LAUNCH();
}

void binary_forward(BinaryOp op, const float* a, const std::int64_t* a_strides, const float* b,
                    const std::int64_t* b_strides, float* y, const std::int64_t* shape, int ndim) {
  if (ndim > kMaxDims) EPOCH_THROW(InvalidArgument, "CUDA broadcasting supports at most 8 dims");
  StridedShape s{};
  s.ndim = ndim;
  long long n = 1;
  for (int d = 0; d < ndim; ++d) {
    s.shape[d] = shape[d];
    s.a_strides[d] = a_strides[d];
    s.b_strides[d] = b_strides[d];
    n *= shape[d];
  }
  if (n == 0) return;
  switch (op) {
    case BinaryOp::add: launch_strided<BinaryOp::add>(a, b, y, n, s); break;
    case BinaryOp::sub: launch_strided<BinaryOp::sub>(a, b, y, n, s); break;
    case BinaryOp::mul: launch_strided<BinaryOp::mul>(a, b, y, n, s); break;
    case BinaryOp::div: launch_strided<BinaryOp::div>(a, b, y, n, s); break;
  }
  EPOCH_CUDA_CHECK_LAUNCH();
}

void affine(const float* x, float* y, std::int64_t n, float s, float t) {
  if (n == 0) return;
  affine_kernel<<<blocks_for(n), 256>>>(x, y, n, s, t);
  EPOCH_CUDA_CHECK_LAUNCH();
}

void pow_scalar(const float* x, float* y, std::int64_t n, float p) {
  if (n == 0) return;
  pow_kernel<<<blocks_for(n), 256>>>(x, y, n, p);
  EPOCH_CUDA_CHECK_LAUNCH();
}

void axpy(float* y, const float* x, std::int64_t n, float alpha) {
  if (n == 0) return;
  axpy_kernel<<<blocks_for(n), 256>>>(y, x, n, alpha);
  EPOCH_CUDA_CHECK_LAUNCH();
}

void fill(float* y, std::int64_t n, float value) {
  if (n == 0) return;
  fill_kernel<<<blocks_for(n), 256>>>(y, n, value);
  EPOCH_CUDA_CHECK_LAUNCH();
}

void sum_to(const float* x, const std::int64_t* shape, int ndim, const std::int64_t* out_strides,
            float* out, std::int64_t out_numel) {
  if (ndim > kMaxDims) EPOCH_THROW(InvalidArgument, "CUDA sum_to supports at most 8 dims");
  if (out_numel == 0) return;
  SumToDims s{};
  long long x_stride = 1, R = 1;
  long long x_strides[kMaxDims] = {};
  for (int d = ndim - 1; d >= 0; --d) {
    x_strides[d] = x_stride;
    x_stride *= shape[d];
  }
  for (int d = 0; d < ndim; ++d) {
    if (out_strides[d] != 0) {
      s.kept_size[s.nkept] = shape[d];
      s.kept_x[s.nkept] = x_strides[d];
      s.kept_out[s.nkept] = out_strides[d];
      ++s.nkept;
    } else if (shape[d] != 1) {
      s.red_size[s.nred] = shape[d];
      s.red_x[s.nred] = x_strides[d];
      ++s.nred;
      R *= shape[d];
    }
  }
  // The kernel (and so the summation order) depends on the shapes only: a block per output
  // when there are few outputs with many inputs each, else a thread per output.
  if (R >= 256 && out_numel < 65536) {
    sum_to_block_kernel<<<static_cast<unsigned int>(out_numel), kReduceThreads>>>(x, out,
                                                                                  out_numel, R, s);
  } else {
    sum_to_serial_kernel<<<blocks_for(out_numel), 256>>>(x, out, out_numel, R, s);
  }
  EPOCH_CUDA_CHECK_LAUNCH();
}

void sum(const float* x, std::int64_t n, float* out) {
  sum_kernel<<<1, 256>>>(x, n, out);
  EPOCH_CUDA_CHECK_LAUNCH();
}

}  // namespace epoch::cuda
