// Module bookkeeping: registration, recursive traversal by path, train/eval, device moves.
#include "epoch/nn/module.h"

#include <functional>
#include <string>
#include <vector>

#include "epoch/autograd/autograd.h"
#include "epoch/autograd/functions.h"
#include "epoch/tensor/random.h"
#include "epoch/tensor/sha256.h"

namespace epoch::nn {
namespace {
std::string join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}
}  // namespace

void Module::register_parameter(const std::string& name, Tensor* tensor) {
  EPOCH_CHECK(tensor != nullptr && tensor->defined(), "parameter '", name, "' is undefined");
  tensor->set_requires_grad(true);
  params_.emplace_back(name, tensor);
}

void Module::register_buffer(const std::string& name, Tensor* tensor) {
  EPOCH_CHECK(tensor != nullptr && tensor->defined(), "buffer '", name, "' is undefined");
  buffers_.emplace_back(name, tensor);
}

void Module::register_module(const std::string& name, std::shared_ptr<Module> module) {
  EPOCH_CHECK(module != nullptr, "child module '", name, "' is null");
  EPOCH_CHECK(!name.empty() && name.find('.') == std::string::npos,
              "module names are non-empty and hold no '.': '", name, "'");
  for (const auto& [existing, child] : children_)
    EPOCH_CHECK(existing != name, "a module named '", name, "' is already here");
  children_.emplace_back(name, std::move(module));
}

void Module::collect(const std::string& prefix, bool params, NamedTensors& out) const {
  for (const auto& [name, t] : params ? params_ : buffers_)
    out.emplace_back(join(prefix, name), *t);
  for (const auto& [name, child] : children_) child->collect(join(prefix, name), params, out);
}

void Module::set_param_init(const std::string& name, const ParamInit& init) {
  bool found = false;
  for (const auto& [own, t] : params_) found = found || own == name;
  EPOCH_CHECK(found, "no parameter '", name, "' to initialize in ", describe());
  inits_.emplace_back(name, init);
}

std::vector<std::pair<std::string, ParamInit>> Module::param_inits() const {
  std::vector<std::pair<std::string, ParamInit>> out = inits_;
  for (const auto& [name, child] : children_)
    for (auto& [path, init] : child->param_inits()) out.emplace_back(join(name, path), init);
  return out;
}

NamedTensors Module::parameters() const {
  NamedTensors out;
  collect("", true, out);
  return out;
}

NamedTensors Module::buffers() const {
  NamedTensors out;
  collect("", false, out);
  return out;
}

NamedTensors Module::state() const {
  NamedTensors out = parameters();
  collect("", false, out);
  return out;
}

