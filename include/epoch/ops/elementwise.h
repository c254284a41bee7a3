// Elementwise arithmetic with NumPy broadcasting, scalar arithmetic, in-place accumulation,
// and reductions (sum, mean, sum-to-shape for broadcast gradients).
#pragma once

#include <cstdint>

#include "epoch/tensor/tensor.h"

namespace epoch::ops {

/// Shape of broadcasting a with b (NumPy rules); throws InvalidArgument when incompatible.
Shape broadcast_shape(const Shape& a, const Shape& b);

Tensor add(const Tensor& a, const Tensor& b);  // a + b, broadcast
Tensor sub(const Tensor& a, const Tensor& b);  // a - b, broadcast
Tensor mul(const Tensor& a, const Tensor& b);  // a * b, broadcast
Tensor div(const Tensor& a, const Tensor& b);  // a / b, broadcast

/// a * s + t for a scalar s and t (any device).
Tensor affine_scalar(const Tensor& a, float s, float t = 0.0f);
/// a^p elementwise for a scalar p (a > 0 wherever p is not a whole number: std::pow's domain).
Tensor pow_scalar(const Tensor& a, float p);

/// y += alpha * x in place; x and y have the same shape and device (gradient accumulation).
void axpy_(Tensor& y, const Tensor& x, float alpha = 1.0f);
/// y *= s in place.
void scale_(Tensor& y, float s);
/// Sets every element of a contiguous f32 tensor to value (any device).
void fill_(Tensor& y, float value);

/// Sum of every element as a scalar tensor {} (fixed reduction order: deterministic).
Tensor sum(const Tensor& x);
/// Mean of every element as a scalar tensor {}.
Tensor mean(const Tensor& x);
/// Sums x over broadcast dimensions so the result has `shape` (inverse of broadcasting).
Tensor sum_to_shape(const Tensor& x, const Shape& shape);

}  // namespace epoch::ops
