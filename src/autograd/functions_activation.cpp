// Differentiable activations and dropout.
// Forward through ops/, backward closures over detached saved tensors.
#include "epoch/autograd/functions.h"

#include "epoch/autograd/autograd.h"
#include "epoch/ops/activation.h"
#include "epoch/ops/dropout.h"

namespace epoch {

using autograd::needs_grad;
using autograd::record;
using Grads = std::vector<Tensor>;

Tensor dropout(const Tensor& x, float p, bool training, std::uint64_t seed, std::uint64_t key) {
  // A bad rate is an error in evaluation too, not only once training starts.
  EPOCH_CHECK(p >= 0.0f && p < 1.0f, "dropout: p = ", p, " is outside [0, 1)");
  if (!training || p == 0.0f) return x;
  ops::DropoutResult r = ops::dropout_forward(x, p, seed, key);
  if (needs_grad(x))
    record(r.y, "dropout", {x}, [mask = r.mask](const Tensor& dy) -> Grads {
      return {ops::dropout_backward(dy, mask)};
    });
  return r.y;
}

Tensor relu(const Tensor& x) {
  Tensor y = ops::relu_forward(x);
  if (needs_grad(x))
    record(y, "relu", {x}, [xs = x.detach()](const Tensor& dy) -> Grads {
      return {ops::relu_backward(dy, xs)};
    });
  return y;
}

Tensor sigmoid(const Tensor& x) {
  Tensor y = ops::sigmoid_forward(x);
  if (needs_grad(x))
    record(y, "sigmoid", {x}, [ys = y.detach()](const Tensor& dy) -> Grads {
      return {ops::sigmoid_backward(dy, ys)};
    });
  return y;
}

Tensor tanh(const Tensor& x) {
  Tensor y = ops::tanh_forward(x);
  if (needs_grad(x))
    record(y, "tanh", {x}, [ys = y.detach()](const Tensor& dy) -> Grads {
      return {ops::tanh_backward(dy, ys)};
    });
  return y;
}

Tensor hard_sigmoid(const Tensor& x, float slope, float offset) {
  Tensor y = ops::hard_sigmoid_forward(x, slope, offset);
  if (needs_grad(x))
    record(y, "hard_sigmoid", {x}, [xs = x.detach(), slope, offset](const Tensor& dy) -> Grads {
      return {ops::hard_sigmoid_backward(dy, xs, slope, offset)};
    });
  return y;
}

Tensor clip(const Tensor& x, float lo, float hi) {
  Tensor y = ops::clip_forward(x, lo, hi);
  if (needs_grad(x))
    record(y, "clip", {x}, [xs = x.detach(), lo, hi](const Tensor& dy) -> Grads {
      return {ops::clip_backward(dy, xs, lo, hi)};
    });
  return y;
}

}  // namespace epoch
