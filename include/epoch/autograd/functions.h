// The differentiable functions models are written with: each calls the op's forward and, when
// a gradient is needed, records the op's backward. Shapes as in the ops/ headers.
#pragma once

#include <cstdint>
#include <vector>

#include "epoch/ops/conv2d.h"
#include "epoch/ops/norm.h"
#include "epoch/ops/pool.h"
#include "epoch/tensor/tensor.h"

namespace epoch {

// Layers
/// Who takes the gradient of a ReLU fused into a layer (Conv2dParams::relu, linear's relu):
/// the layer itself, from its output, or the max pooling its output goes to (max_pool2d with
/// through_relu), which masks its own gradient by its output > 0: the same values, one pass
/// fewer over the activation. Only a caller whose layer output feeds that pooling and nothing
/// else may pass by_next_max_pool (nn::forward_in_order does, for a ReLU between the two).
enum class ReluGrad { in_layer, by_next_max_pool };
Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& b, const ops::Conv2dParams& p,
              ReluGrad relu_grad = ReluGrad::in_layer);
/// through_relu: x is a ReLU's output whose gradient this pooling's backward also applies
/// (ops::max_pool2d_backward); the layer before it passed ReluGrad::by_next_max_pool.
Tensor max_pool2d(const Tensor& x, const ops::Pool2dParams& p, bool through_relu = false);
Tensor avg_pool2d(const Tensor& x, const ops::Pool2dParams& p);
Tensor global_avg_pool2d(const Tensor& x);
/// relu: max(0, x w^T + b) as one op (fused on the CPU fast path; see ops::linear_forward).
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b, bool relu = false,
              ReluGrad relu_grad = ReluGrad::in_layer);
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor bias_add(const Tensor& x, const Tensor& b);
/// Updates running statistics in place when training (the variance unbiased as PyTorch's, or
/// biased as Keras's).
Tensor batch_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& running_mean,
                  Tensor& running_var, bool training, float momentum, float eps,
                  bool unbiased_running_var = true);
Tensor lrn(const Tensor& x, const ops::LrnParams& p);
/// Identity unless training; the mask is a pure function of (seed, key).
Tensor dropout(const Tensor& x, float p, bool training, std::uint64_t seed, std::uint64_t key);

// Activations
Tensor relu(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor hard_sigmoid(const Tensor& x, float slope = 0.2f, float offset = 0.5f);
Tensor clip(const Tensor& x, float lo, float hi);

// Losses (mean over the batch)
Tensor softmax_cross_entropy(const Tensor& logits, const Tensor& labels);
Tensor bce_with_logits(const Tensor& logits, const Tensor& targets);
Tensor mse_loss(const Tensor& x, const Tensor& target);
Tensor l1_loss(const Tensor& x, const Tensor& target);

// Shapes
Tensor reshape(const Tensor& x, const Shape& shape);
/// x in the row-major layout (x itself when it is; a channel-blocked x reordered); its
/// gradient goes back in x's layout. nn::forward_in_order calls it before a layer that does
/// not take blocked activations.
Tensor to_row_major(const Tensor& x);
/// (N, ...) -> (N, product of the rest).
Tensor flatten(const Tensor& x);
Tensor concat(const std::vector<Tensor>& xs, std::int64_t dim);
Tensor slice(const Tensor& x, std::int64_t dim, std::int64_t start, std::int64_t length);
Tensor upsample_nearest2x(const Tensor& x);

// Arithmetic (NumPy broadcasting)
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
/// a * s + t.
Tensor affine(const Tensor& a, float s, float t = 0.0f);
/// a^p (a > 0 unless p is whole); the gradient p a^(p-1).
Tensor pow(const Tensor& a, float p);
Tensor sum(const Tensor& x);
Tensor mean(const Tensor& x);

}  // namespace epoch
