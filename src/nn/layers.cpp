// The zoo's layers: thin modules over the differentiable functions, with shapes and FLOPs.
#include "epoch/nn/layers.h"

#include <cmath>
#include <functional>
#include <sstream>
#include <string_view>

#include "epoch/autograd/autograd.h"
#include "epoch/autograd/functions.h"
#include "epoch/ops/elementwise.h"
#include "epoch/tensor/random.h"

namespace epoch::nn {
namespace {
std::string fmt_kernel(std::int64_t kh, std::int64_t kw) {
  return std::to_string(kh) + "x" + std::to_string(kw);
}
std::string fmt_float(float v) {
  std::ostringstream os;
  os << v;
  return os.str();
}
void expect_chw(const Shape& s, const char* layer) {
  EPOCH_CHECK(s.size() == 3, layer, " expects a per-sample (C, H, W) input, got ", shape_str(s));
}
}  // namespace

Conv2d::Conv2d(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel_h,
               std::int64_t kernel_w, const ops::Conv2dParams& params, bool has_bias)
    : params_(params) {
  EPOCH_CHECK(
      params.groups > 0 && in_channels % params.groups == 0 && out_channels % params.groups == 0,
      "Conv2d: channels ", in_channels, " -> ", out_channels, " not divisible by groups ",
      params.groups);
  weight = Tensor::zeros({out_channels, in_channels / params.groups, kernel_h, kernel_w});
  register_parameter("weight", &weight);
  if (has_bias) {
    bias = Tensor::zeros({out_channels});
    register_parameter("bias", &bias);
  }
}

std::shared_ptr<Conv2d> Conv2d::same(std::int64_t in, std::int64_t out, std::int64_t k,
                                     bool has_bias) {
  EPOCH_CHECK(k % 2 == 1, "Conv2d::same needs an odd kernel, got ", k);
  ops::Conv2dParams p;
  p.pad_h = p.pad_w = k / 2;
  return std::make_shared<Conv2d>(in, out, k, k, p, has_bias);
}

std::shared_ptr<Conv2d> Conv2d::valid(std::int64_t in, std::int64_t out, std::int64_t k,
                                      bool has_bias) {
  return std::make_shared<Conv2d>(in, out, k, k, ops::Conv2dParams{}, has_bias);
}

Tensor Conv2d::forward(const Tensor& x) { return conv2d(x, weight, bias, params_); }

namespace {

/// weight * scale per output channel (dim 0), and bias * scale + shift (shift alone without a
/// bias): the layer followed by the per-channel affine map, as one layer.
std::pair<Tensor, Tensor> fold_affine(const Tensor& weight, const Tensor& bias, const Tensor& scale,
                                      const Tensor& shift) {
  const Device device = weight.device();
  const std::int64_t out = weight.size(0);
  Shape per_row(weight.shape().size(), 1);
  per_row[0] = out;
  const Tensor s = scale.to(device), t = shift.to(device);
  const Tensor w = ops::mul(weight, s.view(per_row));
  const Tensor b = bias.defined() ? ops::add(ops::mul(bias, s), t) : t;
  return {w, b};
}

}  // namespace

Tensor Conv2d::forward_in_chain(const Tensor& x, const ChainLink& link) {
  ops::Conv2dParams p = params_;
  p.blocked_output = link.next_takes_blocked;
  p.relu = link.relu;
  const ReluGrad grad = link.relu_grad_by_next ? ReluGrad::by_next_max_pool : ReluGrad::in_layer;
  if (link.add != nullptr) {  // a residual sum, inference only (forward_in_order)
    EPOCH_CHECK(!autograd::grad_enabled(), "Conv2d: a fused residual sum has no gradient");
    p.inference = true;
    if (link.scale.defined()) {
      const auto [w, b] = fold_affine(weight, bias, link.scale, link.shift);
      return ops::conv2d_forward_add(x, w, b, p, *link.add, link.add_reusable);
    }
    return ops::conv2d_forward_add(x, weight, bias, p, *link.add, link.add_reusable);
  }
  if (link.scale.defined()) {
    const auto [w, b] = fold_affine(weight, bias, link.scale, link.shift);
    return conv2d(x, w, b, p, grad);
  }
  return conv2d(x, weight, bias, p, grad);
}

Shape Conv2d::output_shape(const Shape& in) const {
  expect_chw(in, "Conv2d");
  EPOCH_CHECK(in[0] == weight.size(1) * params_.groups, "Conv2d expects ",
              weight.size(1) * params_.groups, " input channels, got ", in[0]);
  return {weight.size(0),
          ops::conv_out_size(in[1], weight.size(2), params_.stride_h, params_.pad_h,
                             params_.dilation_h),
          ops::conv_out_size(in[2], weight.size(3), params_.stride_w, params_.pad_w,
                             params_.dilation_w)};
}

std::int64_t Conv2d::flops(const Shape& in) const {
  const Shape out = output_shape(in);
  return 2 * shape_numel(out) * weight.size(1) * weight.size(2) * weight.size(3);
}

std::string Conv2d::describe() const {
  std::ostringstream os;
  os << "Conv2d(" << weight.size(1) * params_.groups << " -> " << weight.size(0) << ", "
     << fmt_kernel(weight.size(2), weight.size(3));
  if (params_.stride_h != 1 || params_.stride_w != 1) os << ", stride " << params_.stride_h;
  if (params_.pad_h != 0 || params_.pad_w != 0) os << ", pad " << params_.pad_h;
  if (params_.groups != 1) os << ", groups " << params_.groups;
  if (!bias.defined()) os << ", no bias";
  os << ")";
  return os.str();
}

Linear::Linear(std::int64_t in_features, std::int64_t out_features, bool has_bias) {
  weight = Tensor::zeros({out_features, in_features});
  register_parameter("weight", &weight);
  if (has_bias) {
    bias = Tensor::zeros({out_features});
    register_parameter("bias", &bias);
  }
}

Tensor Linear::forward(const Tensor& x) { return linear(x, weight, bias); }

Tensor Linear::forward_in_chain(const Tensor& x, const ChainLink& link) {
  const ReluGrad grad = link.relu_grad_by_next ? ReluGrad::by_next_max_pool : ReluGrad::in_layer;
  if (link.scale.defined()) {
    const auto [w, b] = fold_affine(weight, bias, link.scale, link.shift);
    return linear(x, w, b, link.relu, grad);
  }
  return linear(x, weight, bias, link.relu, grad);
}

Shape Linear::output_shape(const Shape& in) const {
  EPOCH_CHECK(in.size() == 1 && in[0] == weight.size(1), "Linear expects (", weight.size(1),
              ") per sample, got ", shape_str(in));
  return {weight.size(0)};
}

std::int64_t Linear::flops(const Shape&) const { return 2 * weight.numel(); }

std::string Linear::describe() const {
  return "Linear(" + std::to_string(weight.size(1)) + " -> " + std::to_string(weight.size(0)) +
         (bias.defined() ? ")" : ", no bias)");
}

Tensor Act::forward(const Tensor& x) {
  switch (kind_) {
    case Activation::relu:
      return relu(x);
    case Activation::sigmoid:
      return sigmoid(x);
    case Activation::tanh:
      return epoch::tanh(x);
    case Activation::hard_sigmoid:
      return epoch::hard_sigmoid(x, slope_, offset_);
    case Activation::leaky_relu:  // (1 - alpha) relu(x) + alpha x
      return add(affine(relu(x), 1.0f - alpha_), affine(x, alpha_));
    case Activation::linear:
      return x;
    case Activation::elu: {  // relu(x) + alpha (e^m - 1), m = min(x, 0), e^m = s(m) / s(-m)
      const Tensor m = affine(relu(affine(x, -1.0f)), -1.0f);
      const Tensor e = div(sigmoid(m), sigmoid(affine(m, -1.0f)));
      return affine(add(relu(x), affine(e, alpha_, -alpha_)), scale_);
    }
    case Activation::swish:
      return mul(x, sigmoid(x));
    case Activation::relu_max:
      return clip(x, 0.0f, max_);
  }
  return x;
}

std::shared_ptr<Act> Act::elu(float alpha, float scale) {
  auto a = std::make_shared<Act>(Activation::elu);
  a->alpha_ = alpha;
  a->scale_ = scale;
  return a;
}

std::shared_ptr<Act> Act::relu_max(float max) {
  auto a = std::make_shared<Act>(Activation::relu_max);
  a->max_ = max;
  return a;
}

std::shared_ptr<Act> Act::hard_sigmoid(float slope, float offset) {
  auto a = std::make_shared<Act>(Activation::hard_sigmoid);
  a->slope_ = slope;
  a->offset_ = offset;
  return a;
}

std::shared_ptr<Act> Act::leaky_relu(float alpha) {
  auto a = std::make_shared<Act>(Activation::leaky_relu);
  a->alpha_ = alpha;
  return a;
}

std::string Act::describe() const {
  switch (kind_) {
    case Activation::relu:
      return "ReLU";
    case Activation::sigmoid:
      return "Sigmoid";
    case Activation::tanh:
      return "Tanh";
    case Activation::hard_sigmoid:
      return slope_ == 0.2f && offset_ == 0.5f
                 ? "HardSigmoid"
                 : "HardSigmoid(" + fmt_float(slope_) + " x + " + fmt_float(offset_) + ")";
    case Activation::leaky_relu:
      return "LeakyReLU(" + fmt_float(alpha_) + ")";
    case Activation::linear:
      return "Linear";
    case Activation::elu:
      return scale_ == 1.0f ? "ELU(" + fmt_float(alpha_) + ")"
                            : "SELU(" + fmt_float(alpha_) + ", scale " + fmt_float(scale_) + ")";
    case Activation::swish:
      return "Swish";
    case Activation::relu_max:
      return "ReLU(max " + fmt_float(max_) + ")";
  }
  return "?";
}

Tensor ZeroPad2d::forward(const Tensor& x) {
  EPOCH_CHECK(x.ndim() == 4, "ZeroPad2d takes (N, C, H, W), got ", x.ndim(), " dimensions");
  const Tensor r = to_row_major(x);
  const std::int64_t n = r.size(0), c = r.size(1), h = r.size(2), w = r.size(3);
  const auto zeros = [&](std::int64_t rows, std::int64_t cols) {
    return Tensor::zeros({n, c, rows, cols}, DType::f32, r.device());
  };
  Tensor y = r;
  if (top_ > 0 || bottom_ > 0) {
    std::vector<Tensor> parts;
    if (top_ > 0) parts.push_back(zeros(top_, w));
    parts.push_back(y);
    if (bottom_ > 0) parts.push_back(zeros(bottom_, w));
    y = concat(parts, 2);
  }
  if (left_ > 0 || right_ > 0) {
    std::vector<Tensor> parts;
    if (left_ > 0) parts.push_back(zeros(h + top_ + bottom_, left_));
    parts.push_back(y);
    if (right_ > 0) parts.push_back(zeros(h + top_ + bottom_, right_));
    y = concat(parts, 3);
  }
  return y;
}

Shape ZeroPad2d::output_shape(const Shape& in) const {
  expect_chw(in, "ZeroPad2d");
  return {in[0], in[1] + top_ + bottom_, in[2] + left_ + right_};
}

std::string ZeroPad2d::describe() const {
  std::ostringstream os;
  os << "ZeroPad2d(top " << top_ << ", bottom " << bottom_ << ", left " << left_ << ", right "
     << right_ << ")";
  return os.str();
}

Tensor GlobalMaxPool2d::forward(const Tensor& x) {
  EPOCH_CHECK(x.ndim() == 4, "GlobalMaxPool2d takes (N, C, H, W), got ", x.ndim(),
              " dimensions");
  ops::Pool2dParams p;
  p.kernel_h = p.stride_h = x.size(2);
  p.kernel_w = p.stride_w = x.size(3);
  return flatten(max_pool2d(x, p));
}

Shape GlobalMaxPool2d::output_shape(const Shape& in) const {
  expect_chw(in, "GlobalMaxPool2d");
  return {in[0]};
}

Tensor Rescale::forward(const Tensor& x) { return affine(x, scale_, offset_); }

std::string Rescale::describe() const {
  return "Rescale(" + fmt_float(scale_) + " x + " + fmt_float(offset_) + ")";
}

std::shared_ptr<Pool2d> Pool2d::max(std::int64_t k) {
  ops::Pool2dParams p;
  p.kernel_h = p.kernel_w = p.stride_h = p.stride_w = k;
  return std::make_shared<Pool2d>(PoolKind::max, p);
}

std::shared_ptr<Pool2d> Pool2d::max_same(std::int64_t k, std::int64_t stride, std::int64_t in_h,
                                         std::int64_t in_w) {
  auto total_pad = [&](std::int64_t in) {
    const std::int64_t out = (in + stride - 1) / stride;
    return std::max<std::int64_t>((out - 1) * stride + k - in, 0);
  };
  ops::Pool2dParams p;
  p.kernel_h = p.kernel_w = k;
  p.stride_h = p.stride_w = stride;
  const std::int64_t ph = total_pad(in_h), pw = total_pad(in_w);
  p.pad_top = ph / 2;
  p.pad_bottom = ph - ph / 2;
  p.pad_left = pw / 2;
  p.pad_right = pw - pw / 2;
  return std::make_shared<Pool2d>(PoolKind::max, p);
}

Tensor Pool2d::forward(const Tensor& x) {
  return kind_ == PoolKind::max ? max_pool2d(x, params_) : avg_pool2d(x, params_);
}

Tensor Pool2d::forward_in_chain(const Tensor& x, const ChainLink& link) {
  EPOCH_CHECK(!link.through_relu || kind_ == PoolKind::max,
              "Pool2d: only max pooling takes a ReLU's gradient");
  return kind_ == PoolKind::max ? max_pool2d(x, params_, link.through_relu)
                                : avg_pool2d(x, params_);
}

Shape Pool2d::output_shape(const Shape& in) const {
  expect_chw(in, "Pool2d");
  return {in[0],
          ops::pool_out_size(in[1], params_.kernel_h, params_.stride_h, params_.pad_top,
                             params_.pad_bottom),
          ops::pool_out_size(in[2], params_.kernel_w, params_.stride_w, params_.pad_left,
                             params_.pad_right)};
}

std::string Pool2d::describe() const {
  std::ostringstream os;
  os << (kind_ == PoolKind::max ? "MaxPool2d(" : "AvgPool2d(")
     << fmt_kernel(params_.kernel_h, params_.kernel_w) << ", stride " << params_.stride_h;
  if (params_.pad_top || params_.pad_bottom || params_.pad_left || params_.pad_right)
    os << ", pad " << params_.pad_top << "/" << params_.pad_bottom << "/" << params_.pad_left << "/"
       << params_.pad_right;
  os << ")";
  return os.str();
}

Tensor GlobalAvgPool2d::forward(const Tensor& x) { return global_avg_pool2d(x); }

Shape GlobalAvgPool2d::output_shape(const Shape& in) const {
  expect_chw(in, "GlobalAvgPool2d");
  return {in[0]};
}

namespace {
void check_adaptive(const Shape& chw, std::int64_t oh, std::int64_t ow) {
  expect_chw(chw, "AdaptiveAvgPool2d");
  EPOCH_CHECK(chw[1] % oh == 0 && chw[2] % ow == 0, "AdaptiveAvgPool2d(", oh, "x", ow, "): input ",
              chw[1], "x", chw[2], " is not a multiple of the output size");
}
}  // namespace

Tensor AdaptiveAvgPool2d::forward(const Tensor& x) {
  EPOCH_CHECK(x.ndim() == 4, "AdaptiveAvgPool2d expects (N, C, H, W), got ", shape_str(x.shape()));
  check_adaptive({x.size(1), x.size(2), x.size(3)}, out_h_, out_w_);
  if (x.size(2) == out_h_ && x.size(3) == out_w_) return x;
  ops::Pool2dParams p;
  p.kernel_h = p.stride_h = x.size(2) / out_h_;
  p.kernel_w = p.stride_w = x.size(3) / out_w_;
  return avg_pool2d(x, p);
}

Shape AdaptiveAvgPool2d::output_shape(const Shape& in) const {
  check_adaptive(in, out_h_, out_w_);
  return {in[0], out_h_, out_w_};
}

std::string AdaptiveAvgPool2d::describe() const {
  return "AdaptiveAvgPool2d(" + std::to_string(out_h_) + "x" + std::to_string(out_w_) + ")";
}

Tensor Flatten::forward(const Tensor& x) { return flatten(x); }

Shape Flatten::output_shape(const Shape& in) const { return {shape_numel(in)}; }

Dropout::Dropout(float p) : p_(p) {
  EPOCH_CHECK(p >= 0.0f && p < 1.0f, "Dropout rate must be in [0, 1), got ", p);
}

Tensor Dropout::forward(const Tensor& x) { return dropout(x, p_, is_training(), seed_, key_); }

std::string Dropout::describe() const {
  std::ostringstream os;
  os << "Dropout(" << p_ << ")";
  return os.str();
}

BatchNorm::BatchNorm(std::int64_t channels, float momentum, float eps, bool unbiased_running_var,
                     bool affine)
    : momentum_(momentum), eps_(eps), unbiased_running_var_(unbiased_running_var), affine_(affine) {
  weight = Tensor::full({channels}, 1.0f);
  bias = Tensor::zeros({channels});
  running_mean = Tensor::zeros({channels});
  running_var = Tensor::full({channels}, 1.0f);
  if (affine) {
    register_parameter("weight", &weight);
    register_parameter("bias", &bias);
  }
  register_buffer("running_mean", &running_mean);
  register_buffer("running_var", &running_var);
}

Tensor BatchNorm::forward(const Tensor& x) {
  if (!affine_ && weight.device() != x.device()) {  // constants, on the input's device
    weight = weight.to(x.device());
    bias = bias.to(x.device());
  }
  return batch_norm(x, weight, bias, running_mean, running_var, is_training(), momentum_, eps_,
                    unbiased_running_var_);
}

bool BatchNorm::eval_affine(Tensor& scale, Tensor& shift) const {
  if (is_training()) return false;
  const std::vector<float> gamma = weight.to_vector(), beta = bias.to_vector(),
                           mean = running_mean.to_vector(), var = running_var.to_vector();
  const auto c = static_cast<std::int64_t>(gamma.size());
  scale = Tensor::empty({c});
  shift = Tensor::empty({c});
  for (std::size_t k = 0; k < gamma.size(); ++k) {
    const double s = static_cast<double>(gamma[k]) /
                     std::sqrt(static_cast<double>(var[k]) + static_cast<double>(eps_));
    scale.f32()[k] = static_cast<float>(s);
    shift.f32()[k] = static_cast<float>(static_cast<double>(beta[k]) - mean[k] * s);
  }
  return true;
}

std::string BatchNorm::describe() const {
  return "BatchNorm(" + std::to_string(weight.size(0)) +
         (unbiased_running_var_ ? "" : ", biased running variance") +
         (affine_ ? ")" : ", no scale or shift)");
}

Tensor Lrn::forward(const Tensor& x) {
  if (!within_channel_) return lrn(x, params_);
  ops::Pool2dParams p;  // the window's mean, padded with zeros that count (Caffe's AVE pooling)
  p.kernel_h = p.kernel_w = params_.size;
  p.stride_h = p.stride_w = 1;
  p.pad_top = p.pad_bottom = p.pad_left = p.pad_right = (params_.size - 1) / 2;
  p.count_include_pad = true;
  const Tensor rx = to_row_major(x);
  const Tensor mean_sq = avg_pool2d(mul(rx, rx), p);
  return mul(rx, pow(affine(mean_sq, params_.alpha, 1.0f), -params_.beta));
}

std::string Lrn::describe() const {
  std::ostringstream os;
  os << "LRN(" << (within_channel_ ? "within channel, " : "") << "size " << params_.size
     << ", alpha " << params_.alpha << ", beta " << params_.beta;
  if (!within_channel_) os << ", k " << params_.k;
  os << ")";
  return os.str();
}

namespace {

/// Fills `p` (a parameter of `shape`, `name`) as `init` says, from the parameter's stream.
void fill(float* p, const Shape& shape, const std::string& name, const ParamInit& init,
          std::uint64_t seed) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  RandomStream rng(seed, hash_name(name));
  const auto truncated = [&rng](double mean, double std) {  // within 2 std of the mean
    for (;;) {
      const double z = rng.normal();
      if (z >= -2.0 && z <= 2.0) return static_cast<float>(mean + std * z);
    }
  };
  switch (init.kind) {
    case ParamInit::Kind::constant:
      std::fill_n(p, n, static_cast<float>(init.value));
      return;
    case ParamInit::Kind::uniform:
      for (std::int64_t i = 0; i < n; ++i)
        p[i] = rng.uniform(static_cast<float>(init.lo), static_cast<float>(init.hi));
      return;
    case ParamInit::Kind::normal:
      for (std::int64_t i = 0; i < n; ++i)
        p[i] = static_cast<float>(init.mean + init.std * rng.normal());
      return;
    case ParamInit::Kind::truncated_normal:
      for (std::int64_t i = 0; i < n; ++i) p[i] = truncated(init.mean, init.std);
      return;
    case ParamInit::Kind::variance_scaling: {
      // (OUT, IN, KH, KW) or (OUT, IN): fans as Keras and Caffe count them.
      const std::int64_t receptive = shape.size() >= 2 ? n / (shape[0] * shape[1]) : 1;
      const double fan_in = static_cast<double>(shape.size() >= 2 ? shape[1] * receptive : n);
      const double fan_out = static_cast<double>(shape[0] * receptive);
      const double fan = init.fan == ParamInit::Fan::in    ? fan_in
                         : init.fan == ParamInit::Fan::out ? fan_out
                                                           : (fan_in + fan_out) / 2.0;
      const double variance = init.scale / std::max(fan, 1.0);
      if (init.distribution == ParamInit::Distribution::uniform) {
        const float limit = static_cast<float>(std::sqrt(3.0 * variance));
        for (std::int64_t i = 0; i < n; ++i) p[i] = rng.uniform(-limit, limit);
      } else if (init.distribution == ParamInit::Distribution::normal) {
        const double std = std::sqrt(variance);
        for (std::int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(std * rng.normal());
      } else {
        const double std = std::sqrt(variance) / 0.87962566103423978;
        for (std::int64_t i = 0; i < n; ++i) p[i] = truncated(0.0, std);
      }
      return;
    }
  }
}

}  // namespace

std::string describe(const ParamInit& init) {
  std::ostringstream os;
  switch (init.kind) {
    case ParamInit::Kind::constant:
      os << "constant " << init.value;
      break;
    case ParamInit::Kind::uniform:
      os << "uniform [" << init.lo << ", " << init.hi << ")";
      break;
    case ParamInit::Kind::normal:
      os << "normal (mean " << init.mean << ", std " << init.std << ")";
      break;
    case ParamInit::Kind::truncated_normal:
      os << "truncated normal (mean " << init.mean << ", std " << init.std << ")";
      break;
    case ParamInit::Kind::variance_scaling:
      os << "variance scaling " << init.scale << " (fan "
         << (init.fan == ParamInit::Fan::in ? "in" : init.fan == ParamInit::Fan::out ? "out" : "average")
         << ", "
         << (init.distribution == ParamInit::Distribution::uniform  ? "uniform"
             : init.distribution == ParamInit::Distribution::normal ? "normal"
                                                                    : "truncated normal")
         << ")";
      break;
  }
  return os.str();
}

void initialize(Module& module, std::uint64_t seed) {
  const std::vector<std::pair<std::string, ParamInit>> inits = module.param_inits();
  for (auto& [name, t] : module.parameters()) {
    Tensor host = Tensor::empty(t.shape());
    float* p = host.f32();
    const ParamInit* own = nullptr;
    for (const auto& [path, init] : inits)
      if (path == name) own = &init;
    if (own != nullptr) {
      fill(p, t.shape(), name, *own, seed);
      Tensor target = t;
      target.copy_from(host);
      continue;
    }
    const std::string& path = name;  // (clang 14 cannot capture a structured binding)
    const auto ends_with = [&path](std::string_view end) {
      return path.size() >= end.size() &&
             path.compare(path.size() - end.size(), end.size(), end) == 0;
    };
    if (ends_with("bias") || ends_with("_peephole")) {
      std::fill_n(p, host.numel(), 0.0f);
    } else if (t.ndim() == 1) {
      std::fill_n(p, host.numel(), 1.0f);
    } else {
      const std::int64_t receptive = t.numel() / (t.size(0) * t.size(1));
      const double fan_in = static_cast<double>(t.size(1) * receptive);
      const double fan_out = static_cast<double>(t.size(0) * receptive);
      const float bound = static_cast<float>(std::sqrt(6.0 / (fan_in + fan_out)));
      RandomStream rng(seed, hash_name(name));
      for (std::int64_t i = 0; i < host.numel(); ++i) p[i] = rng.uniform(-bound, bound);
    }
    Tensor target = t;
    target.copy_from(host);
  }
  const std::function<void(Module&)> adjust = [&](Module& m) {
    m.adjust_initial_parameters();
    for (const auto& [name, child] : m.children()) adjust(*child);
  };
  adjust(module);
}

void jitter_ulp(Module& module, std::uint64_t seed) {
  for (auto& [name, t] : module.parameters()) {
    Tensor host = t.to(Device::cpu()).contiguous();
    float* p = host.f32();
    const RandomStream rng(seed, hash_name(name) ^ 0x5eed);
    for (std::int64_t i = 0; i < host.numel(); ++i) {
      const bool up = (rng.bits_at(static_cast<std::uint64_t>(i)) & 1u) != 0;
      p[i] = std::nextafter(p[i], up ? HUGE_VALF : -HUGE_VALF);
    }
    Tensor target = t;
    target.copy_from(host);
  }
}

}  // namespace epoch::nn
