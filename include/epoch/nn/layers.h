// The layers the model zoo is built from. Each wraps a differentiable function from
// epoch/autograd/functions.h and knows its output shape and FLOPs per sample.
#pragma once

#include <cstdint>
#include <string>

#include "epoch/nn/module.h"
#include "epoch/ops/conv2d.h"
#include "epoch/ops/norm.h"
#include "epoch/ops/pool.h"

namespace epoch::nn {

/// 2-D convolution. weight (OC, C/groups, KH, KW), bias (OC) unless bias=false.
class Conv2d : public Module {
 public:
  Conv2d(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel_h,
         std::int64_t kernel_w, const ops::Conv2dParams& params, bool bias = true);
  /// Square kernel k, stride 1, "same" padding (k odd).
  static std::shared_ptr<Conv2d> same(std::int64_t in, std::int64_t out, std::int64_t k,
                                      bool bias = true);
  /// Square kernel k, stride 1, no padding.
  static std::shared_ptr<Conv2d> valid(std::int64_t in, std::int64_t out, std::int64_t k,
                                       bool bias = true);
  Tensor forward(const Tensor& x) override;
  bool takes_blocked() const override { return true; }
  bool fuses_relu() const override { return true; }
  bool absorbs_affine() const override { return true; }
  bool fuses_add() const override { return true; }
  Tensor forward_in_chain(const Tensor& x, const ChainLink& link) override;
  Shape output_shape(const Shape& input) const override;
  std::int64_t flops(const Shape& input) const override;
  std::string describe() const override;
  Tensor weight, bias;

 private:
  ops::Conv2dParams params_;
};

/// y = x W^T + b. weight (OUT, IN), bias (OUT).
class Linear : public Module {
 public:
  Linear(std::int64_t in_features, std::int64_t out_features, bool bias = true);
  Tensor forward(const Tensor& x) override;
  bool fuses_relu() const override { return true; }
  bool absorbs_affine() const override { return true; }
  Tensor forward_in_chain(const Tensor& x, const ChainLink& link) override;
  Shape output_shape(const Shape& input) const override;
  std::int64_t flops(const Shape& input) const override;
  std::string describe() const override;
  Tensor weight, bias;
};

enum class Activation { relu, sigmoid, tanh, hard_sigmoid, leaky_relu, linear, elu, swish, relu_max };

/// A pointwise activation. hard_sigmoid: clip(slope x + offset, 0, 1) (Keras 2's 0.2, 0.5;
/// Keras 3's relu6(x + 3) / 6 is 1/6, 0.5); leaky_relu: x for x > 0, alpha x below; linear:
/// the identity; elu: scale (x for x > 0, alpha (e^x - 1) below) (SELU: scale 1.0507009873554805,
/// alpha 1.6732632423543772), e^x taken as sigmoid(x) / sigmoid(-x); swish (SiLU): x sigmoid(x);
/// relu_max: min(max(x, 0), max) (ReLU6).
class Act : public Module {
 public:
  explicit Act(Activation kind) : kind_(kind) {}
  static std::shared_ptr<Act> hard_sigmoid(float slope, float offset);
  static std::shared_ptr<Act> leaky_relu(float alpha);
  static std::shared_ptr<Act> elu(float alpha, float scale = 1.0f);
  static std::shared_ptr<Act> relu_max(float max);
  Tensor forward(const Tensor& x) override;
  bool takes_blocked() const override { return kind_ == Activation::relu; }
  bool is_relu() const override { return kind_ == Activation::relu; }
  std::string describe() const override;

 private:
  Activation kind_;
  float slope_ = 0.2f, offset_ = 0.5f;  // hard_sigmoid
  float alpha_ = 0.0f;                  // leaky_relu, elu
  float scale_ = 1.0f;                  // elu
  float max_ = 6.0f;                    // relu_max
};

/// Zeros around each image: (N, C, H, W) -> (N, C, top + H + bottom, left + W + right).
class ZeroPad2d : public Module {
 public:
  ZeroPad2d(std::int64_t top, std::int64_t bottom, std::int64_t left, std::int64_t right)
      : top_(top), bottom_(bottom), left_(left), right_(right) {}
  Tensor forward(const Tensor& x) override;
  Shape output_shape(const Shape& input) const override;
  std::string describe() const override;

 private:
  std::int64_t top_, bottom_, left_, right_;
};

/// (N, C, H, W) -> (N, C): each channel's maximum.
class GlobalMaxPool2d : public Module {
 public:
  Tensor forward(const Tensor& x) override;
  Shape output_shape(const Shape& input) const override;
  std::string describe() const override { return "GlobalMaxPool2d"; }
};

/// y = scale x + offset (Keras's Rescaling inside a model).
class Rescale : public Module {
 public:
  Rescale(float scale, float offset) : scale_(scale), offset_(offset) {}
  Tensor forward(const Tensor& x) override;
  std::string describe() const override;

 private:
  float scale_, offset_;
};

/// y = x, with a description of its own: a layer whose work is done elsewhere (a rescaling
/// that the data pipeline applies, a dropout of rate 0).
class Identity : public Module {
 public:
  explicit Identity(std::string description) : description_(std::move(description)) {}
  Tensor forward(const Tensor& x) override { return x; }
  bool takes_blocked() const override { return true; }
  std::string describe() const override { return description_; }

