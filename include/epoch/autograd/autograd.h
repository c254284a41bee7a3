// Reverse-mode autograd. Each differentiable function records a Node holding a closure that
// maps the output's gradient to its inputs' gradients; backward() walks the nodes in reverse
// topological order. Closures save detached tensors only, so the graph has no cycles.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "epoch/tensor/tensor.h"

namespace epoch::autograd {

struct Node;

/// The autograd state of a tensor.
struct Meta {
  bool requires_grad = false;
  Tensor grad;  // leaves: accumulated across backward calls
  // A leaf whose grad holds stale values: the next contribution replaces them rather than adds
  // to them (a training step marks its parameters so instead of zeroing their gradients).
  bool grad_stale = false;
  std::shared_ptr<Node> node;  // the function that produced this tensor (null for a leaf)
};

/// Maps dy (the output's gradient) to one gradient per input (undefined = no gradient).
using BackwardFn = std::function<std::vector<Tensor>(const Tensor& dy)>;

struct Node {
  const char* name = "";
  std::vector<std::shared_ptr<Meta>> inputs;  // null where an input needs no gradient
  BackwardFn backward;
};

/// Whether operations record a graph on this thread (see NoGradGuard).
bool grad_enabled();

/// Disables graph recording for its scope (evaluation, optimizer updates).
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

/// True when recording is on and any of the tensors requires a gradient.
template <typename... Ts>
bool needs_grad(const Ts&... ts) {
  return grad_enabled() && (... || ts.requires_grad());
}

/// Makes `out` the result of a node over `inputs` with the given backward closure.
/// Call only when needs_grad(inputs...) is true. The closure must capture detached tensors.
void record(Tensor& out, const char* name, const std::vector<Tensor>& inputs, BackwardFn backward);

/// Inside a backward closure: the gradient buffer of the running node's input `input`, when
/// that input is a leaf whose buffer is stale (Meta::grad_stale) and has like's shape and
/// device, so that the closure writes the gradient straight into it instead of into a new
/// tensor that is then copied there. The buffer is no longer stale after this call: the closure
/// must overwrite all of it and return an undefined gradient for that input. Undefined
/// otherwise (outside a closure too): then the closure returns the gradient as usual.
Tensor gradient_destination(std::size_t input, const Tensor& like);

/// Called during backward with a leaf whose gradient is complete: every node of the graph that
/// feeds it has run, so nothing more will be added to it by this backward.
using LeafReadyFn = std::function<void(const Meta& leaf)>;

/// Back-propagates from root with upstream gradient dy (defaults to 1 for a scalar root).
/// `on_leaf_ready`, when given, is called once for each leaf the graph reaches, as soon as its
/// gradient is complete (leaves the graph does not reach are never named).
void backward(const Tensor& root, const Tensor& dy = Tensor(),
              const LeafReadyFn& on_leaf_ready = {});

}  // namespace epoch::autograd
