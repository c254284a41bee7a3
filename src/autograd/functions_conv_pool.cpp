// Differentiable convolution and pooling.
// Forward through ops/, backward closures over detached saved tensors.
#include "epoch/autograd/autograd.h"
#include "epoch/autograd/functions.h"
#include "epoch/ops/activation.h"
#include "epoch/ops/conv2d.h"
#include "epoch/ops/pool.h"

namespace epoch {

using autograd::needs_grad;
using autograd::record;
using Grads = std::vector<Tensor>;

Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& b, const ops::Conv2dParams& p,
              ReluGrad relu_grad) {
  const bool grad = needs_grad(x, w) || (b.defined() && b.requires_grad());
  ops::Conv2dParams fp = p;
  fp.inference = !grad;
  Tensor y = ops::conv2d_forward(x, w, b, fp);
  if (grad) {
    const bool has_bias = b.defined();
    const bool need_dx = x.requires_grad();
    // A fused ReLU's gradient comes from y: y > 0 exactly where conv + b > 0 (unless the
    // pooling after it applies it).
    const bool relu_here = p.relu && relu_grad == ReluGrad::in_layer;
    record(y, "conv2d", {x, w, b},
           [xs = x.detach(), ws = w.detach(), ys = relu_here ? y.detach() : Tensor(), has_bias,
            need_dx, relu_here, p](const Tensor& dy) -> Grads {
             const Tensor dz = relu_here ? ops::relu_backward(dy, ys) : dy;
             ops::Conv2dGrads g = ops::conv2d_backward(dz, xs, ws, has_bias, p, need_dx);
             return {g.dx, g.dw, g.db};
           });
  }
  return y;
}

Tensor max_pool2d(const Tensor& x, const ops::Pool2dParams& p, bool through_relu) {
  ops::MaxPoolResult r = ops::max_pool2d_forward(x, p);
  Tensor y = r.y;
  if (needs_grad(x)) {
    r.y = r.y.detach();
    record(y, "max_pool2d", {x}, [xs = x.detach(), r, p, through_relu](const Tensor& dy) -> Grads {
      return {ops::max_pool2d_backward(dy, xs, r, p, through_relu)};
    });
  }
  return y;
}

Tensor avg_pool2d(const Tensor& x, const ops::Pool2dParams& p) {
  Tensor y = ops::avg_pool2d_forward(x, p);
  if (needs_grad(x))
    record(y, "avg_pool2d", {x}, [shape = x.shape(), p](const Tensor& dy) -> Grads {
      return {ops::avg_pool2d_backward(dy, shape, p)};
    });
  return y;
}

Tensor global_avg_pool2d(const Tensor& x) {
  Tensor y = ops::global_avg_pool2d_forward(x);
  if (needs_grad(x))
    record(y, "global_avg_pool2d", {x}, [shape = x.shape()](const Tensor& dy) -> Grads {
      return {ops::global_avg_pool2d_backward(dy, shape)};
    });
  return y;
}

}  // namespace epoch
