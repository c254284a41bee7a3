// Differentiable broadcasting arithmetic and reductions.
// Forward through ops/, backward closures over detached saved tensors.
#include "epoch/autograd/functions.h"

#include "epoch/autograd/autograd.h"
#include "epoch/ops/elementwise.h"

namespace epoch {

using autograd::needs_grad;
using autograd::record;
using Grads = std::vector<Tensor>;

Tensor add(const Tensor& a, const Tensor& b) {
  Tensor y = ops::add(a, b);
  if (needs_grad(a, b))
    record(y, "add", {a, b}, [sa = a.shape(), sb = b.shape()](const Tensor& dy) -> Grads {
      return {ops::sum_to_shape(dy, sa), ops::sum_to_shape(dy, sb)};
    });
  return y;
}

Tensor sub(const Tensor& a, const Tensor& b) {
  Tensor y = ops::sub(a, b);
  if (needs_grad(a, b))
    record(y, "sub", {a, b}, [sa = a.shape(), sb = b.shape()](const Tensor& dy) -> Grads {
      return {ops::sum_to_shape(dy, sa), ops::affine_scalar(ops::sum_to_shape(dy, sb), -1.0f)};
    });
  return y;
}

Tensor mul(const Tensor& a, const Tensor& b) {
  Tensor y = ops::mul(a, b);
  if (needs_grad(a, b))
    record(y, "mul", {a, b}, [as = a.detach(), bs = b.detach()](const Tensor& dy) -> Grads {
      return {ops::sum_to_shape(ops::mul(dy, bs), as.shape()),
              ops::sum_to_shape(ops::mul(dy, as), bs.shape())};
    });
  return y;
}

Tensor div(const Tensor& a, const Tensor& b) {
  Tensor y = ops::div(a, b);
  if (needs_grad(a, b))
    record(y, "div", {a, b},
           [as = a.detach(), bs = b.detach(), ys = y.detach()](const Tensor& dy) -> Grads {
             Tensor da = ops::div(dy, bs);
             Tensor db = ops::affine_scalar(ops::mul(da, ys), -1.0f);
             return {ops::sum_to_shape(da, as.shape()), ops::sum_to_shape(db, bs.shape())};
           });
  return y;
}

Tensor affine(const Tensor& a, float s, float t) {
  Tensor y = ops::affine_scalar(a, s, t);
  if (needs_grad(a))
    record(y, "affine", {a}, [s](const Tensor& dy) -> Grads { return {ops::affine_scalar(dy, s)}; });
  return y;
}

Tensor pow(const Tensor& a, float p) {
  Tensor y = ops::pow_scalar(a, p);
  if (needs_grad(a))
    record(y, "pow", {a}, [as = a.detach(), p](const Tensor& dy) -> Grads {
      return {ops::mul(dy, ops::affine_scalar(ops::pow_scalar(as, p - 1.0f), p))};
    });
  return y;
}

Tensor sum(const Tensor& x) {
  Tensor y = ops::sum(x);
  if (needs_grad(x))
    record(y, "sum", {x}, [shape = x.shape(), device = x.device()](const Tensor& dy) -> Grads {
      return {ops::add(Tensor::zeros(shape, DType::f32, device), dy)};
    });
  return y;
}

Tensor mean(const Tensor& x) {
  Tensor y = ops::mean(x);
  if (needs_grad(x)) {
    const float inv_n = 1.0f / static_cast<float>(x.numel());
    record(y, "mean", {x}, [shape = x.shape(), device = x.device(), inv_n](const Tensor& dy) -> Grads {
      return {ops::add(Tensor::zeros(shape, DType::f32, device), ops::affine_scalar(dy, inv_n))};
    });
  }
  return y;
}

}  // namespace epoch
