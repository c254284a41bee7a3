// Differentiable dense layer, matmul and bias add.
// Forward through ops/, backward closures over detached saved tensors.
#include "epoch/autograd/autograd.h"
#include "epoch/autograd/functions.h"
#include "epoch/ops/activation.h"
#include "epoch/ops/linear.h"

namespace epoch {

using autograd::needs_grad;
using autograd::record;
using Grads = std::vector<Tensor>;

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b, bool relu, ReluGrad relu_grad) {
  Tensor y = ops::linear_forward(x, w, b, relu);
  if (needs_grad(x, w) || (b.defined() && b.requires_grad())) {
    const bool has_bias = b.defined();
    const bool need_dx = x.requires_grad();
    // A fused ReLU's gradient comes from y: y > 0 exactly where x w^T + b > 0 (unless the
    // pooling after it applies it).
    const bool relu_here = relu && relu_grad == ReluGrad::in_layer;
    record(y, "linear", {x, w, b},
           [xs = x.detach(), ws = w.detach(), ys = relu_here ? y.detach() : Tensor(), has_bias,
            need_dx, relu_here](const Tensor& dy) -> Grads {
             const Tensor dz = relu_here ? ops::relu_backward(dy, ys) : dy;
             // dw straight into the weight's gradient buffer where a training step left it to
             // be replaced (an undefined gradient then tells backward it is there already)
             const Tensor dw_into = autograd::gradient_destination(1, ws);
             ops::LinearGrads g = ops::linear_backward(dz, xs, ws, has_bias, need_dx, dw_into);
             return {g.dx, dw_into.defined() ? Tensor() : g.dw, g.db};
           });
  }
  return y;
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  Tensor y = ops::matmul(a, b);
  if (needs_grad(a, b))
    record(y, "matmul", {a, b},
           [as = a.detach(), bs = b.detach(), need_a = a.requires_grad(),
            need_b = b.requires_grad()](const Tensor& dy) -> Grads {
             return {need_a ? ops::matmul(dy, bs, false, true) : Tensor(),
                     need_b ? ops::matmul(as, dy, true, false) : Tensor()};
           });
  return y;
}

Tensor bias_add(const Tensor& x, const Tensor& b) {
  Tensor y = ops::bias_add_forward(x, b);
  if (needs_grad(x, b))
    record(y, "bias_add", {x, b}, [](const Tensor& dy) -> Grads {
      return {dy, ops::bias_add_backward(dy)};
    });
  return y;
}

}  // namespace epoch
