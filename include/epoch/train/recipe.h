// A run's configuration from a zoo model's training recipe (models::Recipe, kept beside the
// model in models/zoo.cpp: optimizer, learning rate, schedule, batch size, augmentation and
// input preprocessing, as the model's source trained it). `epoch train` starts from it and
// applies the flags given on the command line on top.
#pragma once

#include <string>

#include "epoch/models/zoo.h"
#include "epoch/train/train_config.h"

namespace epoch::train {

/// Applies a recipe's settings to `config`, in order (config_fields.h's apply_setting).
void apply_recipe(TrainConfig& config, const models::Recipe& recipe);

/// A TrainConfig for `model` with its recipe filled in (other fields at their defaults).
/// Unknown models get the defaults (the zoo lookup reports them later).
TrainConfig recipe_for(const std::string& model);

/// Makes a run's --input-shape and --solver the options model files are read with from now on
/// (models::set_model_file_options): call before the run's model is first named. ConfigError
/// for an --input-shape that is not C,H,W of positive sizes.
void use_model_file_options(const TrainConfig& config);

/// One line naming the recipe's choices, printed when training starts.
std::string describe_recipe(const TrainConfig& config);

}  // namespace epoch::train
