// Recurrent layers: a convolutional LSTM cell that carries its state from one call to the next
// through the caller, so a model can loop over time, detach the state between windows of
// truncated backpropagation, and exchange signals with other layers at every step.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "epoch/nn/layers.h"
#include "epoch/nn/module.h"

namespace epoch::nn {

/// The state an LSTM carries between time steps: hidden h and cell c, both (N, hidden, H, W).
struct LstmState {
  Tensor h, c;
  /// The same values cut from the graph that made them (truncated backpropagation).
  LstmState detach() const { return {h.detach(), c.detach()}; }
};

struct ConvLstmOptions {
  std::int64_t kernel = 3;  // square, odd: "same" padding keeps H x W
  /// Per-pixel peephole weights (hidden, height, width) on the cell state for the input,
  /// forget and output gates (Shi et al. 2015); they fix the frame size. Start at zero.
  bool peepholes = false;
  std::int64_t height = 0, width = 0;  // the frame size, needed with peepholes
  /// The gates' activation: sigmoid, or hard_sigmoid (Keras's older default).
  Activation gate = Activation::sigmoid;
  /// The forget gate's bias after nn::initialize (the other biases start at 0): 1 is Keras's
  /// unit_forget_bias (Jozefowicz et al. 2015), so the cell remembers from the start.
  float forget_bias = 0.0f;
};

/// A convolutional LSTM (Shi et al. 2015). One convolution over the concatenation of the input
/// and the hidden state gives the four gate maps, in the order input, forget, output, cell:
///   i = gate(z_i + p_i * c), f = gate(z_f + p_f * c), g = tanh(z_g),
///   c' = f * c + i * g,      o = gate(z_o + p_o * c'), h' = o * tanh(c')
/// (p_* the peepholes, products elementwise). weight (4 hidden, in + hidden, k, k), bias
/// (4 hidden); with peepholes also input_peephole, forget_peephole, output_peephole (hidden,
/// H, W).
class ConvLstm2d : public Module {
 public:
  ConvLstm2d(std::int64_t in_channels, std::int64_t hidden_channels, const ConvLstmOptions& opts);

  /// Zeros for a batch of n frames of h x w on `device` (the state before the first step).
  LstmState zero_state(std::int64_t n, std::int64_t h, std::int64_t w, Device device) const;
  /// One time step: x (N, in, H, W) and the state before it; returns the state after it.
  LstmState step(const Tensor& x, const LstmState& state);
  /// A whole sequence x (N, T, in, H, W) from the zero state: the hidden states (N, T,
  /// hidden, H, W).
  Tensor forward(const Tensor& x) override;
  /// {x (N, T, in, H, W)} -> {hidden states}, as forward; {x_t, h, c} -> {h', c'}, one step.
  std::vector<Tensor> apply(const std::vector<Tensor>& inputs) override;
  /// (T, in, H, W) -> (T, hidden, H, W).
  Shape output_shape(const Shape& input) const override;
  /// The gate convolution's multiply-adds x 2 per time step (the elementwise gates are not
  /// counted, as for activations elsewhere).
  std::int64_t flops(const Shape& input) const override;
  std::string describe() const override;
  /// The forget gate's bias to ConvLstmOptions::forget_bias.
  void adjust_initial_parameters() override;

  std::int64_t in_channels() const { return in_; }
  std::int64_t hidden_channels() const { return hidden_; }

  Tensor weight, bias;
  Tensor input_peephole, forget_peephole, output_peephole;  // defined with peepholes

 private:
  void check_step_inputs(const Tensor& x, const LstmState& state) const;
  Tensor gate(const Tensor& z) const;

  std::int64_t in_, hidden_;
  ConvLstmOptions opts_;
};

}  // namespace epoch::nn
