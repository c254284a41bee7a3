// Ops that move elements without arithmetic: concat, slice along a dimension, nearest-neighbour
// 2x upsampling. (Reshape and flatten are views: Tensor::view.)
#pragma once

#include <cstdint>
#include <vector>

#include "epoch/tensor/tensor.h"

namespace epoch::ops {

/// Joins tensors whose shapes agree except in dimension dim.
Tensor concat(const std::vector<Tensor>& xs, std::int64_t dim);
/// Elements [start, start + length) of dimension dim, as a new contiguous tensor.
Tensor slice(const Tensor& x, std::int64_t dim, std::int64_t start, std::int64_t length);
/// Gradient of slice: zeros of x_shape with dy written at [start, start + length) of dim.
Tensor slice_backward(const Tensor& dy, const Shape& x_shape, std::int64_t dim, std::int64_t start);

/// x (N, C, H, W) -> (N, C, 2H, 2W), each pixel repeated 2x2.
Tensor upsample_nearest2x_forward(const Tensor& x);
/// dx (N, C, H, W) = sum of each 2x2 block of dy.
Tensor upsample_nearest2x_backward(const Tensor& dy);

}  // namespace epoch::ops
