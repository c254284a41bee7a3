// PredNet (Lotter, Kreiman and Cox 2016): a predictive-coding video network. Each layer l
// keeps a representation R_l (a ConvLSTM), predicts its input A_l as Ahat_l = ReLU(conv(R_l))
// (layer 0: the next frame, clipped to [0, 1]), and passes the error units
// E_l = [ReLU(A_l - Ahat_l), ReLU(Ahat_l - A_l)] up, where A_{l+1} = MaxPool(ReLU(conv(E_l))).
// Per time step the representations update top-down from E_l of the step before and the
// upsampled R_{l+1}, then the errors flow bottom-up from the frame.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "epoch/models/zoo.h"
#include "epoch/nn/layers.h"
#include "epoch/nn/recurrent.h"

namespace epoch::models {

/// What a PredNet's loss is made of, per sample and time step (PredNet::forward's terms).
enum class PredNetLoss {
  error_units,     // the mean of each layer's error units E_l, weighted per layer (the paper's)
  next_frame_mse,  // the mean squared error of the predicted frame Ahat_0 against the frame
};

struct PredNetConfig {
  /// Channels of A_l and Ahat_l per layer; stack[0] is the frame's channel count.
  std::vector<std::int64_t> stack = {3, 48, 96, 192};
  /// Channels of R_l per layer (the ConvLSTMs' hidden state); empty: the same as stack.
  std::vector<std::int64_t> r_stack;
  std::int64_t kernel = 3;                 // every convolution's, square and odd
  std::int64_t height = 128, width = 160;  // the frame size, divisible by 2^(layers - 1)
  bool peepholes = false;                  // per-pixel peepholes in every ConvLSTM
  nn::Activation gate = nn::Activation::hard_sigmoid;  // the ConvLSTM gates' activation
  float forget_bias = 0.0f;  // the ConvLSTMs' forget-gate bias at initialization
  PredNetLoss loss = PredNetLoss::error_units;
  std::vector<float> layer_weights = {1.0f, 0.0f, 0.0f, 0.0f};  // error_units: one per layer
  /// Each call continues from the state the last one ended in, cut from its graph (truncated
  /// backpropagation through time over consecutive windows of one long sequence), until
  /// reset_state(). Otherwise every call starts from zeros.
  bool carry_state = false;
};

/// A PredNet for sequences x (N, T, C, H, W) of frames in [0, 1].
/// Children: r0..r{L-1} (nn::ConvLstm2d: R_l's input is E_l of the step before, then for l <
/// L-1 the upsampled R_{l+1}), ahat0..ahat{L-1} (nn::Conv2d R_l -> Ahat_l), a0..a{L-2}
/// (nn::Conv2d E_l -> A_{l+1}, before the pooling).
class PredNet : public Model {
 public:
  PredNet(ModelSpec spec, const PredNetConfig& config);

  struct Outputs {
    Tensor predictions;  // (N, T, C, H, W): Ahat_0 of each step, the frame predicted for it
    Tensor terms;        // (N, T, K): error_units: K = L layer means; next_frame_mse: K = 1
  };
  Outputs run(const Tensor& x);
  /// run(x).terms: what loss() weights.
  Tensor forward(const Tensor& x) override;
  /// The batch mean of sum over t and k of time_weight[t] * weight[k] * terms[n, t, k]: the
  /// step a call started from zeros gets weight 0 (its prediction saw no frame), the others
  /// 1 / (the number of those); weight[k] is layer_weights[k] (next_frame_mse: 1).
  Tensor loss(const Tensor& output, const Tensor& x, const Tensor& labels) const override;
  void reset_state() override;
  bool carries_state() const override { return config_.carry_state; }
  /// run(x).predictions.
  Tensor predict_frames(const Tensor& x) override { return run(x).predictions; }
  /// (T, C, H, W) -> (T, K).
  Shape output_shape(const Shape& input) const override;
  /// Every convolution's multiply-adds x 2 per sample (the gates, errors and pooling are not
  /// counted, as for activations elsewhere).
  std::int64_t flops(const Shape& input) const override;
  std::string describe() const override;

  const PredNetConfig& config() const { return config_; }
  std::int64_t layers() const { return static_cast<std::int64_t>(config_.stack.size()); }
  /// The number of loss terms per step (K above).
  std::int64_t terms_per_step() const;

 private:
  struct LayerState {
    nn::LstmState r;  // the representation's hidden and cell state
    Tensor e;         // the error units of the step before
  };
  void check_input(const Tensor& x) const;
  std::vector<LayerState> zero_state(std::int64_t n, Device device) const;

  PredNetConfig config_;
  std::vector<std::shared_ptr<nn::ConvLstm2d>> r_;
  std::vector<std::shared_ptr<nn::Conv2d>> ahat_, a_;
  std::vector<LayerState> carried_;  // carry_state: where the last call ended
  // Whether the last forward started from zeros (the loss then leaves its first step out).
  // Written by forward, read by loss, as Step::run calls them one after the other.
  bool started_fresh_ = true;
};

/// A PredNet model under `spec` (its input (T, C, H, W) and task) with `config`; throws
/// InvalidArgument for an inconsistent configuration (sizes not divisible, weights per layer).
std::shared_ptr<PredNet> build_prednet(ModelSpec spec, const PredNetConfig& config);

}  // namespace epoch::models
