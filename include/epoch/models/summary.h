// A model's layer table, as Keras's model.summary() gives it: each layer's name, type, output
// shape and parameters (trainable, and non-trainable state such as batch norm's running
// statistics), then the totals and the forward FLOPs per sample. `epoch models --show`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "epoch/models/zoo.h"

namespace epoch::models {

struct LayerSummary {
  std::string name;  // "conv1"
  std::string type;  // what the layer says of itself: "Conv2d(1 -> 32, 3x3)"
  Shape output;      // per sample (C, H, W) or (D)
  std::int64_t parameters = 0;      // trainable
  std::int64_t non_trainable = 0;   // buffers (batch norm's running mean and variance)
  std::int64_t flops = 0;           // forward, per sample
};

struct ModelSummary {
  std::string name;
  Shape input, output;  // per sample
  /// A layer stack's layers in order (a nested block, such as a residual stage, is one row);
  /// a model that is no stack (PredNet) is one row of its own.
  std::vector<LayerSummary> layers;
  std::int64_t trainable = 0, non_trainable = 0, flops = 0;
  /// A model from a file: its format ("keras 3"), the file's SHA-256, and whether the file
  /// writes shapes channels-last (Keras), as the table then prints them.
  std::string format, sha256;
  bool channels_last = false;
  /// What Keras's count_params() counts: trainable and non-trainable together.
  std::int64_t total() const { return trainable + non_trainable; }
};

ModelSummary summarize(const Model& model);

/// A per-sample shape as its source writes it: (C, H, W) as (H, W, C) when channels_last.
Shape source_shape(const Shape& shape, bool channels_last);

/// The table as text: a header, one line per layer (the output shape as (None, C, H, W)),
/// the totals with thousands separators, and the FLOPs.
std::string format_summary(const ModelSummary& summary);

}  // namespace epoch::models
