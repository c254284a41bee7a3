// Training checkpoints: one safetensors file holding the model's parameters and buffers
// ("model.<path>"), the optimizer's state ("optim.<name>"), and metadata (model name,
// preprocessing, epoch, step, seed, the run's configuration), written atomically.
#pragma once

#include <map>
#include <string>

#include "epoch/nn/module.h"
#include "epoch/optim/optimizer.h"
#include "epoch/tensor/safetensors.h"

namespace epoch::train {

/// The metadata key that identifies epoch checkpoints and their format version.
/// Format 2 names parameters by module path ("model.conv1.weight"); format 1 named them by
/// position ("model.0.weight") and is read by renaming (upgrade_checkpoint).
inline constexpr const char* kCheckpointFormat = "epoch-checkpoint-2";
inline constexpr const char* kPositionalCheckpointFormat = "epoch-checkpoint-1";

/// The first model or optimizer tensor (by its checkpoint name, "model.<path>" or
/// "optim.<state>") that holds a NaN or an infinity, or "" when every value is finite.
std::string first_non_finite_tensor(const nn::Module& model, const optim::Optimizer* optimizer);

/// Writes model state, optimizer state (when given) and metadata to `path` atomically.
/// NumericalError, writing nothing, when a tensor holds NaN or infinity (naming it).
void save_checkpoint(const std::string& path, const nn::Module& model,
                     const optim::Optimizer* optimizer,
                     std::map<std::string, std::string> metadata);

/// Reads a checkpoint and checks that it is one of ours (check_checkpoint_format).
SafetensorsFile read_checkpoint(const std::string& path);
/// IoError naming the file unless its metadata says it is an epoch checkpoint of this format;
/// a format-1 checkpoint of a zoo model is upgraded first (upgrade_checkpoint).
void check_checkpoint_format(SafetensorsFile& file);
/// Renames a format-1 checkpoint's tensors (model.<position>..., optim.<state>.<position>...)
/// and its recipe's parameter names (optimizer.decay_only) to the zoo model's module paths
/// and marks it format 2; other files are left as they are.
void upgrade_checkpoint(SafetensorsFile& file);

/// Copies the checkpoint's "model.*" tensors into the model; every model tensor must be
/// present with its shape and hold finite values (IoError naming the file and the tensor
/// otherwise; the model is unchanged then).
void load_model_state(const SafetensorsFile& file, nn::Module& model);

/// Restores the optimizer from the checkpoint's "optim.*" tensors (IoError naming the file
/// when an entry is missing, misshapen, not finite, or negative where it cannot be).
void load_optimizer_state(const SafetensorsFile& file, optim::Optimizer& optimizer);

/// A metadata value; IoError naming the file and key when absent.
const std::string& metadata_at(const SafetensorsFile& file, const std::string& key);

/// A metadata value that must be a whole number in [min, max] (epoch, step): IoError naming
/// the file, the key and the value otherwise.
std::int64_t metadata_int(const SafetensorsFile& file, const std::string& key, std::int64_t min,
                          std::int64_t max);
/// A metadata value that must be a number (test_loss, test_accuracy; "nan" and "inf" are
/// numbers): IoError naming the file, the key and the value otherwise.
double metadata_number(const SafetensorsFile& file, const std::string& key);

}  // namespace epoch::train
