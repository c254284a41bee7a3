// Reference elementwise kernels (see elementwise_cpu.h); OpenMP over elements.
#include "cpu/elementwise_cpu.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>
// Compiled once per instruction-set level (kernels/isa_target.h): include it last.
#include "kernels/isa_target.h"

namespace epoch::cpu::EPOCH_ISA_NS {

using kernels::BinaryOp;

namespace {

template <BinaryOp Op>
inline float apply(float a, float b) {
  if constexpr (Op == BinaryOp::add) return a + b;
  if constexpr (Op == BinaryOp::sub) return a - b;
  if constexpr (Op == BinaryOp::mul) return a * b;
  return a / b;
}

template <BinaryOp Op>
void same_shape(const float* a, const float* b, float* y, std::int64_t n) {
#pragma omp parallel for simd schedule(static) if (n > 32768)
  for (std::int64_t i = 0; i < n; ++i) y[i] = apply<Op>(a[i], b[i]);
}

template <BinaryOp Op>
void strided(const float* a, const std::int64_t* as, const float* b, const std::int64_t* bs,
             float* y, const std::int64_t* shape, int ndim) {
  // Walk the leading dimensions with an index vector; the innermost one is a tight loop.
  std::int64_t outer = 1;
  for (int d = 0; d < ndim - 1; ++d) outer *= shape[d];
  const std::int64_t inner = ndim > 0 ? shape[ndim - 1] : 1;
  const std::int64_t ai = ndim > 0 ? as[ndim - 1] : 0;
  const std::int64_t bi = ndim > 0 ? bs[ndim - 1] : 0;
#pragma omp parallel for schedule(static) if (outer * inner > 32768)
  for (std::int64_t o = 0; o < outer; ++o) {
    std::int64_t rem = o, aoff = 0, boff = 0;
    for (int d = ndim - 2; d >= 0; --d) {
      const std::int64_t idx = rem % shape[d];
      rem /= shape[d];
      aoff += idx * as[d];
      boff += idx * bs[d];
    }
    float* yo = y + o * inner;
    for (std::int64_t i = 0; i < inner; ++i) yo[i] = apply<Op>(a[aoff + i * ai], b[boff + i * bi]);
  }
}

}  // namespace

void binary_same_shape(BinaryOp op, const float* a, const float* b, float* y, std::int64_t n) {
  switch (op) {
    case BinaryOp::add:
      return same_shape<BinaryOp::add>(a, b, y, n);
    case BinaryOp::sub:
      return same_shape<BinaryOp::sub>(a, b, y, n);
    case BinaryOp::mul:
      return same_shape<BinaryOp::mul>(a, b, y, n);
    case BinaryOp::div:
      return same_shape<BinaryOp::div>(a, b, y, n);
  }
}

void binary_forward(BinaryOp op, const float* a, const std::int64_t* as, const float* b,
                    const std::int64_t* bs, float* y, const std::int64_t* shape, int ndim) {
  switch (op) {
    case BinaryOp::add:
      return strided<BinaryOp::add>(a, as, b, bs, y, shape, ndim);
    case BinaryOp::sub:
      return strided<BinaryOp::sub>(a, as, b, bs, y, shape, ndim);
    case BinaryOp::mul:
      return strided<BinaryOp::mul>(a, as, b, bs, y, shape, ndim);
    case BinaryOp::div:
      return strided<BinaryOp::div>(a, as, b, bs, y, shape, ndim);
  }
}

void affine(const float* x, float* y, std::int64_t n, float s, float t) {
#pragma omp parallel for simd schedule(static) if (n > 32768)
  for (std::int64_t i = 0; i < n; ++i) y[i] = x[i] * s + t;
}

void pow_scalar(const float* x, float* y, std::int64_t n, float p) {
#pragma omp parallel for schedule(static) if (n > 32768)
  for (std::int64_t i = 0; i < n; ++i) y[i] = std::pow(x[i], p);
}

void axpy(float* y, const float* x, std::int64_t n, float alpha) {
#pragma omp parallel for simd schedule(static) if (n > 32768)
  for (std::int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

void fill(float* y, std::int64_t n, float value) { std::fill_n(y, n, value); }

void copy(const float* x, float* y, std::int64_t n) {
  constexpr std::int64_t kChunk = 1 << 16;  // floats per memcpy
  const std::int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (std::int64_t c = 0; c < chunks; ++c) {
    const std::int64_t begin = c * kChunk, len = std::min(kChunk, n - begin);
    std::memcpy(y + begin, x + begin, static_cast<std::size_t>(len) * sizeof(float));
  }
}

double sum(const float* x, std::int64_t n) {
  constexpr std::int64_t kBlock = 4096;
  const std::int64_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<double> partial(static_cast<std::size_t>(blocks), 0.0);
#pragma omp parallel for schedule(static) if (n > 65536)
  for (std::int64_t blk = 0; blk < blocks; ++blk) {
    const std::int64_t end = std::min(n, (blk + 1) * kBlock);
    double s = 0.0;
    for (std::int64_t i = blk * kBlock; i < end; ++i) s += x[i];
    partial[static_cast<std::size_t>(blk)] = s;
  }
  double total = 0.0;
  for (double p : partial) total += p;
  return total;
}

void sum_to(const float* x, const std::int64_t* shape, int ndim, const std::int64_t* out_strides,
            float* out, std::int64_t out_numel) {
  std::vector<double> acc(static_cast<std::size_t>(out_numel), 0.0);
  std::int64_t n = 1;
  for (int d = 0; d < ndim; ++d) n *= shape[d];
  std::vector<std::int64_t> index(static_cast<std::size_t>(ndim), 0);
  std::int64_t out_off = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    acc[static_cast<std::size_t>(out_off)] += x[i];
    for (int d = ndim - 1; d >= 0; --d) {
      if (++index[static_cast<std::size_t>(d)] < shape[d]) {
        out_off += out_strides[d];
        break;
      }
      out_off -= (shape[d] - 1) * out_strides[d];
      index[static_cast<std::size_t>(d)] = 0;
    }
  }
  for (std::int64_t i = 0; i < out_numel; ++i)
    out[i] = static_cast<float>(acc[static_cast<std::size_t>(i)]);
}

}  // namespace epoch::cpu::EPOCH_ISA_NS

#if EPOCH_ISA_LEVEL == 0
namespace epoch::cpu {
EPOCH_ISA_KERNEL(binary_forward);
EPOCH_ISA_KERNEL(binary_same_shape);
EPOCH_ISA_KERNEL(affine);
EPOCH_ISA_KERNEL(pow_scalar);
EPOCH_ISA_KERNEL(axpy);
EPOCH_ISA_KERNEL(fill);
EPOCH_ISA_KERNEL(copy);
EPOCH_ISA_KERNEL(sum);
EPOCH_ISA_KERNEL(sum_to);
}  // namespace epoch::cpu
#endif
