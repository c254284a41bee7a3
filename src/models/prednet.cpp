// PredNet's time loop (see prednet.h): per step, the representations top-down, then the
// predictions and error units bottom-up; the loss terms of each step as one (N, T, K) tensor.
#include "epoch/models/prednet.h"

#include <sstream>

#include "epoch/autograd/autograd.h"
#include "epoch/autograd/functions.h"

namespace epoch::models {
namespace {

// The mean over everything but the batch: (N, ...) -> (N, 1).
Tensor per_sample_mean(const Tensor& x) {
  const std::int64_t n = x.size(0), d = x.numel() / n;
  return matmul(reshape(x, {n, d}), Tensor::full({d, 1}, 1.0f / static_cast<float>(d), x.device()));
}

ops::Conv2dParams same_padding(std::int64_t k, bool relu) {
  ops::Conv2dParams p;
  p.pad_h = p.pad_w = k / 2;
  p.relu = relu;
  return p;
}

}  // namespace

PredNet::PredNet(ModelSpec spec, const PredNetConfig& config)
    : Model(std::move(spec)), config_(config) {
  PredNetConfig& c = config_;
  const auto layers = static_cast<std::int64_t>(c.stack.size());
  EPOCH_CHECK(layers >= 1, "PredNet: at least one layer");
  if (c.r_stack.empty()) c.r_stack = c.stack;
  EPOCH_CHECK(c.r_stack.size() == c.stack.size(), "PredNet: ", c.stack.size(), " layers but ",
              c.r_stack.size(), " representation sizes");
  for (std::size_t l = 0; l < c.stack.size(); ++l)
    EPOCH_CHECK(c.stack[l] > 0 && c.r_stack[l] > 0, "PredNet: layer ", l,
                " needs positive channel counts");
  const std::int64_t scale = std::int64_t{1} << (layers - 1);
  EPOCH_CHECK(c.height > 0 && c.width > 0 && c.height % scale == 0 && c.width % scale == 0,
              "PredNet: the frame size ", c.height, "x", c.width, " must be divisible by ", scale,
              " for ", layers, " layers");
  if (c.loss == PredNetLoss::error_units)
    EPOCH_CHECK(static_cast<std::int64_t>(c.layer_weights.size()) == layers, "PredNet: ", layers,
                " layers but ", c.layer_weights.size(), " layer weights");
  for (std::int64_t l = 0; l < layers; ++l) {
    const std::int64_t h = c.height >> l, w = c.width >> l;
    nn::ConvLstmOptions o;
    o.kernel = c.kernel;
    o.peepholes = c.peepholes;
    o.height = h;
    o.width = w;
    o.gate = c.gate;
    o.forget_bias = c.forget_bias;
    const std::int64_t in = 2 * c.stack[l] + (l + 1 < layers ? c.r_stack[l + 1] : 0);
    r_.push_back(std::make_shared<nn::ConvLstm2d>(in, c.r_stack[l], o));
    register_module(std::string("r").append(std::to_string(l)), r_.back());
  }
  for (std::int64_t l = 0; l < layers; ++l) {
    ahat_.push_back(nn::Conv2d::same(c.r_stack[l], c.stack[l], c.kernel));
    register_module(std::string("ahat").append(std::to_string(l)), ahat_.back());
  }
  for (std::int64_t l = 0; l + 1 < layers; ++l) {
    a_.push_back(nn::Conv2d::same(2 * c.stack[l], c.stack[l + 1], c.kernel));
    register_module(std::string("a").append(std::to_string(l)), a_.back());
  }
}

std::int64_t PredNet::terms_per_step() const {
  return config_.loss == PredNetLoss::error_units ? layers() : 1;
}

void PredNet::check_input(const Tensor& x) const {
  EPOCH_CHECK(x.ndim() == 5 && x.size(2) == config_.stack[0] && x.size(3) == config_.height &&
                  x.size(4) == config_.width,
              "PredNet: sequences are (N, T, ", config_.stack[0], ", ", config_.height, ", ",
              config_.width, "), got ", shape_str(x.shape()));
}

std::vector<PredNet::LayerState> PredNet::zero_state(std::int64_t n, Device device) const {
  std::vector<LayerState> s;
  for (std::int64_t l = 0; l < layers(); ++l) {
    const std::int64_t h = config_.height >> l, w = config_.width >> l;
    s.push_back(
        {r_[static_cast<std::size_t>(l)]->zero_state(n, h, w, device),
         Tensor::zeros({n, 2 * config_.stack[static_cast<std::size_t>(l)], h, w}).to(device)});
  }
  return s;
}

PredNet::Outputs PredNet::run(const Tensor& x) {
  check_input(x);
  const std::int64_t n = x.size(0), steps = x.size(1), L = layers();
  const std::int64_t c0 = config_.stack[0], h0 = config_.height, w0 = config_.width;
  const bool carried = config_.carry_state && !carried_.empty() && carried_[0].e.size(0) == n &&
                       carried_[0].e.device() == x.device();
  std::vector<LayerState> s = carried ? carried_ : zero_state(n, x.device());
  started_fresh_ = !carried;
  const ops::Conv2dParams conv = same_padding(config_.kernel, false);
  const ops::Conv2dParams conv_relu = same_padding(config_.kernel, true);
  std::vector<Tensor> predictions, terms;
  for (std::int64_t t = 0; t < steps; ++t) {
    // Top-down: R_l from E_l of the step before and the upsampled R_{l+1} of this step.
    Tensor r_up;
    for (std::int64_t l = L - 1; l >= 0; --l) {
      LayerState& layer = s[static_cast<std::size_t>(l)];
      const Tensor in = l + 1 < L ? concat({layer.e, r_up}, 1) : layer.e;
      layer.r = r_[static_cast<std::size_t>(l)]->step(in, layer.r);
      if (l > 0) r_up = upsample_nearest2x(layer.r.h);
    }
    // Bottom-up: predictions, error units and the next layer's input from the frame.
    Tensor a = reshape(slice(x, 1, t, 1), {n, c0, h0, w0});
    std::vector<Tensor> step_terms;
    for (std::int64_t l = 0; l < L; ++l) {
      const nn::Conv2d& ahat_conv = *ahat_[static_cast<std::size_t>(l)];
      const Tensor& r = s[static_cast<std::size_t>(l)].r.h;
      const Tensor ahat = l == 0
                              ? clip(conv2d(r, ahat_conv.weight, ahat_conv.bias, conv), 0.0f, 1.0f)
                              : conv2d(r, ahat_conv.weight, ahat_conv.bias, conv_relu);
      Tensor& e = s[static_cast<std::size_t>(l)].e;
      e = concat({relu(sub(a, ahat)), relu(sub(ahat, a))}, 1);
      if (l == 0) {
        predictions.push_back(reshape(ahat, {n, 1, c0, h0, w0}));
        if (config_.loss == PredNetLoss::next_frame_mse) {
          const Tensor d = sub(ahat, a);
          step_terms.push_back(per_sample_mean(mul(d, d)));
        }
      }
      if (config_.loss == PredNetLoss::error_units) step_terms.push_back(per_sample_mean(e));
      if (l + 1 < L) {
        const nn::Conv2d& a_conv = *a_[static_cast<std::size_t>(l)];
        a = max_pool2d(conv2d(e, a_conv.weight, a_conv.bias, conv_relu), ops::Pool2dParams{});
      }
    }
    const Tensor step = step_terms.size() == 1 ? step_terms[0] : concat(step_terms, 1);
    terms.push_back(reshape(step, {n, 1, terms_per_step()}));
  }
  if (config_.carry_state) {
    carried_.clear();
    for (const LayerState& layer : s) carried_.push_back({layer.r.detach(), layer.e.detach()});
  }
  return {concat(predictions, 1), concat(terms, 1)};
}

Tensor PredNet::forward(const Tensor& x) { return run(x).terms; }

Tensor PredNet::loss(const Tensor& output, const Tensor& /*x*/, const Tensor& /*labels*/) const {
  const std::int64_t k = terms_per_step();
  EPOCH_CHECK(output.ndim() == 3 && output.size(2) == k, "PredNet: loss terms are (N, T, ", k,
              "), got ", shape_str(output.shape()));
  const std::int64_t n = output.size(0), steps = output.size(1);
  const std::int64_t first = started_fresh_ ? 1 : 0;
  EPOCH_CHECK(steps > first, "PredNet: a sequence started from zeros needs at least 2 frames, got ",
              steps);
  Tensor weights = Tensor::empty({steps, k});
  for (std::int64_t t = 0; t < steps; ++t)
    for (std::int64_t j = 0; j < k; ++j) {
      const float time = t < first ? 0.0f : 1.0f / static_cast<float>(steps - first);
      const float layer = config_.loss == PredNetLoss::error_units
                              ? config_.layer_weights[static_cast<std::size_t>(j)]
                              : 1.0f;
      weights.f32()[t * k + j] = time * layer;
    }
  return affine(sum(mul(output, weights.to(output.device()))), 1.0f / static_cast<float>(n));
}

void PredNet::reset_state() { carried_.clear(); }

Shape PredNet::output_shape(const Shape& input) const {
  EPOCH_CHECK(input.size() == 4 && input[1] == config_.stack[0] && input[2] == config_.height &&
                  input[3] == config_.width,
              "PredNet expects a per-sample (T, ", config_.stack[0], ", ", config_.height, ", ",
              config_.width, ") input, got ", shape_str(input));
  return {input[0], terms_per_step()};
}

std::int64_t PredNet::flops(const Shape& input) const {
  output_shape(input);  // checks the input
  const std::int64_t steps = input[0];
  std::int64_t per_step = 0;
  for (std::int64_t l = 0; l < layers(); ++l) {
    const auto i = static_cast<std::size_t>(l);
    const std::int64_t h = config_.height >> l, w = config_.width >> l;
    per_step += r_[i]->flops({1, r_[i]->in_channels(), h, w});
    per_step += ahat_[i]->flops({config_.r_stack[i], h, w});
    if (l + 1 < layers()) per_step += a_[i]->flops({2 * config_.stack[i], h, w});
  }
  return steps * per_step;
}

std::string PredNet::describe() const {
  std::ostringstream os;
  os << "PredNet(stack";
  for (std::int64_t c : config_.stack) os << " " << c;
  os << ", " << config_.height << "x" << config_.width;
  if (config_.peepholes) os << ", peepholes";
  os << (config_.loss == PredNetLoss::error_units ? ", error units" : ", next-frame MSE") << ")";
  return os.str();
}

std::shared_ptr<PredNet> build_prednet(ModelSpec spec, const PredNetConfig& config) {
  return std::make_shared<PredNet>(std::move(spec), config);
}

}  // namespace epoch::models
