// ConvLstm2d: the gate convolution and the cell update, written with the differentiable
// functions, so backward through time is autograd's and the state detaches like any tensor.
#include "epoch/nn/recurrent.h"

#include <algorithm>
#include <sstream>

#include "epoch/autograd/autograd.h"
#include "epoch/autograd/functions.h"

namespace epoch::nn {

ConvLstm2d::ConvLstm2d(std::int64_t in_channels, std::int64_t hidden_channels,
                       const ConvLstmOptions& opts)
    : in_(in_channels), hidden_(hidden_channels), opts_(opts) {
  EPOCH_CHECK(in_channels > 0 && hidden_channels > 0, "ConvLstm2d: channels must be positive, got ",
              in_channels, " and ", hidden_channels);
  EPOCH_CHECK(opts.kernel > 0 && opts.kernel % 2 == 1,
              "ConvLstm2d: the kernel must be odd (same padding), got ", opts.kernel);
  EPOCH_CHECK(opts.gate == Activation::sigmoid || opts.gate == Activation::hard_sigmoid,
              "ConvLstm2d: the gate activation is sigmoid or hard_sigmoid");
  weight =
      Tensor::zeros({4 * hidden_channels, in_channels + hidden_channels, opts.kernel, opts.kernel});
  bias = Tensor::zeros({4 * hidden_channels});
  register_parameter("weight", &weight);
  register_parameter("bias", &bias);
  if (opts.peepholes) {
    EPOCH_CHECK(opts.height > 0 && opts.width > 0,
                "ConvLstm2d: peepholes need the frame size, got ", opts.height, "x", opts.width);
    for (Tensor* p : {&input_peephole, &forget_peephole, &output_peephole})
      *p = Tensor::zeros({hidden_channels, opts.height, opts.width});
    register_parameter("input_peephole", &input_peephole);
    register_parameter("forget_peephole", &forget_peephole);
    register_parameter("output_peephole", &output_peephole);
  }
}

LstmState ConvLstm2d::zero_state(std::int64_t n, std::int64_t h, std::int64_t w,
                                 Device device) const {
  const Shape shape{n, hidden_, h, w};
  return {Tensor::zeros(shape).to(device), Tensor::zeros(shape).to(device)};
}

void ConvLstm2d::check_step_inputs(const Tensor& x, const LstmState& state) const {
  EPOCH_CHECK(x.ndim() == 4 && x.size(1) == in_, "ConvLstm2d: a step takes (N, ", in_,
              ", H, W) frames, got ", shape_str(x.shape()));
  const Shape expected{x.size(0), hidden_, x.size(2), x.size(3)};
  EPOCH_CHECK(state.h.defined() && state.c.defined() && state.h.shape() == expected &&
                  state.c.shape() == expected,
              "ConvLstm2d: the state must be ", shape_str(expected), ", got h ",
              state.h.defined() ? shape_str(state.h.shape()) : "undefined", " and c ",
              state.c.defined() ? shape_str(state.c.shape()) : "undefined");
  if (opts_.peepholes)
    EPOCH_CHECK(x.size(2) == opts_.height && x.size(3) == opts_.width,
                "ConvLstm2d: the peepholes are ", opts_.height, "x", opts_.width, ", the frames ",
                x.size(2), "x", x.size(3));
}

Tensor ConvLstm2d::gate(const Tensor& z) const {
  return opts_.gate == Activation::hard_sigmoid ? hard_sigmoid(z) : sigmoid(z);
}

LstmState ConvLstm2d::step(const Tensor& x, const LstmState& state) {
  check_step_inputs(x, state);
  ops::Conv2dParams p;
  p.pad_h = p.pad_w = opts_.kernel / 2;
  const Tensor z = conv2d(concat({x, state.h}, 1), weight, bias, p);
  const auto part = [&](std::int64_t k) { return slice(z, 1, k * hidden_, hidden_); };
  Tensor zi = part(0), zf = part(1), zo = part(2);
  if (opts_.peepholes) {
    zi = add(zi, mul(input_peephole, state.c));
    zf = add(zf, mul(forget_peephole, state.c));
  }
  const Tensor i = gate(zi), f = gate(zf), g = epoch::tanh(part(3));
  const Tensor c = add(mul(f, state.c), mul(i, g));
  if (opts_.peepholes) zo = add(zo, mul(output_peephole, c));
  const Tensor h = mul(gate(zo), epoch::tanh(c));
  return {h, c};
}

Tensor ConvLstm2d::forward(const Tensor& x) {
  EPOCH_CHECK(x.ndim() == 5 && x.size(2) == in_, "ConvLstm2d: a sequence is (N, T, ", in_,
              ", H, W), got ", shape_str(x.shape()));
  const std::int64_t n = x.size(0), t_steps = x.size(1), h = x.size(3), w = x.size(4);
  LstmState state = zero_state(n, h, w, x.device());
  std::vector<Tensor> hidden;
  hidden.reserve(static_cast<std::size_t>(t_steps));
  for (std::int64_t t = 0; t < t_steps; ++t) {
    state = step(reshape(slice(x, 1, t, 1), {n, in_, h, w}), state);
    hidden.push_back(reshape(state.h, {n, 1, hidden_, h, w}));
  }
  return concat(hidden, 1);
}

std::vector<Tensor> ConvLstm2d::apply(const std::vector<Tensor>& inputs) {
  if (inputs.size() == 1) return {forward(inputs[0])};
  EPOCH_CHECK(inputs.size() == 3, "ConvLstm2d takes {sequence} or {x, h, c}, got ", inputs.size(),
              " inputs");
  const LstmState next = step(inputs[0], {inputs[1], inputs[2]});
  return {next.h, next.c};
}

Shape ConvLstm2d::output_shape(const Shape& input) const {
  EPOCH_CHECK(input.size() == 4 && input[1] == in_, "ConvLstm2d expects a per-sample (T, ", in_,
              ", H, W) input, got ", shape_str(input));
  return {input[0], hidden_, input[2], input[3]};
}

std::int64_t ConvLstm2d::flops(const Shape& input) const {
  const Shape out = output_shape(input);
  return 2 * out[0] * 4 * hidden_ * out[2] * out[3] * (in_ + hidden_) * opts_.kernel * opts_.kernel;
}

void ConvLstm2d::adjust_initial_parameters() {
  Tensor host = bias.to(Device::cpu()).contiguous();
  std::fill_n(host.f32() + hidden_, hidden_, opts_.forget_bias);  // order i, f, o, g
  bias.copy_from(host);
}

std::string ConvLstm2d::describe() const {
  std::ostringstream os;
  os << "ConvLSTM2d(" << in_ << " -> " << hidden_ << ", " << opts_.kernel << "x" << opts_.kernel;
  if (opts_.peepholes) os << ", peepholes " << opts_.height << "x" << opts_.width;
  if (opts_.gate == Activation::hard_sigmoid) os << ", hard sigmoid gates";
  os << ")";
  return os.str();
}

}  // namespace epoch::nn
