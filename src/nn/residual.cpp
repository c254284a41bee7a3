// Residual blocks (see residual.h).
#include "epoch/nn/residual.h"

#include "epoch/autograd/autograd.h"
#include "epoch/autograd/functions.h"

namespace epoch::nn {

Residual& Residual::add(const std::string& name, std::shared_ptr<Module> module) {
  EPOCH_CHECK(module != nullptr, "Residual: no module for '", name, "'");
  register_module(name, module);
  if (name == "downsample")
    shortcut_ = std::move(module);
  else
    main_.emplace_back(name, std::move(module));
  return *this;
}

Tensor Residual::forward(const Tensor& x) {
  EPOCH_CHECK(!main_.empty(), "Residual: the block has no layers");
  const Tensor main = forward_in_order(main_, x);
  const Tensor shortcut = shortcut_ ? shortcut_->forward(x) : x;
  EPOCH_CHECK(main.shape() == shortcut.shape(), "Residual: the main path gives ",
              shape_str(main.shape()), " but the shortcut ", shape_str(shortcut.shape()));
  return relu(epoch::add(main, shortcut));
}

Tensor Residual::forward_in_chain(const Tensor& x, const ChainLink& link) {
  EPOCH_CHECK(!main_.empty(), "Residual: the block has no layers");
  const Tensor main = forward_in_order(main_, x, true);
  ChainLink keep;
  keep.next_takes_blocked = true;
  const Tensor shortcut = !shortcut_                   ? x
                          : shortcut_->takes_blocked() ? shortcut_->forward_in_chain(x, keep)
                                                       : shortcut_->forward(to_row_major(x));
  EPOCH_CHECK(main.shape() == shortcut.shape(), "Residual: the main path gives ",
              shape_str(main.shape()), " but the shortcut ", shape_str(shortcut.shape()));
  const Tensor y = relu(epoch::add(main, shortcut));  // as stored when both are blocked alike
  return link.next_takes_blocked ? y : to_row_major(y);
}

Shape Residual::output_shape(const Shape& input) const {
  const Shape out = output_shape_in_order(main_, input);
  const Shape shortcut = shortcut_ ? shortcut_->output_shape(input) : input;
  EPOCH_CHECK(out == shortcut, "Residual: the main path gives ", shape_str(out),
              " per sample but the shortcut ", shape_str(shortcut));
  return out;
}

std::int64_t Residual::flops(const Shape& input) const {
  return flops_in_order(main_, input) + (shortcut_ ? shortcut_->flops(input) : 0);
}

}  // namespace epoch::nn
