// Pointwise activations and clipping, forward and backward. Backward functions take what the
// derivative is cheapest from: ReLU and clip the input, sigmoid and tanh their output.
#pragma once

#include "epoch/tensor/tensor.h"

namespace epoch::ops {

Tensor relu_forward(const Tensor& x);
Tensor relu_backward(const Tensor& dy, const Tensor& x);  // dy * (x > 0)

Tensor sigmoid_forward(const Tensor& x);
Tensor sigmoid_backward(const Tensor& dy, const Tensor& y);  // dy * y * (1 - y)

Tensor tanh_forward(const Tensor& x);
Tensor tanh_backward(const Tensor& dy, const Tensor& y);  // dy * (1 - y^2)

/// clip(slope * x + offset, 0, 1); Keras's hard sigmoid is slope 0.2, offset 0.5.
Tensor hard_sigmoid_forward(const Tensor& x, float slope = 0.2f, float offset = 0.5f);
Tensor hard_sigmoid_backward(const Tensor& dy, const Tensor& x, float slope = 0.2f,
                             float offset = 0.5f);

/// min(max(x, lo), hi).
Tensor clip_forward(const Tensor& x, float lo, float hi);
Tensor clip_backward(const Tensor& dy, const Tensor& x, float lo, float hi);  // dy where lo<x<hi

/// Row-wise softmax of x (N, K), numerically stable.
Tensor softmax_forward(const Tensor& x);

}  // namespace epoch::ops
