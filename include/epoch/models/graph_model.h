// A Model made from a description (description.h): each layer's modules registered under the
// layer's name (so parameters are conv1.weight, ...), a layer stack when the layers form a chain
// (the fast path's fusions apply), otherwise a graph whose layers run in the file's order, each
// on the outputs of the layers it names (Add, Concatenate).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "epoch/models/description.h"
#include "epoch/models/zoo.h"
#include "epoch/nn/module.h"

namespace epoch::models {

/// A model whose layers form a directed acyclic graph with one input and one output.
class GraphModel : public Model {
 public:
  enum class Join { none, add, concat };
  struct Node {
    std::vector<int> inputs;  // earlier nodes' indices; -1: the model's input
    Join join = Join::none;   // how several inputs become one
    nn::Links links;          // then applied in order (as a chain)
  };
  explicit GraphModel(ModelSpec spec) : Model(std::move(spec)) {}
  /// Appends a node; its links are registered as children under their names.
  void add_node(Node node);
  /// Auxiliary classifiers (node index, loss weight), after the last add_node: while training,
  /// forward keeps their outputs and loss adds their weighted task losses; evaluating, forward
  /// computes only what the output needs.
  void set_aux_losses(std::vector<std::pair<int, float>> aux);
  Tensor forward(const Tensor& x) override;
  Tensor loss(const Tensor& output, const Tensor& x, const Tensor& labels) const override;
  Shape output_shape(const Shape& input) const override;
  std::int64_t flops(const Shape& input) const override;
  std::string describe() const override { return spec().name; }
  /// Each link in order with the per-sample shape it takes (the layer table's rows).
  std::vector<std::pair<const nn::Links::value_type*, Shape>> link_inputs(const Shape& input) const;

 private:
  /// Each node's per-sample input (after its join) and output shapes.
  std::vector<std::pair<Shape, Shape>> node_shapes(const Shape& input) const;
  std::vector<Node> nodes_;
  std::vector<std::pair<int, float>> aux_;
  std::vector<bool> output_needs_;
  mutable std::vector<Tensor> aux_outputs_;  // the last training forward's, taken by loss
};

/// Builds the model of a description with zeroed parameters (nn::initialize them). The output
/// layer's softmax (classification) or sigmoid (binary) belongs to the loss: the model gives
/// logits, and the loss and prediction apply it. Throws ConfigError with one line naming the
/// file, the layer (its name and the class the file gave it) and the key or value at fault:
/// an unknown op, a missing or bad attribute, an input that names no earlier layer, shapes that
/// do not fit, sizes beyond epoch's limits.
std::shared_ptr<Model> build_described(const ModelDescription& description);

/// The spec of a described model: name, summary, input, outputs (from the built model's output
/// shape), task and recipe.
ModelSpec described_spec(const ModelDescription& description);

/// Each layer's per-sample output shape, in the description's order (C, H, W) or (D).
std::vector<Shape> layer_output_shapes(const ModelDescription& description);

}  // namespace epoch::models
