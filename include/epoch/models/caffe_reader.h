// Caffe nets (train_val.prototxt, deploy.prototxt) in both of Caffe's dialects (`layer { type:
// "Convolution" }` and the older `layers { type: CONVOLUTION }`), and solver.prototxt, read into
// epoch's description (description.h) with Caffe's semantics: pooling sizes rounded up, its LRN
// (alpha over local_size), BatchNorm + Scale as one batch norm, in-place layers (top ==
// bottom), its fillers (a missing one is Caffe's constant 0), the TRAIN phase's layers. The
// input's shape comes from an Input layer or net-level input_dim/input_shape, from a Data
// layer's crop_size with `channels`, or from `input_shape` (--input-shape), which wins.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "epoch/models/description.h"

namespace epoch::models {

struct CaffeOptions {
  Shape input_shape;         // (C, H, W); empty: from the file
  std::int64_t channels = 3;  // a Data layer's channels when it gives crop_size alone
};

/// A net from prototxt text; `file` names it in messages and becomes the model's name.
ModelDescription read_caffe_net(std::string_view text, const std::string& file,
                                const CaffeOptions& options = {});

/// What a solver.prototxt says of training, as recipe settings (optimizer, learning rate and
/// its policy, momentum, weight decay, warm-up, seed), applied over `recipe` (the net's);
/// fields epoch does not use are named in one warning added to `warnings`.
void read_caffe_solver(std::string_view text, const std::string& file, Recipe& recipe,
                       std::vector<std::string>& warnings);

}  // namespace epoch::models
