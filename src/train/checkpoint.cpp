// Checkpoint assembly on top of the safetensors format (see checkpoint.h).
#include "epoch/train/checkpoint.h"

namespace epoch::train {
namespace {
constexpr const char* kModelPrefix = "model.";
constexpr const char* kOptimPrefix = "optim.";
}  // namespace

void save_checkpoint(const std::string& path, const nn::Module& model,
                     const optim::Optimizer* optimizer, std::map<std::string, std::string> metadata) {
  std::vector<NamedTensor> tensors;
  for (const auto& [name, t] : model.state()) tensors.push_back({kModelPrefix + name, t.detach()});
  if (optimizer != nullptr)
    for (const auto& [name, t] : optimizer->state()) tensors.push_back({kOptimPrefix + name, t});
  metadata["format"] = kCheckpointFormat;
  save_safetensors(path, tensors, metadata);
}

SafetensorsFile read_checkpoint(const std::string& path) {
  SafetensorsFile file = load_safetensors(path);
  auto it = file.metadata.find("format");
  if (it == file.metadata.end() || it->second != kCheckpointFormat)
    EPOCH_THROW(IoError, path, ": not an epoch checkpoint (metadata 'format' is not ",
                kCheckpointFormat, ")");
  return file;
}

void load_model_state(const SafetensorsFile& file, nn::Module& model) {
  for (auto& [name, t] : model.state()) {
    const Tensor* saved = file.find(kModelPrefix + name);
    if (saved == nullptr)
      EPOCH_THROW(IoError, file.source, ": checkpoint has no tensor '", kModelPrefix, name,
                  "' for this model");
    if (saved->shape() != t.shape() || saved->dtype() != t.dtype())
      EPOCH_THROW(IoError, file.source, ": tensor '", kModelPrefix, name, "' is ",
                  shape_str(saved->shape()), " ", dtype_name(saved->dtype()), ", the model needs ",
                  shape_str(t.shape()), " ", dtype_name(t.dtype()));
    Tensor target = t.detach();
    target.copy_from(*saved);
  }
}

void load_optimizer_state(const SafetensorsFile& file, optim::Optimizer& optimizer) {
  optim::NamedTensors state;
  const std::string prefix = kOptimPrefix;
  for (const NamedTensor& nt : file.tensors)
    if (nt.name.compare(0, prefix.size(), prefix) == 0)
      state.emplace_back(nt.name.substr(prefix.size()), nt.tensor);
  optimizer.load_state(state);
}

const std::string& metadata_at(const SafetensorsFile& file, const std::string& key) {
  auto it = file.metadata.find(key);
  if (it == file.metadata.end())
    EPOCH_THROW(IoError, file.source, ": checkpoint metadata has no '", key, "'");
  return it->second;
}

}  // namespace epoch::train
