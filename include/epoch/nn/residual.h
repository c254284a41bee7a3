// A residual block, ResNet's BasicBlock and Bottleneck: y = ReLU(main(x) + shortcut(x)). The
// main path is every child but "downsample", applied in order (as a chain: forward_in_order);
// the shortcut is the child "downsample" (a strided 1x1 convolution and batch norm) or, without
// one, the identity. Children are named as torchvision names them (conv1, bn1, ..., downsample),
// so parameter paths match (layer1.0.conv1.weight).
#pragma once

#include <memory>
#include <string>

#include "epoch/nn/module.h"

namespace epoch::nn {

class Residual : public Module {
 public:
  /// Appends a link of the main path, or sets the shortcut when `name` is "downsample".
  Residual& add(const std::string& name, std::shared_ptr<Module> module);
  Tensor forward(const Tensor& x) override;
  /// Keeps the activations blocked through the block, in training and inference: both paths,
  /// the sum and the ReLU, as stored (their gradients too, where both sides are blocked alike;
  /// a gradient of another layout is summed row-major).
  bool takes_blocked() const override { return true; }
  Tensor forward_in_chain(const Tensor& x, const ChainLink& link) override;
  Shape output_shape(const Shape& input) const override;
  std::int64_t flops(const Shape& input) const override;
  std::string describe() const override { return "Residual"; }

 private:
  Links main_;
  std::shared_ptr<Module> shortcut_;
};

}  // namespace epoch::nn
