// A model as data: the layer graph that a model file describes (epoch's own JSON, a Keras model,
// a Caffe net), in one vocabulary of operations, with the model's input shape, its task and the
// recipe the file states. The readers (keras_reader.h, caffe_reader.h) produce it; the builder
// (graph_model.h) makes a Model of it; a checkpoint stores it (to_json) so a run needs only the
// checkpoint. The zoo's layer-stack models are written in this form.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "epoch/models/zoo.h"

namespace epoch::models {

/// One layer. `op` is one of (attributes in `attrs`, each optional unless marked):
///   conv2d      filters*, kernel* [h, w], strides [h, w], dilation [h, w], groups,
///               padding "valid" | "same" (TensorFlow's: the extra pixel at the bottom and right)
///               | [top, bottom, left, right], bias (true), activation
///   dense       units*, bias (true), activation
///   max_pool, avg_pool
///               size* [h, w], strides [h, w] (default: size), padding as conv2d's, ceil (false:
///               Caffe's rounding up of the output size, windows clipped at the edge; an average
///               divides as Caffe's, by the window's extent within the input and its padding)
///   global_avg_pool, global_max_pool
///   zero_pad    pad* [top, bottom, left, right]
///   flatten     order "chw" | "hwc" (Keras: the features in H, W, C order; the dense layer
///               after it stores its weight columns in C, H, W order, and weights read from or
///               written for Keras are permuted to match)
///   dropout     rate*
///   batch_norm  momentum (the weight of the batch's statistics, PyTorch's convention: 0.1),
///               epsilon (1e-5), caffe_factor (false: Caffe's third blob, one number, as a buffer),
///               running_variance "unbiased" (PyTorch, Caffe) | "biased" (Keras): what the
///               running variance averages; affine (true; false with caffe_factor alone: a
///               BatchNorm without a Scale, nothing to learn)
///   activation  function* relu | sigmoid | tanh | softmax | linear | leaky_relu (alpha) |
///               hard_sigmoid (slope, offset) | elu (alpha: 1) | selu | swish (silu) | relu6
///   rescaling   scale*, offset (0); as_preprocessing: applied to the input by the data pipeline
///               (the run's rescale), not again by the model
///   lrn         size*, alpha*, beta*, k (1): across channels, alpha divided by size (Caffe's);
///               region "within_channel": Caffe's WITHIN_CHANNEL (a size x size window's mean)
///   adaptive_avg_pool size* [h, w]: averages over equal tiles (PyTorch's AdaptiveAvgPool2d
///               where the input is a multiple of the size)
///   add, concat two or more inputs of one shape (concat: along the channels)
///   sequential  layers*: a nested chain of layers (objects as these; names unique within it)
///   residual    layers* (the main path), downsample (the shortcut; else the identity): ResNet's
///               block, relu(main(x) + shortcut(x))
/// conv2d and dense may carry weight_init and bias_init (nn::ParamInit, else nn::initialize's
/// rule: Glorot-uniform weights, zero biases): {"kind": "constant", "value"} | {"kind":
/// "uniform", "lo", "hi"} | {"kind": "normal" or "truncated_normal", "mean", "std"} |
/// {"kind": "variance_scaling", "scale", "fan": "in" | "out" | "average", "distribution":
/// "uniform" | "normal" | "truncated_normal"}. Any layer may carry source (the class the file
/// named, for messages: "Conv2D").
struct LayerNode {
  std::string name;                 // unique; parameters are named name.weight, name.bias
  std::string op;
  /// Earlier layers' names, or the model input's (ModelDescription::input_name); empty: the
  /// layer before (the model's input for the first).
  std::vector<std::string> inputs;
  nlohmann::json attrs = nlohmann::json::object();
};

struct ModelDescription {
  std::string name;    // what runs and messages call the model: the file as given
  std::string format;  // where it came from: "epoch", "keras 3", "keras 2", "caffe"
  std::string file;    // the file it was read from (messages), "" when built in memory
  std::string summary;
  Shape input;         // per sample (C, H, W)
  std::string input_name = "input";  // how layers' inputs name the model's input
  Task task = Task::classification;
  Recipe recipe;       // what the file says of training (a Keras compile_config, a solver)
  /// Whether the source writes shapes channels-last (Keras): `models --show` prints them so.
  bool channels_last = false;
  std::vector<LayerNode> layers;  // in order: each input before its use; the last is the output
  /// Auxiliary classifiers (Caffe's GoogLeNet): layers giving the output's class scores whose
  /// task loss, times the weight, adds to the output's while training (Caffe's loss_weight);
  /// evaluation and prediction use the output alone.
  std::vector<std::pair<std::string, double>> aux_losses;
  /// What the reader ignored and says so (Intel-Caffe's fields epoch does not know, say): one
  /// warning each, printed when the file is read.
  std::vector<std::string> warnings;
};

/// epoch's own format: {"format": "epoch-model", "version": 1, "name", "summary", "input",
/// "task", "recipe": {key: value}, "channels_last", "layers": [{"name", "op", "inputs",
/// ...attrs}], "aux_losses": [{"layer", "weight"}] (when there are any)}.
nlohmann::json description_to_json(const ModelDescription& d);
/// A JSON value as a message shows it: its text, cut to 60 characters.
std::string json_excerpt(const nlohmann::json& value);

/// Reads epoch's format; ConfigError naming `file` and the key on a missing or bad field.
ModelDescription description_from_json(const nlohmann::json& j, const std::string& file);

}  // namespace epoch::models