 private:
  std::string description_;
};

enum class PoolKind { max, avg };

class Pool2d : public Module {
 public:
  Pool2d(PoolKind kind, const ops::Pool2dParams& params) : kind_(kind), params_(params) {}
  /// Non-overlapping k x k max pooling (stride k), as Keras's MaxPooling2D(k).
  static std::shared_ptr<Pool2d> max(std::int64_t k);
  /// TensorFlow "same" pooling: output ceil(in / stride), padding split with the extra at the end.
  static std::shared_ptr<Pool2d> max_same(std::int64_t k, std::int64_t stride, std::int64_t in_h,
                                          std::int64_t in_w);
  Tensor forward(const Tensor& x) override;
  Tensor forward_in_chain(const Tensor& x, const ChainLink& link) override;
  bool takes_blocked() const override { return kind_ == PoolKind::max; }
  bool takes_relu_grad() const override { return kind_ == PoolKind::max; }
  Shape output_shape(const Shape& input) const override;
  std::string describe() const override;

 private:
  PoolKind kind_;
  ops::Pool2dParams params_;
};

/// (N, C, H, W) -> (N, C).
class GlobalAvgPool2d : public Module {
 public:
  Tensor forward(const Tensor& x) override;
  Shape output_shape(const Shape& input) const override;
  std::string describe() const override { return "GlobalAvgPool2d"; }
};

/// (N, C, H, W) -> (N, C, OH, OW) by averaging (PyTorch's AdaptiveAvgPool2d) where H and W
/// are multiples of OH and OW (the identity where equal: AlexNet's 6x6 at 224x224); other
/// sizes are refused, naming them.
class AdaptiveAvgPool2d : public Module {
 public:
  AdaptiveAvgPool2d(std::int64_t out_h, std::int64_t out_w) : out_h_(out_h), out_w_(out_w) {}
  Tensor forward(const Tensor& x) override;
  Shape output_shape(const Shape& input) const override;
  std::string describe() const override;

 private:
  std::int64_t out_h_, out_w_;
};

/// (N, ...) -> (N, product of the rest).
class Flatten : public Module {
 public:
  Tensor forward(const Tensor& x) override;
  Shape output_shape(const Shape& input) const override;
  std::string describe() const override { return "Flatten"; }
};

/// Inverted dropout; the mask of each step comes from the module's per-step stream.
class Dropout : public Module {
 public:
  explicit Dropout(float p);
  Tensor forward(const Tensor& x) override;
  bool takes_blocked() const override { return true; }
  std::string describe() const override;

 protected:
  void on_step_seed(std::uint64_t seed, std::uint64_t key) override {
    seed_ = seed;
    key_ = key;
  }

 private:
  float p_;
  std::uint64_t seed_ = 0, key_ = 0;
};

/// Batch normalization over channels of (N, C) or (N, C, H, W), PyTorch's running statistics.
class BatchNorm : public Module {
 public:
  /// unbiased_running_var: the running variance averages the batch's unbiased variance
  /// (PyTorch, Caffe) or, false, its biased one (Keras); normalizing uses the biased one either way.
  /// affine false: no scale and shift to learn (Caffe's BatchNorm without a Scale after it):
  /// gamma 1 and beta 0, kept out of the parameters.
  explicit BatchNorm(std::int64_t channels, float momentum = 0.1f, float eps = 1e-5f,
                     bool unbiased_running_var = true, bool affine = true);
  Tensor forward(const Tensor& x) override;
  /// Activations kept channel-blocked stay so on the fast path (y and dx in x's layout).
  bool takes_blocked() const override { return true; }
  /// Evaluating: scale = gamma / sqrt(running_var + eps), shift = beta - running_mean * scale.
  bool eval_affine(Tensor& scale, Tensor& shift) const override;
  std::string describe() const override;
  Tensor weight, bias, running_mean, running_var;

 private:
  float momentum_, eps_;
  bool unbiased_running_var_, affine_;
};

/// Local response normalization across channels; within_channel: Caffe's WITHIN_CHANNEL,
/// y = x (1 + alpha mean(x^2 over the size x size window around it, zeros outside))^-beta (k
/// unused, as in Caffe).
class Lrn : public Module {
 public:
  explicit Lrn(const ops::LrnParams& params, bool within_channel = false)
      : params_(params), within_channel_(within_channel) {}
  Tensor forward(const Tensor& x) override;
  std::string describe() const override;

 private:
  ops::LrnParams params_;
  bool within_channel_;
};

/// Deterministic initialization of every parameter from (seed, parameter path): weights
/// Glorot-uniform (fan-in/out from the shape), biases and peepholes (names ending in "bias" and
/// "_peephole") zero, 1-D scales (batch-norm gamma) one; a parameter given its own initializer
/// (Module::set_param_init) starts as that says.
void initialize(Module& module, std::uint64_t seed);
/// Moves every parameter element one ulp up or down (a draw per element from `seed` and the
/// parameter's name), zeros included: a perturbation as small as a rounding.
void jitter_ulp(Module& module, std::uint64_t seed);

}  // namespace epoch::nn
