// Differentiable losses (mean over the batch).
// Forward through ops/, backward closures over detached saved tensors.
#include "epoch/autograd/autograd.h"
#include "epoch/autograd/functions.h"
#include "epoch/ops/elementwise.h"
#include "epoch/ops/loss.h"

namespace epoch {

using autograd::needs_grad;
using autograd::record;
using Grads = std::vector<Tensor>;

namespace {
/// A loss gradient scaled by the upstream gradient dy (one element). On the CPU dy is read
/// directly; on a GPU reading it would wait for the device, so the gradient is computed for
/// dy = 1 and multiplied by dy there (the same bits when dy is 1, as for a loss that is
/// the root of backward).
template <typename Backward>
Tensor scaled_by(const Tensor& dy, Backward&& backward_with_scale) {
  if (!dy.device().is_cuda()) return backward_with_scale(dy.item());
  return ops::mul(backward_with_scale(1.0f), dy.view({1}));
}
}  // namespace

Tensor softmax_cross_entropy(const Tensor& logits, const Tensor& labels) {
  ops::SoftmaxCrossEntropyResult r = ops::softmax_cross_entropy_forward(logits, labels);
  if (needs_grad(logits))
    record(r.loss, "softmax_cross_entropy", {logits},
           [probs = r.probs, ls = labels.detach()](const Tensor& dy) -> Grads {
             return {scaled_by(
                 dy, [&](float s) { return ops::softmax_cross_entropy_backward(s, probs, ls); })};
           });
  return r.loss;
}

Tensor bce_with_logits(const Tensor& logits, const Tensor& targets) {
  Tensor loss = ops::bce_with_logits_forward(logits, targets);
  if (needs_grad(logits))
    record(
        loss, "bce_with_logits", {logits},
        [xs = logits.detach(), ts = targets.detach()](const Tensor& dy) -> Grads {
          return {scaled_by(dy, [&](float s) { return ops::bce_with_logits_backward(s, xs, ts); })};
        });
  return loss;
}

Tensor mse_loss(const Tensor& x, const Tensor& target) {
  Tensor loss = ops::mse_forward(x, target);
  if (needs_grad(x))
    record(loss, "mse_loss", {x},
           [xs = x.detach(), ts = target.detach()](const Tensor& dy) -> Grads {
             return {scaled_by(dy, [&](float s) { return ops::mse_backward(s, xs, ts); })};
           });
  return loss;
}

Tensor l1_loss(const Tensor& x, const Tensor& target) {
  Tensor loss = ops::l1_forward(x, target);
  if (needs_grad(x))
    record(loss, "l1_loss", {x},
           [xs = x.detach(), ts = target.detach()](const Tensor& dy) -> Grads {
             return {scaled_by(dy, [&](float s) { return ops::l1_backward(s, xs, ts); })};
           });
  return loss;
}

}  // namespace epoch
