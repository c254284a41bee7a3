// Differentiable losses (mean over the batch).
// Forward through ops/, backward closures over detached saved tensors.
#include "epoch/autograd/functions.h"

#include "epoch/autograd/autograd.h"
#include "epoch/ops/loss.h"

namespace epoch {

using autograd::needs_grad;
using autograd::record;
using Grads = std::vector<Tensor>;

Tensor softmax_cross_entropy(const Tensor& logits, const Tensor& labels) {
  ops::SoftmaxCrossEntropyResult r = ops::softmax_cross_entropy_forward(logits, labels);
  if (needs_grad(logits))
    record(r.loss, "softmax_cross_entropy", {logits},
           [probs = r.probs, ls = labels.detach()](const Tensor& dy) -> Grads {
             return {ops::softmax_cross_entropy_backward(dy.item(), probs, ls)};
           });
  return r.loss;
}

Tensor bce_with_logits(const Tensor& logits, const Tensor& targets) {
  Tensor loss = ops::bce_with_logits_forward(logits, targets);
  if (needs_grad(logits))
    record(loss, "bce_with_logits", {logits},
           [xs = logits.detach(), ts = targets.detach()](const Tensor& dy) -> Grads {
             return {ops::bce_with_logits_backward(dy.item(), xs, ts)};
           });
  return loss;
}

Tensor mse_loss(const Tensor& x, const Tensor& target) {
  Tensor loss = ops::mse_forward(x, target);
  if (needs_grad(x))
    record(loss, "mse_loss", {x}, [xs = x.detach(), ts = target.detach()](const Tensor& dy) -> Grads {
      return {ops::mse_backward(dy.item(), xs, ts)};
    });
  return loss;
}

Tensor l1_loss(const Tensor& x, const Tensor& target) {
  Tensor loss = ops::l1_forward(x, target);
  if (needs_grad(x))
    record(loss, "l1_loss", {x}, [xs = x.detach(), ts = target.detach()](const Tensor& dy) -> Grads {
      return {ops::l1_backward(dy.item(), xs, ts)};
    });
  return loss;
}

}  // namespace epoch
