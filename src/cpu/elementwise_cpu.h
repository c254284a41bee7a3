// Reference CPU kernels for elementwise arithmetic and reductions. Raw pointers and sizes.
#pragma once

#include <cstdint>

#include "kernels/args.h"
#include "kernels/isa_kernel.h"

namespace epoch::cpu {

/// y = a (op) b over `shape` (ndim dims); a_strides/b_strides are element strides, 0 where
/// the operand is broadcast. y is contiguous with `shape`.
extern const kernels::IsaKernel<void(kernels::BinaryOp op, const float* a, const std::int64_t* a_strides,
                    const float* b, const std::int64_t* b_strides, float* y,
                    const std::int64_t* shape, int ndim)> binary_forward;
/// y = a (op) b for two contiguous arrays of n elements (the common, fast case).
extern const kernels::IsaKernel<void(kernels::BinaryOp op, const float* a, const float* b, float* y,
                       std::int64_t n)> binary_same_shape;

extern const kernels::IsaKernel<void(const float* x, float* y, std::int64_t n, float s, float t)> affine;  // y = x*s + t
extern const kernels::IsaKernel<void(const float* x, float* y, std::int64_t n, float p)> pow_scalar;      // y = x^p
extern const kernels::IsaKernel<void(float* y, const float* x, std::int64_t n, float alpha)> axpy;         // y += alpha*x
extern const kernels::IsaKernel<void(float* y, std::int64_t n, float value)> fill;
extern const kernels::IsaKernel<void(const float* x, float* y, std::int64_t n)> copy;  // y = x, in parallel when large

/// Sum of n elements in a fixed order (blocks of 4096 in double), independent of threads.
extern const kernels::IsaKernel<double(const float* x, std::int64_t n)> sum;
/// out (contiguous, out_numel) = sum of x (contiguous over `shape`) where out_strides maps each
/// x index to its out element (0 strides on reduced dimensions).
extern const kernels::IsaKernel<void(const float* x, const std::int64_t* shape, int ndim, const std::int64_t* out_strides,
            float* out, std::int64_t out_numel)> sum_to;

}  // namespace epoch::cpu
