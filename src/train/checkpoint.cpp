// Checkpoint assembly on top of the safetensors format (see checkpoint.h).
#include "epoch/train/checkpoint.h"

#include <charconv>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "epoch/models/zoo.h"
#include "epoch/tensor/warnings.h"

namespace epoch::train {
namespace {
constexpr const char* kModelPrefix = "model.";
constexpr const char* kOptimPrefix = "optim.";
}  // namespace

std::string first_non_finite_tensor(const nn::Module& model, const optim::Optimizer* optimizer) {
  for (const auto& [name, t] : model.state())
    if (count_non_finite(t) > 0) return kModelPrefix + name;
  if (optimizer != nullptr)
    for (const auto& [name, t] : optimizer->state())
      if (count_non_finite(t) > 0) return kOptimPrefix + name;
  return {};
}

void save_checkpoint(const std::string& path, const nn::Module& model,
                     const optim::Optimizer* optimizer,
                     std::map<std::string, std::string> metadata) {
  if (const std::string bad = first_non_finite_tensor(model, optimizer); !bad.empty())
    EPOCH_THROW(NumericalError, "tensor '", bad, "' holds NaN or infinite values; ", path,
                " was not written");
  std::vector<NamedTensor> tensors;
  for (const auto& [name, t] : model.state()) tensors.push_back({kModelPrefix + name, t.detach()});
  if (optimizer != nullptr)
    for (const auto& [name, t] : optimizer->state()) tensors.push_back({kOptimPrefix + name, t});
  metadata["format"] = kCheckpointFormat;
  save_safetensors(path, tensors, metadata);
}

void upgrade_checkpoint(SafetensorsFile& file) {
  auto format = file.metadata.find("format");
  auto model_name = file.metadata.find("model");
  if (format == file.metadata.end() || format->second != kPositionalCheckpointFormat ||
      model_name == file.metadata.end())
    return;
  std::shared_ptr<models::Model> model;
  try {
    model = models::build_model(model_name->second);
  } catch (const ConfigError&) {
    return;  // not a zoo model: reported when the model is built
  }
  // Format 1 named each parameter by its layer's position: "0.weight" for "conv1.weight".
  std::vector<std::pair<std::string, std::string>> renames;  // (".0.weight", ".conv1.weight")
  const auto& layers = model->children();
  for (const auto& [path, t] : model->state()) {
    const std::string layer = path.substr(0, path.find('.'));
    for (std::size_t i = 0; i < layers.size(); ++i)
      if (layers[i].first == layer)
        renames.emplace_back("." + std::to_string(i) + path.substr(layer.size()), "." + path);
  }
  const auto renamed = [&](const std::string& name) {
    for (const auto& [old_suffix, new_suffix] : renames)
      if (name.size() >= old_suffix.size() &&
          name.compare(name.size() - old_suffix.size(), old_suffix.size(), old_suffix) == 0)
        return name.substr(0, name.size() - old_suffix.size()) + new_suffix;
    return name;
  };
  for (NamedTensor& nt : file.tensors) nt.name = renamed(nt.name);
  if (auto config = file.metadata.find("config"); config != file.metadata.end()) {
    nlohmann::json j = nlohmann::json::parse(config->second, nullptr, false);
    if (j.is_object() && j.contains("optimizer") && j["optimizer"].is_object() &&
        j["optimizer"].contains("decay_only") && j["optimizer"]["decay_only"].is_array()) {
      for (nlohmann::json& prefix : j["optimizer"]["decay_only"])
        if (prefix.is_string()) prefix = renamed("." + prefix.get<std::string>()).substr(1);
      config->second = j.dump();
    }
  }
  format->second = kCheckpointFormat;
}

void check_checkpoint_format(SafetensorsFile& file) {
  upgrade_checkpoint(file);
  auto it = file.metadata.find("format");
  if (it == file.metadata.end() || it->second != kCheckpointFormat)
    EPOCH_THROW(IoError, file.source, ": not an epoch checkpoint (metadata 'format' is not ",
                kCheckpointFormat, ")");
}

SafetensorsFile read_checkpoint(const std::string& path) {
  SafetensorsFile file = load_safetensors(path);
  check_checkpoint_format(file);
  return file;
}

void load_model_state(const SafetensorsFile& file, nn::Module& model) {
  // Every tensor is checked before any is copied.
  std::vector<std::pair<Tensor, const Tensor*>> copies;
  for (auto& [name, t] : model.state()) {
    const Tensor* saved = file.find(kModelPrefix + name);
    if (saved == nullptr)
      EPOCH_THROW(IoError, file.source, ": checkpoint has no tensor '", kModelPrefix, name,
                  "' for this model");
    if (saved->shape() != t.shape() || saved->dtype() != t.dtype())
      EPOCH_THROW(IoError, file.source, ": tensor '", kModelPrefix, name, "' is ",
                  shape_str(saved->shape()), " ", dtype_name(saved->dtype()), ", the model needs ",
                  shape_str(t.shape()), " ", dtype_name(t.dtype()));
    if (const std::int64_t bad = count_non_finite(*saved); bad > 0)
      EPOCH_THROW(IoError, file.source, ": tensor '", kModelPrefix, name, "' holds ", bad,
                  " NaN or infinite values");
    copies.emplace_back(t.detach(), saved);
  }
  for (auto& [target, saved] : copies) target.copy_from(*saved);
}

void load_optimizer_state(const SafetensorsFile& file, optim::Optimizer& optimizer) {
  optim::NamedTensors state;
  const std::string prefix = kOptimPrefix;
  for (const NamedTensor& nt : file.tensors)
    if (nt.name.compare(0, prefix.size(), prefix) == 0)
      state.emplace_back(nt.name.substr(prefix.size()), nt.tensor);
  try {
    optimizer.load_state(state);
  } catch (const ConfigError& e) {
    EPOCH_THROW(IoError, file.source, ": ", without_location(e.what()));
  }
}

std::int64_t metadata_int(const SafetensorsFile& file, const std::string& key, std::int64_t min,
                          std::int64_t max) {
  const std::string& text = metadata_at(file, key);
  std::int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < min || value > max)
    EPOCH_THROW(IoError, file.source, ": checkpoint metadata '", key, "' is \"", text.substr(0, 40),
                "\", not a whole number from ", min, " to ", max);
  return value;
}

const std::string& metadata_at(const SafetensorsFile& file, const std::string& key) {
  auto it = file.metadata.find(key);
  if (it == file.metadata.end())
    EPOCH_THROW(IoError, file.source, ": checkpoint metadata has no '", key, "'");
  return it->second;
}

double metadata_number(const SafetensorsFile& file, const std::string& key) {
  const std::string& text = metadata_at(file, key);
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size())
    EPOCH_THROW(IoError, file.source, ": checkpoint metadata '", key, "' is \"", text.substr(0, 40),
                "\", not a number");
  return value;
}

}  // namespace epoch::train
