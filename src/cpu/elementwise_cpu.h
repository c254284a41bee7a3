// Reference CPU kernels for elementwise arithmetic and reductions. Raw pointers and sizes.
#pragma once

#include <cstdint>

#include "kernels/args.h"

namespace epoch::cpu {

/// y = a (op) b over `shape` (ndim dims); a_strides/b_strides are element strides, 0 where
/// the operand is broadcast. y is contiguous with `shape`.
void binary_forward(kernels::BinaryOp op, const float* a, const std::int64_t* a_strides,
                    const float* b, const std::int64_t* b_strides, float* y,
                    const std::int64_t* shape, int ndim);
/// y = a (op) b for two contiguous arrays of n elements (the common, fast case).
void binary_same_shape(kernels::BinaryOp op, const float* a, const float* b, float* y,
                       std::int64_t n);

void affine(const float* x, float* y, std::int64_t n, float s, float t);  // y = x*s + t
void pow_scalar(const float* x, float* y, std::int64_t n, float p);      // y = x^p
void axpy(float* y, const float* x, std::int64_t n, float alpha);         // y += alpha*x
void fill(float* y, std::int64_t n, float value);
void copy(const float* x, float* y, std::int64_t n);  // y = x, in parallel when large

/// Sum of n elements in a fixed order (blocks of 4096 in double), independent of threads.
double sum(const float* x, std::int64_t n);
/// out (contiguous, out_numel) = sum of x (contiguous over `shape`) where out_strides maps each
/// x index to its out element (0 strides on reduced dimensions).
void sum_to(const float* x, const std::int64_t* shape, int ndim, const std::int64_t* out_strides,
            float* out, std::int64_t out_numel);

}  // namespace epoch::cpu
