// Graph recording and the backward walk; the autograd half of Tensor's interface.
#include "epoch/autograd/autograd.h"

#include <unordered_map>
#include <unordered_set>

#include "epoch/ops/elementwise.h"

namespace epoch {

bool Tensor::requires_grad() const { return meta_ && meta_->requires_grad; }

Tensor& Tensor::set_requires_grad(bool required) {
  EPOCH_CHECK(!meta_ || !meta_->node, "set_requires_grad on a non-leaf tensor");
  EPOCH_CHECK(!required || dtype_ == DType::f32, "only f32 tensors can require gradients");
  if (!meta_) meta_ = std::make_shared<autograd::Meta>();
  meta_->requires_grad = required;
  return *this;
}

Tensor Tensor::grad() const { return meta_ ? meta_->grad : Tensor(); }

void Tensor::set_grad(const Tensor& grad) {
  EPOCH_CHECK(!grad.defined() || grad.shape() == shape_, "set_grad: gradient shape ",
              shape_str(grad.shape()), " does not match ", shape_str(shape_));
  if (!meta_) meta_ = std::make_shared<autograd::Meta>();
  meta_->grad = grad;
}

void Tensor::zero_grad() {
  if (meta_ && meta_->grad.defined()) ops::fill_(meta_->grad, 0.0f);
}

void Tensor::backward() const { autograd::backward(*this, Tensor()); }
void Tensor::backward(const Tensor& dy) const { autograd::backward(*this, dy); }

Tensor Tensor::detach() const {
  Tensor t = *this;
  t.meta_.reset();
  return t;
}

namespace autograd {
namespace {
thread_local bool g_grad_enabled = true;
thread_local const Node* g_running = nullptr;  // the node whose backward closure runs

// Sets g_running for one closure call, and back to none however it ends.
class Running {
 public:
  explicit Running(const Node* node) { g_running = node; }
  ~Running() { g_running = nullptr; }
  Running(const Running&) = delete;
  Running& operator=(const Running&) = delete;
};

// Adds g into a leaf's gradient buffer (allocating it on first use; replacing it when stale).
void accumulate_leaf(Meta& meta, const Tensor& g) {
  if (meta.grad.defined() && meta.grad_stale) {
    meta.grad.copy_from(g);
    meta.grad_stale = false;
  } else if (meta.grad.defined()) {
    ops::axpy_(meta.grad, g, 1.0f);
  } else {
    meta.grad = g.clone();
  }
}

// Nodes reachable from root, ordered so that every node comes before the nodes it feeds from.
std::vector<Node*> topological_order(Node* root) {
  std::vector<Node*> order;
  std::unordered_set<Node*> visited;
  std::vector<std::pair<Node*, std::size_t>> stack{{root, 0}};
  visited.insert(root);
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next < node->inputs.size()) {
      const auto& meta = node->inputs[next++];
      Node* child = meta ? meta->node.get() : nullptr;
      if (child != nullptr && visited.insert(child).second) stack.emplace_back(child, 0);
    } else {
      order.push_back(node);
      stack.pop_back();
    }
  }
  return {order.rbegin(), order.rend()};
}
}  // namespace

bool grad_enabled() { return g_grad_enabled; }

Tensor gradient_destination(std::size_t input, const Tensor& like) {
  if (g_running == nullptr || input >= g_running->inputs.size()) return Tensor();
  Meta* meta = g_running->inputs[input].get();
  if (meta == nullptr || meta->node || !meta->grad_stale || !meta->grad.defined()) return Tensor();
  const Tensor& grad = meta->grad;
  if (grad.shape() != like.shape() || grad.dtype() != like.dtype() ||
      grad.device() != like.device() || !grad.is_contiguous())
    return Tensor();
  meta->grad_stale = false;
  return grad;
}

NoGradGuard::NoGradGuard() : previous_(g_grad_enabled) { g_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { g_grad_enabled = previous_; }

void record(Tensor& out, const char* name, const std::vector<Tensor>& inputs, BackwardFn backward) {
  auto node = std::make_shared<Node>();
  node->name = name;
  node->inputs.reserve(inputs.size());
  for (const Tensor& t : inputs)
    node->inputs.push_back(t.requires_grad() ? t.autograd_meta() : nullptr);
  node->backward = std::move(backward);
  auto meta = std::make_shared<Meta>();
  meta->requires_grad = true;
  meta->node = std::move(node);
  out.set_autograd_meta(std::move(meta));
}

void backward(const Tensor& root, const Tensor& dy, const LeafReadyFn& on_leaf_ready) {
  EPOCH_CHECK(root.requires_grad(), "backward() on a tensor that does not require grad");
  Tensor seed = dy;
  if (!seed.defined()) {
    EPOCH_CHECK(root.numel() == 1, "backward() without dy needs a scalar, got ",
                shape_str(root.shape()));
    seed = Tensor::full(root.shape(), 1.0f, root.device());
  }
  EPOCH_CHECK(seed.shape() == root.shape(), "backward(): dy shape ", shape_str(seed.shape()),
              " does not match ", shape_str(root.shape()));
  const std::shared_ptr<Meta>& root_meta = root.autograd_meta();
  if (!root_meta->node) {
    accumulate_leaf(*root_meta, seed);
    if (on_leaf_ready) on_leaf_ready(*root_meta);
    return;
  }
  NoGradGuard no_grad;
  const std::vector<Node*> order = topological_order(root_meta->node.get());
  // How many node inputs of this graph still feed each leaf; at zero its gradient is complete.
  std::unordered_map<Meta*, int> pending;
  if (on_leaf_ready)
    for (Node* node : order)
      for (const auto& meta : node->inputs)
        if (meta && !meta->node) ++pending[meta.get()];
  const auto input_done = [&](const std::shared_ptr<Meta>& meta) {
    if (!on_leaf_ready || !meta || meta->node) return;
    if (--pending[meta.get()] == 0) on_leaf_ready(*meta);
  };
  std::unordered_map<Node*, Tensor> grads;
  grads[root_meta->node.get()] = seed;
  for (Node* node : order) {
    auto it = grads.find(node);
    if (it == grads.end()) {  // nothing flows through this node: its leaves get nothing from it
      for (const auto& meta : node->inputs) input_done(meta);
      continue;
    }
    const Tensor g = std::move(it->second);
    grads.erase(it);
    EPOCH_CHECK(node->backward, "backward through the graph of '", node->name,
                "' a second time: its saved tensors were already freed");
    std::vector<Tensor> input_grads;
    {
      const Running running(node);
      input_grads = node->backward(g);
    }
    node->backward = nullptr;  // frees the saved tensors now
    EPOCH_CHECK(input_grads.size() == node->inputs.size(), "node '", node->name, "' returned ",
                input_grads.size(), " gradients for ", node->inputs.size(), " inputs");
    for (std::size_t i = 0; i < input_grads.size(); ++i) {
      const auto& meta = node->inputs[i];
      if (!meta) continue;
      if (!meta->node) {
        if (input_grads[i].defined()) accumulate_leaf(*meta, input_grads[i]);
        input_done(meta);
        continue;
      }
      if (!input_grads[i].defined()) continue;
      auto [slot, inserted] = grads.try_emplace(meta->node.get(), input_grads[i]);
      if (!inserted) slot->second = ops::add(slot->second, input_grads[i]);
    }
  }
}

}  // namespace autograd
}  // namespace epoch
