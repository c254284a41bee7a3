// CUDA shape kernels (see shape_ops_cuda.h): block copies through cudaMemcpy2D, upsampling
// with one thread per output (forward) or per input element (backward), no atomics.
#include "cuda/check_cuda.h"
#include "cuda/shape_ops_cuda.h"

namespace epoch::cuda {
namespace {

constexpr int kThreads = 256;

#define EPOCH_GRID_STRIDE(i, n)                                                   \
  for (long long i = blockIdx.x * static_cast<long long>(kThreads) + threadIdx.x; \
       i < (n); i += static_cast<long long>(kThreads) * gridDim.x)

// j indexes y (N*C, 2H, 2W); its source is x (N*C, H, W) at (row / 2, column / 2).
__global__ void upsample_forward_kernel(const float* x, float* y, long long total, long long H,
                                        long long W) {
  const long long OW = 2 * W, OH = 2 * H;
  EPOCH_GRID_STRIDE(j, total) {
    const long long ow = j % OW, oh = (j / OW) % OH, plane = j / (OW * OH);
    y[j] = x[(plane * H + oh / 2) * W + ow / 2];
  }
}

// j indexes dx (N*C, H, W).
__global__ void upsample_backward_kernel(const float* dy, float* dx, long long total,
                                         long long W) {
  const long long OW = 2 * W;
  EPOCH_GRID_STRIDE(j, total) {
    const long long w = j % W, r = j / W;  // r = plane * H + h
    const float* d0 = dy + 2 * r * OW;     // (2W) row 2h
    const float* d1 = d0 + OW;             // (2W) row 2h + 1
    dx[j] = (d0[2 * w] + d0[2 * w + 1]) + (d1[2 * w] + d1[2 * w + 1]);
  }
}

#undef EPOCH_GRID_STRIDE

}  // namespace

void copy_rows(void* dst, std::int64_t dst_stride, const void* src, std::int64_t src_stride,
               std::int64_t rows, std::int64_t row_bytes) {
  if (rows == 0 || row_bytes == 0) return;
  // Pitches above memPitch (2^31 - 1 bytes on current devices) are refused: copy row by row.
  constexpr std::int64_t kMaxPitch = 2147483647;
  if (dst_stride > kMaxPitch || src_stride > kMaxPitch) {
    for (std::int64_t r = 0; r < rows; ++r)
      EPOCH_CUDA_CHECK(cudaMemcpy(static_cast<char*>(dst) + r * dst_stride,
                                  static_cast<const char*>(src) + r * src_stride,
                                  static_cast<std::size_t>(row_bytes), cudaMemcpyDeviceToDevice));
    return;
  }
  EPOCH_CUDA_CHECK(cudaMemcpy2D(dst, static_cast<std::size_t>(dst_stride), src,
                                static_cast<std::size_t>(src_stride),
                                static_cast<std::size_t>(row_bytes),
                                static_cast<std::size_t>(rows), cudaMemcpyDeviceToDevice));
}

void upsample_nearest2x_forward(const float* x, float* y, std::int64_t N, std::int64_t C,
                                std::int64_t H, std::int64_t W) {
  const long long total = N * C * 4 * H * W;
  if (total == 0) return;
  upsample_forward_kernel<<<blocks_for(total), kThreads>>>(x, y, total, H, W);
  EPOCH_CUDA_CHECK_LAUNCH();
}

void upsample_nearest2x_backward(const float* dy, float* dx, std::int64_t N, std::int64_t C,
                                 std::int64_t H, std::int64_t W) {
  const long long total = N * C * H * W;
  if (total == 0) return;
  upsample_backward_kernel<<<blocks_for(total), kThreads>>>(dy, dx, total, W);
  EPOCH_CUDA_CHECK_LAUNCH();
}

}  // namespace epoch::cuda
