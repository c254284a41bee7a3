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
  ChainLink keep;
  keep.next_takes_blocked = true;
  const Tensor shortcut = !shortcut_                   ? x
                          : shortcut_->takes_blocked() ? shortcut_->forward_in_chain(x, keep)
                                                       : shortcut_->forward(to_row_major(x));
  // Without gradients the main path's last convolution adds the shortcut and applies the ReLU
  // itself (ChainLink::add); the shapes are checked first, as for the separate sum.
  const bool fuse = !autograd::grad_enabled();
  if (fuse) {
    const Shape per_sample(x.shape().begin() + 1, x.shape().end());
    const Shape main_shape = output_shape_in_order(main_, per_sample);
    const Shape short_shape(shortcut.shape().begin() + 1, shortcut.shape().end());
    EPOCH_CHECK(main_shape == short_shape, "Residual: the main path gives ", shape_str(main_shape),
                " per sample but the shortcut ", shape_str(short_shape));
  }
  // A downsample's output is this call's own: the sum may land in it.
  const bool own = shortcut_ != nullptr && shortcut.storage() != x.storage() &&
                   shortcut.storage().use_count() == 1;
  bool added = false;
  Tensor y = forward_in_order(main_, x, true, fuse ? &shortcut : nullptr, &added, own);
  if (!added) {
    EPOCH_CHECK(y.shape() == shortcut.shape(), "Residual: the main path gives ",
                shape_str(y.shape()), " but the shortcut ", shape_str(shortcut.shape()));
    y = relu(epoch::add(y, shortcut));  // as stored when both are blocked alike
  }
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
