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
inline constexpr const char* kCheckpointFormat = "epoch-checkpoint-1";

/// Writes model state, optimizer state (when given) and metadata to `path` atomically.
void save_checkpoint(const std::string& path, const nn::Module& model,
                     const optim::Optimizer* optimizer, std::map<std::string, std::string> metadata);

/// Reads a checkpoint and checks that it is one of ours (format key present).
SafetensorsFile read_checkpoint(const std::string& path);

/// Copies the checkpoint's "model.*" tensors into the model; every model tensor must be
/// present with its shape (IoError naming the file and the tensor otherwise).
void load_model_state(const SafetensorsFile& file, nn::Module& model);

/// Restores the optimizer from the checkpoint's "optim.*" tensors.
void load_optimizer_state(const SafetensorsFile& file, optim::Optimizer& optimizer);

/// A metadata value; IoError naming the file and key when absent.
const std::string& metadata_at(const SafetensorsFile& file, const std::string& key);

}  // namespace epoch::train
