// Differentiable batch norm and local response normalization.
// Forward through ops/, backward closures over detached saved tensors.
#include "epoch/autograd/functions.h"

#include "epoch/autograd/autograd.h"
#include "epoch/ops/norm.h"

namespace epoch {

using autograd::needs_grad;
using autograd::record;
using Grads = std::vector<Tensor>;

Tensor batch_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& running_mean,
                  Tensor& running_var, bool training, float momentum, float eps,
                  bool unbiased_running_var) {
  ops::BatchNormResult r = ops::batch_norm_forward(x, gamma, beta, running_mean, running_var,
                                                   training, momentum, eps, unbiased_running_var);
  Tensor y = r.y;
  if (needs_grad(x, gamma, beta)) {
    r.y = r.y.detach();
    record(y, "batch_norm", {x, gamma, beta},
           [xs = x.detach(), gs = gamma.detach(), r, training](const Tensor& dy) -> Grads {
             ops::BatchNormGrads g = ops::batch_norm_backward(dy, xs, gs, r, training);
             return {g.dx, g.dgamma, g.dbeta};
           });
  }
  return y;
}

Tensor lrn(const Tensor& x, const ops::LrnParams& p) {
  Tensor y = ops::lrn_forward(x, p);
  if (needs_grad(x))
    record(y, "lrn", {x}, [xs = x.detach(), ys = y.detach(), p](const Tensor& dy) -> Grads {
      return {ops::lrn_backward(dy, xs, ys, p)};
    });
  return y;
}

}  // namespace epoch
