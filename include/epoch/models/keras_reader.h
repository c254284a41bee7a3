// Keras models as epoch reads them: `model.to_json()` of Keras 3 or Keras 2 (Sequential or
// Functional: a graph with Add and Concatenate, one input, one output), or a `.keras` archive's
// config.json. The layers map to description.h's ops with Keras's semantics (TensorFlow's
// "same" padding, BatchNormalization's momentum and epsilon, Flatten in H, W, C order,
// hard_sigmoid as the file's Keras version defines it, L2 regularizers as per-parameter weight
// decay, a leading Rescaling as the run's preprocessing); compile_config gives the recipe's
// optimizer and the task (its loss). Anything else is refused in one line naming the layer.
#pragma once

#include <string>
#include <string_view>

#include "epoch/models/description.h"

namespace epoch::models {

/// A model from Keras JSON text; `file` names it in messages and becomes the model's name.
ModelDescription read_keras_json(std::string_view text, const std::string& file);

/// A model from a .keras archive's bytes (its config.json).
ModelDescription read_keras_archive(std::string_view bytes, const std::string& file);

}  // namespace epoch::models
