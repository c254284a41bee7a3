// Losses, each reduced to the mean over the batch: softmax + cross-entropy fused and stable,
// binary cross-entropy from logits, mean squared error, L1. Backward takes the upstream scalar
// gradient dloss.
#pragma once

#include "epoch/tensor/tensor.h"

namespace epoch::ops {

struct SoftmaxCrossEntropyResult {
  Tensor loss;   // scalar {}: mean over N of -log softmax(logits)[label]
  Tensor probs;  // (N, K) softmax, saved for backward
};
/// logits (N, K) f32, labels (N) i32 in [0, K). Throws InvalidArgument on a bad label.
SoftmaxCrossEntropyResult softmax_cross_entropy_forward(const Tensor& logits, const Tensor& labels);
/// dlogits (N, K) = (probs - onehot(labels)) * dloss / N.
Tensor softmax_cross_entropy_backward(float dloss, const Tensor& probs, const Tensor& labels);

/// Mean over elements of BCE(sigmoid(logits), targets), computed stably from logits.
/// logits and targets f32 of the same shape (targets in [0, 1]).
Tensor bce_with_logits_forward(const Tensor& logits, const Tensor& targets);
Tensor bce_with_logits_backward(float dloss, const Tensor& logits, const Tensor& targets);

/// Mean of (x - target)^2.
Tensor mse_forward(const Tensor& x, const Tensor& target);
Tensor mse_backward(float dloss, const Tensor& x, const Tensor& target);

/// Mean of |x - target|.
Tensor l1_forward(const Tensor& x, const Tensor& target);
Tensor l1_backward(float dloss, const Tensor& x, const Tensor& target);

}  // namespace epoch::ops
