// A description written as Keras 3 writes `model.to_json()` (a Functional model, channels-last,
// with compile_config from the recipe and the task's loss), so Keras's model_from_json reads it
// and epoch reads it back to the same model. What Keras has no layer for (LRN, Caffe's rounded
// pooling, padded max pooling, residual blocks) is refused in one line naming the layer.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "epoch/models/description.h"

namespace epoch::models {

/// What Keras will compute differently (a batch norm's running variance) goes to warnings.
nlohmann::json write_keras_json(const ModelDescription& description,
                                std::vector<std::string>* warnings = nullptr);

}  // namespace epoch::models