std::int64_t Module::parameter_count() const {
  std::int64_t n = 0;
  for (const auto& [name, t] : parameters()) n += t.numel();
  return n;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

void Module::set_step_seed(std::uint64_t seed, std::uint64_t step) {
  set_step_seed_at("", seed, step);
}

void Module::set_step_seed_at(const std::string& path, std::uint64_t seed, std::uint64_t step) {
  on_step_seed(seed, mix64(hash_name(path), step));
  for (auto& [name, child] : children_) child->set_step_seed_at(join(path, name), seed, step);
}

void Module::rebind(const std::function<Tensor(const std::string&, const Tensor&)>& visit_param,
                    const std::function<Tensor(const std::string&, const Tensor&)>& visit_buffer) {
  std::function<void(Module&, const std::string&)> walk = [&](Module& m,
                                                              const std::string& prefix) {
    for (auto& [name, t] : m.params_) *t = visit_param(join(prefix, name), *t);
    for (auto& [name, t] : m.buffers_) *t = visit_buffer(join(prefix, name), *t);
    for (auto& [name, child] : m.children_) walk(*child, join(prefix, name));
  };
  walk(*this, "");
}

void Module::to(Device device) {
  rebind(
      [&](const std::string&, const Tensor& t) {
        Tensor moved = t.detach().to(device);
        if (moved.storage() == t.storage()) return t;
        moved.set_requires_grad(true);
        return moved;
      },
      [&](const std::string&, const Tensor& t) { return t.to(device); });
}

std::vector<Tensor> Module::apply(const std::vector<Tensor>& inputs) {
  EPOCH_CHECK(inputs.size() == 1, describe(), " takes one input, got ", inputs.size());
  return {forward(inputs[0])};
}

Sequential& Sequential::add(std::shared_ptr<Module> module) {
  return add(std::to_string(children().size()), std::move(module));
}

Sequential& Sequential::add(const std::string& name, std::shared_ptr<Module> module) {
  register_module(name, std::move(module));
  return *this;
}

Tensor forward_in_order(const Module& chain, const Tensor& x, bool keep_blocked) {
  return forward_in_order(chain.children(), x, keep_blocked);
}

Tensor forward_in_order(const Links& links, const Tensor& x, bool keep_blocked,
                        const Tensor* add_then_relu, bool* added, bool add_reusable) {
  if (added != nullptr) *added = false;
  Tensor h = x;
  bool relu_grad_pending = false;  // the link before fused a ReLU and left its gradient here
  for (std::size_t i = 0; i < links.size(); ++i) {
    Module& link = *links[i].second;
    if (h.is_blocked() && !link.takes_blocked()) h = to_row_major(h);
    Module::ChainLink hints;
    hints.through_relu = relu_grad_pending;
    relu_grad_pending = false;
    // Inference folds an evaluation batch norm into the convolution or dense layer before it
    // (weights scaled per output channel, bias shifted): one layer, no normalization pass.
    if (!autograd::grad_enabled() && link.absorbs_affine() && i + 1 < links.size() &&
        !links[i + 1].second->is_training() &&
        links[i + 1].second->eval_affine(hints.scale, hints.shift))
      ++i;
    if (link.fuses_relu() && i + 1 < links.size() && links[i + 1].second->is_relu()) {
      hints.relu = true;
      ++i;  // the ReLU runs inside this link
      // ... and its gradient in the pooling after it, which sees this output alone
      hints.relu_grad_by_next = relu_grad_pending =
          i + 1 < links.size() && links[i + 1].second->takes_relu_grad();
    }
    if (add_then_relu != nullptr && i + 1 == links.size() && link.fuses_add() &&
        !autograd::grad_enabled()) {
      hints.add = add_then_relu;
      hints.add_reusable = add_reusable;
      hints.relu = true;
      if (added != nullptr) *added = true;
    }
    hints.next_takes_blocked =
        i + 1 < links.size() ? links[i + 1].second->takes_blocked() : keep_blocked;
    h = link.forward_in_chain(h, hints);
  }
  return keep_blocked ? h : to_row_major(h);
}

Shape output_shape_in_order(const Module& chain, const Shape& input) {
  return output_shape_in_order(chain.children(), input);
}

Shape output_shape_in_order(const Links& links, const Shape& input) {
  Shape s = input;
  for (const auto& [name, child] : links) s = child->output_shape(s);
  return s;
}

std::int64_t flops_in_order(const Module& chain, const Shape& input) {
  return flops_in_order(chain.children(), input);
}

std::int64_t flops_in_order(const Links& links, const Shape& input) {
  std::int64_t total = 0;
  Shape s = input;
  for (const auto& [name, child] : links) {
    total += child->flops(s);
    s = child->output_shape(s);
  }
  return total;
}

Tensor Sequential::forward(const Tensor& x) { return forward_in_order(*this, x); }
Tensor Sequential::forward_in_chain(const Tensor& x, const ChainLink& link) {
  return forward_in_order(*this, x, link.next_takes_blocked);
}
Shape Sequential::output_shape(const Shape& input) const {
  return output_shape_in_order(*this, input);
}
std::int64_t Sequential::flops(const Shape& input) const { return flops_in_order(*this, input); }

std::string state_sha256(const Module& module) {
  std::string bytes;
  for (const auto& [name, t] : module.state()) {
    bytes += name;
    bytes += '\0';
    for (const std::int64_t d : t.shape()) bytes += std::to_string(d) + ",";
    bytes += '\0';
    const std::vector<float> v = t.to_vector();
    bytes.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
  }
  return sha256_hex(bytes);
}

}  // namespace epoch::nn
