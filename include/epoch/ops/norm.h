// Normalization: batch norm over (N, H, W) per channel with running statistics, and
// local response normalization across channels (PyTorch's definition; see MODELS.md for
// TensorFlow's). oneDNN on the CPU fast path.
#pragma once

#include <cstdint>

#include "epoch/tensor/tensor.h"

namespace epoch::ops {

struct BatchNormResult {
  Tensor y;           // same shape as x
  Tensor save_mean;   // (C) batch mean (training) or running mean (eval)
  Tensor save_invstd; // (C) 1/sqrt(var + eps) of the statistics used
};

/// x (N, C) or (N, C, H, W); gamma, beta, running_mean, running_var (C).
/// training: normalizes with batch statistics and updates the running ones in place
/// (running = (1 - momentum) * running + momentum * batch, with the unbiased variance as PyTorch
/// does, or the biased one as Keras does when unbiased_running_var is false).
/// eval: normalizes with the running statistics.
BatchNormResult batch_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                   Tensor& running_mean, Tensor& running_var, bool training,
                                   float momentum, float eps, bool unbiased_running_var = true);

struct BatchNormGrads {
  Tensor dx, dgamma, dbeta;
};
/// Gradients through training-mode (batch statistics) or eval-mode normalization.
BatchNormGrads batch_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma,
                                   const BatchNormResult& fwd, bool training);

struct LrnParams {
  std::int64_t size = 5;  // channels in the window (odd)
  float alpha = 1e-4f;    // divided by size, as in PyTorch
  float beta = 0.75f;
  float k = 1.0f;
};
/// y = x / (k + alpha/size * sum over the window of x^2)^beta. x (N, C, H, W).
Tensor lrn_forward(const Tensor& x, const LrnParams& p);
Tensor lrn_backward(const Tensor& dy, const Tensor& x, const Tensor& y, const LrnParams& p);

}  // namespace epoch::ops
