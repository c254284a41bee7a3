// Dense-layer kernels on CUDA: cuBLAS SGEMM for the products (row-major through the usual
// operand swap: C^T = op(B)^T op(A)^T in column-major terms), small kernels for the bias.
#include <climits>

#include "cuda/check_cuda.h"
#include "cuda/cublas_context.h"
#include "cuda/linear_cuda.h"
#include "cuda/reduce.cuh"

namespace epoch::cuda {
namespace {

constexpr int kThreads = 256;

int as_int(std::int64_t v, const char* what) {
  if (v < 0 || v > INT_MAX)
    EPOCH_THROW(InvalidArgument, "matmul: ", what, " = ", v, " does not fit cuBLAS's int");
  return static_cast<int>(v);
}

// c = op(a) op(b) + beta * c, all row-major (see gemm in linear_cuda.h).
void sgemm(bool transpose_a, bool transpose_b, std::int64_t M, std::int64_t N, std::int64_t K,
           const float* a, const float* b, float* c, float beta) {
  if (M == 0 || N == 0) return;
  if (K == 0) {
    if (beta == 0.0f)
      EPOCH_CUDA_CHECK(cudaMemset(c, 0, static_cast<std::size_t>(M * N) * sizeof(float)));
    return;
  }
  const int m = as_int(M, "M"), n = as_int(N, "N"), k = as_int(K, "K");
  const float alpha = 1.0f;
  // Row-major X (r, s) is column-major X^T (s, r) with leading dimension s. So compute
  // C^T (n, m) = op(B)^T (n, k) * op(A)^T (k, m) in column-major terms.
  const cublasOperation_t op_b = transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int ld_b = transpose_b ? k : n;  // row length of b as stored
  const int ld_a = transpose_a ? m : k;  // row length of a as stored
  EPOCH_CUBLAS_CHECK(cublasSgemm(cublas_handle(), op_b, op_a, n, m, k, &alpha, b, ld_b, a, ld_a,
                                 &beta, c, n));
}

// y (rows, C) = b (C) in every row.
__global__ void fill_rows_kernel(const float* b, float* y, long long rows, long long C) {
  const long long n = rows * C;
  for (long long i = blockIdx.x * static_cast<long long>(kThreads) + threadIdx.x; i < n;
       i += static_cast<long long>(kThreads) * gridDim.x)
    y[i] = b[i % C];
}

// y (N, C, inner) = x + b[c].
__global__ void bias_add_kernel(const float* x, const float* b, float* y, long long total,
                                long long C, long long inner) {
  for (long long i = blockIdx.x * static_cast<long long>(kThreads) + threadIdx.x; i < total;
       i += static_cast<long long>(kThreads) * gridDim.x)
    y[i] = x[i] + b[(i / inner) % C];
}

// One block per channel c: thread t sums elements j = t, t + 256, ... of the channel's
// N * inner values in order, then block_sum's fixed tree; so the result never varies.
__global__ void channel_sum_kernel(const float* dy, float* db, long long N, long long C,
                                   long long inner) {
  const long long c = blockIdx.x;
  const long long count = N * inner;
  double s = 0.0;
  for (long long j = threadIdx.x; j < count; j += kReduceThreads) {
    const long long n = j / inner, i = j - n * inner;
    s += dy[(n * C + c) * inner + i];
  }
  const double total = block_sum(s);
  if (threadIdx.x == 0) db[c] = static_cast<float>(total);
}

}  // namespace

void gemm(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K,
          const float* a, const float* b, float* c, bool accumulate) {
  sgemm(trans_a, trans_b, M, N, K, a, b, c, accumulate ? 1.0f : 0.0f);
}

void linear_forward(const float* x, const float* w, const float* b, float* y, std::int64_t N,
                    std::int64_t IN, std::int64_t OUT) {
  if (N == 0 || OUT == 0) return;
  if (b != nullptr) {
    fill_rows_kernel<<<blocks_for(N * OUT), kThreads>>>(b, y, N, OUT);
    EPOCH_CUDA_CHECK_LAUNCH();
  }
  // y (N, OUT) = x (N, IN) w^T (IN, OUT) [+ y holding the bias rows].
  sgemm(false, true, N, OUT, IN, x, w, y, b != nullptr ? 1.0f : 0.0f);
}

void linear_backward(const float* dy, const float* x, const float* w, float* dx, float* dw,
                     float* db, std::int64_t N, std::int64_t IN, std::int64_t OUT) {
  // dx (N, IN) = dy (N, OUT) w (OUT, IN).
  if (dx != nullptr) sgemm(false, false, N, IN, OUT, dy, w, dx, 0.0f);
  // dw (OUT, IN) = dy^T (OUT, N) x (N, IN).
  if (dw != nullptr) sgemm(true, false, OUT, IN, N, dy, x, dw, 0.0f);
  if (db != nullptr) bias_add_backward(dy, db, N, OUT, 1);
}

void bias_add_forward(const float* x, const float* b, float* y, std::int64_t outer,
                      std::int64_t C, std::int64_t inner) {
  const long long total = outer * C * inner;
  if (total == 0) return;
  bias_add_kernel<<<blocks_for(total), kThreads>>>(x, b, y, total, C, inner);
  EPOCH_CUDA_CHECK_LAUNCH();
}

void bias_add_backward(const float* dy, float* db, std::int64_t outer, std::int64_t C,
                       std::int64_t inner) {
  if (C == 0) return;
  if (C > 2147483647LL) EPOCH_THROW(InvalidArgument, "bias_add_backward: too many channels");
  channel_sum_kernel<<<static_cast<unsigned int>(C), kReduceThreads>>>(dy, db, outer, C, inner);
  EPOCH_CUDA_CHECK_LAUNCH();
}

}  // namespace epoch::cuda
