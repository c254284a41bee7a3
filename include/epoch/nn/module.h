// Module: the unit models are built from. A module owns named parameters (trainable leaf
// tensors), named buffers (state such as batch-norm running statistics) and child modules, and
// maps an input batch to an output batch. Sequential chains modules.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "epoch/nn/init.h"
#include "epoch/tensor/tensor.h"

namespace epoch::nn {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

class Module {
 public:
  virtual ~Module() = default;
  Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  /// Maps a batch x (N, ...) to the output batch.
  virtual Tensor forward(const Tensor& x) = 0;
  Tensor operator()(const Tensor& x) { return forward(x); }
  /// True when forward takes a channel-blocked input (Tensor::channel_block) and may give a
  /// blocked output: forward_in_order keeps activations blocked between such layers, so the
  /// CPU fast path reorders only where a layer needs the row-major layout. Default false.
  virtual bool takes_blocked() const { return false; }
  /// True for a ReLU, which the link before it may absorb (fuses_relu).
  virtual bool is_relu() const { return false; }
  /// True when forward_in_chain can apply a ReLU to its output itself (a convolution's
  /// post-op): forward_in_order then skips the ReLU link that follows. Such a link honours
  /// ChainLink::relu_grad_by_next.
  virtual bool fuses_relu() const { return false; }
  /// True when forward_in_chain can also take the gradient of a ReLU just before it (a max
  /// pooling: ChainLink::through_relu).
  virtual bool takes_relu_grad() const { return false; }
  /// True when forward_in_chain can take a per-output-channel affine map y * scale + shift
  /// after it into its weights and bias (ChainLink::scale/shift): a convolution or dense layer.
  virtual bool absorbs_affine() const { return false; }
  /// True when, as it stands (evaluating), this module is such a per-channel affine map; then
  /// scale and shift (C) f32 on the host are set. A batch norm with its running statistics.
  virtual bool eval_affine(Tensor& /*scale*/, Tensor& /*shift*/) const { return false; }
  /// What a chain tells one of its links (forward_in_order).
  struct ChainLink {
    bool next_takes_blocked = false;  // the output may stay channel-blocked
    bool relu = false;                // apply the following ReLU link too (fuses_relu)
    bool relu_grad_by_next = false;   // ... but leave its gradient to the next link, which
                                      // is given through_relu
    bool through_relu = false;        // the input is a fused ReLU's output whose gradient
                                      // this link's backward applies (takes_relu_grad)
    /// Defined: the next link's per-channel affine map (an evaluation batch norm, without
    /// gradients) folded into this one's weights, before the fused ReLU (absorbs_affine).
    Tensor scale, shift;
    /// Not null (without gradients): a tensor of the output's shape this link adds to its
    /// output before the fused ReLU, a residual block's sum (fuses_add).
    const Tensor* add = nullptr;
    bool add_reusable = false;  // ... and no one else holds it: the sum may land in its storage
  };
  /// True when forward_in_chain can take ChainLink::add: a convolution.
  virtual bool fuses_add() const { return false; }
  /// forward(x) as one link of a chain. Default: forward(x) (a module that fuses_relu or
  /// takes_blocked overrides it).
  virtual Tensor forward_in_chain(const Tensor& x, const ChainLink& /*link*/) { return forward(x); }
  /// Maps several input batches to several outputs (a model fed a frame and its state, say).
  /// The default takes one input to forward's one output; modules with more override it.
  virtual std::vector<Tensor> apply(const std::vector<Tensor>& inputs);

  /// Per-sample output shape for a per-sample input shape (e.g. (C, H, W) -> (OC, OH, OW)).
  virtual Shape output_shape(const Shape& input) const { return input; }
  /// Forward multiply-adds x 2 per sample (convolutions and dense layers; the figure GFLOP/s
  /// are computed from, as in BENCHMARKING.md).
  virtual std::int64_t flops(const Shape& /*input*/) const { return 0; }
  /// One line such as "Conv2d(1 -> 32, 3x3, pad 1)".
  virtual std::string describe() const = 0;

  /// Every parameter of this module and its children, named by path ("0.weight").
  NamedTensors parameters() const;
  /// Every buffer (non-trainable state) of this module and its children, named by path.
  NamedTensors buffers() const;
  /// Parameters then buffers: everything a checkpoint stores.
  NamedTensors state() const;
  std::int64_t parameter_count() const;

  /// Switches training-only behaviour (dropout, batch statistics) on or off, recursively.
  void train(bool on = true);
  bool is_training() const { return training_; }

