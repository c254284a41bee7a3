// CUDA twins of the elementwise kernels in cpu/elementwise_cpu.h (same names and arguments).
// Pointers are device pointers; shapes and strides are host arrays.
#pragma once

#include <cstdint>

#include "kernels/args.h"

namespace epoch::cuda {

void binary_forward(kernels::BinaryOp op, const float* a, const std::int64_t* a_strides,
                    const float* b, const std::int64_t* b_strides, float* y,
                    const std::int64_t* shape, int ndim);
void binary_same_shape(kernels::BinaryOp op, const float* a, const float* b, float* y,
                       std::int64_t n);
void affine(const float* x, float* y, std::int64_t n, float s, float t);
void pow_scalar(const float* x, float* y, std::int64_t n, float p);
void axpy(float* y, const float* x, std::int64_t n, float alpha);
void fill(float* y, std::int64_t n, float value);
/// As cpu::sum_to (shape and out_strides are host arrays, at most 8 dimensions): each out
/// element is the sum of its x elements in double, in an order fixed by the shapes alone.
void sum_to(const float* x, const std::int64_t* shape, int ndim, const std::int64_t* out_strides,
            float* out, std::int64_t out_numel);
/// *out (device scalar) = sum of n elements, in a fixed order (deterministic).
void sum(const float* x, std::int64_t n, float* out);

}  // namespace epoch::cuda
