// Differentiable reshapes, concat, slice and upsampling.
// Forward through ops/, backward closures over detached saved tensors.
#include "epoch/autograd/autograd.h"
#include "epoch/autograd/functions.h"
#include "epoch/ops/elementwise.h"
#include "epoch/ops/layout.h"
#include "epoch/ops/shape_ops.h"

namespace epoch {

using autograd::needs_grad;
using autograd::record;
using Grads = std::vector<Tensor>;

Tensor reshape(const Tensor& x, const Shape& shape) {
  Tensor y = x.contiguous().view(shape);
  if (needs_grad(x))
    record(y, "reshape", {x}, [in_shape = x.shape()](const Tensor& dy) -> Grads {
      return {dy.contiguous().view(in_shape)};
    });
  return y;
}

Tensor to_row_major(const Tensor& x) {
  if (!x.is_blocked()) return x;
  Tensor y = ops::to_channel_block(x, 0);
  if (needs_grad(x))
    record(y, "to_row_major", {x}, [block = x.channel_block()](const Tensor& dy) -> Grads {
      return {ops::to_channel_block(dy, block)};
    });
  return y;
}

Tensor flatten(const Tensor& x) {
  EPOCH_CHECK(x.ndim() >= 1, "flatten of a scalar");
  return reshape(x, {x.size(0), -1});
}

Tensor concat(const std::vector<Tensor>& xs, std::int64_t dim) {
  Tensor y = ops::concat(xs, dim);
  bool any = false;
  for (const Tensor& x : xs) any = any || x.requires_grad();
  if (any && autograd::grad_enabled()) {
    std::vector<std::int64_t> sizes;
    for (const Tensor& x : xs) sizes.push_back(x.size(dim));
    record(y, "concat", xs, [sizes, dim](const Tensor& dy) -> Grads {
      Grads g;
      std::int64_t start = 0;
      for (std::int64_t s : sizes) {
        g.push_back(ops::slice(dy, dim, start, s));
        start += s;
      }
      return g;
    });
  }
  return y;
}

Tensor slice(const Tensor& x, std::int64_t dim, std::int64_t start, std::int64_t length) {
  Tensor y = ops::slice(x, dim, start, length);
  if (needs_grad(x))
    record(y, "slice", {x}, [shape = x.shape(), dim, start](const Tensor& dy) -> Grads {
      return {ops::slice_backward(dy, shape, dim, start)};
    });
  return y;
}

Tensor upsample_nearest2x(const Tensor& x) {
  Tensor y = ops::upsample_nearest2x_forward(x);
  if (needs_grad(x))
    record(y, "upsample_nearest2x", {x},
           [](const Tensor& dy) -> Grads { return {ops::upsample_nearest2x_backward(dy)}; });
  return y;
}

}  // namespace epoch
