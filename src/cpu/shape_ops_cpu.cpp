// Reference kernels for block copies and 2x upsampling (see shape_ops_cpu.h); OpenMP over
// independent output rows.
#include "cpu/shape_ops_cpu.h"

#include <cstring>
// Compiled once per instruction-set level (kernels/isa_target.h): include it last.
#include "kernels/isa_target.h"

namespace epoch::cpu::EPOCH_ISA_NS {

void copy_rows(void* dst, std::int64_t dst_stride, const void* src, std::int64_t src_stride,
               std::int64_t rows, std::int64_t row_bytes) {
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  const auto nbytes = static_cast<std::size_t>(row_bytes);
#pragma omp parallel for schedule(static) if (rows * row_bytes > (1 << 20) && rows > 1)
  for (std::int64_t r = 0; r < rows; ++r)
    std::memcpy(d + r * dst_stride, s + r * src_stride, nbytes);
}

void upsample_nearest2x_forward(const float* x, float* y, std::int64_t N, std::int64_t C,
                                std::int64_t H, std::int64_t W) {
  const std::int64_t rows = N * C * H;  // input rows; each fills two output rows
  const std::int64_t OW = 2 * W;
#pragma omp parallel for schedule(static) if (rows * W > 32768)
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * W;  // (W)
    float* y0 = y + 2 * r * OW;   // (2W) output row 2h
    float* y1 = y0 + OW;          // (2W) output row 2h + 1
#pragma omp simd
    for (std::int64_t ow = 0; ow < OW; ++ow) y0[ow] = xr[ow / 2];
    std::memcpy(y1, y0, static_cast<std::size_t>(OW) * sizeof(float));
  }
}

void upsample_nearest2x_backward(const float* dy, float* dx, std::int64_t N, std::int64_t C,
                                 std::int64_t H, std::int64_t W) {
  const std::int64_t rows = N * C * H;
  const std::int64_t OW = 2 * W;
#pragma omp parallel for schedule(static) if (rows * W > 32768)
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* d0 = dy + 2 * r * OW;  // (2W) row 2h
    const float* d1 = d0 + OW;          // (2W) row 2h + 1
    float* g = dx + r * W;              // (W)
#pragma omp simd
    for (std::int64_t w = 0; w < W; ++w)
      g[w] = (d0[2 * w] + d0[2 * w + 1]) + (d1[2 * w] + d1[2 * w + 1]);
  }
}

}  // namespace epoch::cpu::EPOCH_ISA_NS

#if EPOCH_ISA_LEVEL == 0
namespace epoch::cpu {
EPOCH_ISA_KERNEL(copy_rows);
EPOCH_ISA_KERNEL(upsample_nearest2x_forward);
EPOCH_ISA_KERNEL(upsample_nearest2x_backward);
}  // namespace epoch::cpu
#endif