  /// Seeds the module's randomness for one step: dropout of step `step` draws from a stream
  /// that depends only on (seed, step, the module's path). Recursive.
  void set_step_seed(std::uint64_t seed, std::uint64_t step);

  /// Moves parameters and buffers to a device (keeping gradient buffers consistent).
  void to(Device device);

  /// Replaces parameter and buffer storage through `visit`, which returns the new tensor for a
  /// (path, current tensor) pair. Used to lay parameters into one flat buffer.
  void rebind(const std::function<Tensor(const std::string&, const Tensor&)>& visit_param,
              const std::function<Tensor(const std::string&, const Tensor&)>& visit_buffer);

  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& children() const {
    return children_;
  }

  /// How one of this module's own parameters ("weight") starts, in place of nn::initialize's
  /// rule (a model file's initializer).
  void set_param_init(const std::string& name, const ParamInit& init);
  /// Every parameter's own initializer, by path, this module's and its children's.
  std::vector<std::pair<std::string, ParamInit>> param_inits() const;

  /// Sets this module's own parameters where nn::initialize's rule by name does not fit (a
  /// recurrent cell's forget-gate bias, say); nn::initialize calls it last, on every module.
  /// Nothing by default.
  virtual void adjust_initial_parameters() {}

 protected:
  /// Registers a member tensor as a parameter (it becomes a leaf that requires grad).
  void register_parameter(const std::string& name, Tensor* tensor);
  void register_buffer(const std::string& name, Tensor* tensor);
  /// Adds a child under a name: non-empty, without a '.', unique among the children.
  void register_module(const std::string& name, std::shared_ptr<Module> module);
  /// Called by set_step_seed with this module's own stream key.
  virtual void on_step_seed(std::uint64_t /*seed*/, std::uint64_t /*key*/) {}

 private:
  void collect(const std::string& prefix, bool params, NamedTensors& out) const;
  void set_step_seed_at(const std::string& path, std::uint64_t seed, std::uint64_t step);

  std::vector<std::pair<std::string, Tensor*>> params_;
  std::vector<std::pair<std::string, Tensor*>> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  std::vector<std::pair<std::string, ParamInit>> inits_;
  bool training_ = true;
};

/// A module whose children apply in order (Sequential, models::LayerStack): the output, the
/// per-sample output shape and the flops of the chain. Activations stay channel-blocked
/// between children that take it (Module::takes_blocked), a ReLU after a child that
/// fuses_relu runs inside it, and the chain's output is row-major (or, with keep_blocked, left
/// as its last link gave it: for a caller that takes blocked activations).
Tensor forward_in_order(const Module& chain, const Tensor& x, bool keep_blocked = false);
Shape output_shape_in_order(const Module& chain, const Shape& input);
std::int64_t flops_in_order(const Module& chain, const Shape& input);
/// The same over a list of links (part of a module's children: Residual's main path). Given
/// add_then_relu (without gradients), the chain's output is max(0, output + *add_then_relu)
/// when its last link (after a folded batch norm) fuses_add, and *added says whether it did;
/// add_reusable: the caller gives *add_then_relu up (ChainLink::add_reusable).
using Links = std::vector<std::pair<std::string, std::shared_ptr<Module>>>;
Tensor forward_in_order(const Links& links, const Tensor& x, bool keep_blocked = false,
                        const Tensor* add_then_relu = nullptr, bool* added = nullptr,
                        bool add_reusable = false);
Shape output_shape_in_order(const Links& links, const Shape& input);
std::int64_t flops_in_order(const Links& links, const Shape& input);

/// Applies its children in order.
class Sequential : public Module {
 public:
  Sequential() = default;
  /// Appends a module (named by its index) and returns *this.
  Sequential& add(std::shared_ptr<Module> module);
  /// Appends a module under a name of its own ("conv1"; unique within this Sequential).
  Sequential& add(const std::string& name, std::shared_ptr<Module> module);
  Tensor forward(const Tensor& x) override;
  /// Any layout in (each child converts as it needs); a blocked output kept for a next link
  /// that takes it.
  bool takes_blocked() const override { return true; }
  Tensor forward_in_chain(const Tensor& x, const ChainLink& link) override;
  Shape output_shape(const Shape& input) const override;
  std::int64_t flops(const Shape& input) const override;
  std::string describe() const override { return "Sequential"; }
  std::size_t size() const { return children().size(); }
};

/// SHA-256 of a module's state (parameters then buffers, by name: each name, its shape and
/// its values as float32 bytes in logical order): equal exactly when two models hold the
/// same bits.
std::string state_sha256(const Module& module);

}  // namespace epoch::nn
