// CUDA elementwise kernels: grid-stride loops; broadcasting through per-dimension strides.
#include "cuda/check_cuda.h"
#include "cuda/elementwise_cuda.h"

namespace epoch::cuda {
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

void sum(const float* x, std::int64_t n, float* out) {
  sum_kernel<<<1, 256>>>(x, n, out);
  EPOCH_CUDA_CHECK_LAUNCH();
}

}  // namespace epoch::cuda
