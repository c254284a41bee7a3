// epoch's own model format: the description as JSON, written and read back unchanged.
#include "epoch/models/description.h"

#include <set>

#include "epoch/tensor/error.h"

namespace epoch::models {
namespace {

constexpr const char* kFormat = "epoch-model";
constexpr std::int64_t kMaxLayers = 100000;

nlohmann::json recipe_to_json(const Recipe& r) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [key, value] : r.settings)
    std::visit([&j, &key](const auto& v) { j[key] = v; }, value);
  return j;
}

Recipe recipe_from_json(const nlohmann::json& j, const std::string& file) {
  Recipe r;
  if (!j.is_object()) EPOCH_THROW(ConfigError, file, ": \"recipe\" must be an object");
  for (const auto& [key, v] : j.items()) {
    if (v.is_boolean()) {
      r.set(key, v.get<bool>());
    } else if (v.is_number_integer()) {
      r.set(key, v.get<std::int64_t>());
    } else if (v.is_number()) {
      r.set(key, v.get<double>());
    } else if (v.is_string()) {
      r.set(key, v.get<std::string>());
    } else if (v.is_array() && !v.empty() && v[0].is_string()) {
      r.set(key, v.get<std::vector<std::string>>());
    } else if (v.is_array()) {
      r.set(key, v.get<std::vector<double>>());
    } else {
      EPOCH_THROW(ConfigError, file, ": recipe \"", key, "\" has a value of an unknown kind");
    }
  }
  return r;
}

Task task_from_word(const std::string& word, const std::string& file) {
  for (Task t : {Task::classification, Task::binary, Task::reconstruction, Task::frame_prediction})
    if (word == task_name(t)) return t;
  EPOCH_THROW(ConfigError, file, ": unknown task '", word,
              "' (valid: classification, binary, reconstruction)");
}

}  // namespace

std::string json_excerpt(const nlohmann::json& value) {
  std::string text = value.dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

nlohmann::json description_to_json(const ModelDescription& d) {
  nlohmann::json layers = nlohmann::json::array();
  for (const LayerNode& n : d.layers) {
    nlohmann::json l = {{"name", n.name}, {"op", n.op}};
    if (!n.inputs.empty()) l["inputs"] = n.inputs;
    for (const auto& [key, value] : n.attrs.items()) l[key] = value;
    layers.push_back(std::move(l));
  }
  nlohmann::json j = {{"format", kFormat},
          {"version", 1},
          {"name", d.name},
          {"source", d.format},
          {"summary", d.summary},
          {"input", d.input},
          {"input_name", d.input_name},
          {"task", task_name(d.task)},
          {"recipe", recipe_to_json(d.recipe)},
          {"channels_last", d.channels_last},
          {"layers", layers}};
  for (const auto& [layer, weight] : d.aux_losses)
    j["aux_losses"].push_back({{"layer", layer}, {"weight", weight}});
  return j;
}

ModelDescription description_from_json(const nlohmann::json& j, const std::string& file) {
  if (!j.is_object() || j.value("format", "") != kFormat)
    EPOCH_THROW(ConfigError, file, ": not an epoch model description (\"format\": \"", kFormat,
                "\" missing)");
  const auto field = [&](const char* key) -> const nlohmann::json& {
    auto it = j.find(key);
    if (it == j.end()) EPOCH_THROW(ConfigError, file, ": the key \"", key, "\" is missing");
    return *it;
  };
  ModelDescription d;
  d.file = file;
  try {
    if (field("version").get<std::int64_t>() != 1)
      EPOCH_THROW(ConfigError, file, ": version ", json_excerpt(field("version")),
                  " is not one this epoch reads (1)");
    d.name = j.value("name", file);
    d.format = j.value("source", std::string("epoch"));
    d.summary = j.value("summary", std::string());
    d.input = field("input").get<Shape>();
    d.input_name = j.value("input_name", std::string("input"));
    d.task = task_from_word(j.value("task", std::string("classification")), file);
    if (j.contains("recipe")) d.recipe = recipe_from_json(j["recipe"], file);
    d.channels_last = j.value("channels_last", false);
    const nlohmann::json& layers = field("layers");
    if (!layers.is_array() || layers.empty())
      EPOCH_THROW(ConfigError, file, ": \"layers\" must be a non-empty list");
    if (static_cast<std::int64_t>(layers.size()) > kMaxLayers)
      EPOCH_THROW(ConfigError, file, ": ", layers.size(), " layers (at most ", kMaxLayers, ")");
    std::set<std::string> names;
    for (const nlohmann::json& l : layers) {
      if (!l.is_object()) EPOCH_THROW(ConfigError, file, ": each layer must be an object");
      LayerNode n;
      n.name = l.at("name").get<std::string>();
      n.op = l.at("op").get<std::string>();
      if (l.contains("inputs")) n.inputs = l["inputs"].get<std::vector<std::string>>();
      for (const auto& [key, value] : l.items())
        if (key != "name" && key != "op" && key != "inputs") n.attrs[key] = value;
      if (!names.insert(n.name).second)
        EPOCH_THROW(ConfigError, file, ": two layers are named '", n.name, "'");
      d.layers.push_back(std::move(n));
    }
    if (j.contains("aux_losses")) {
      const nlohmann::json& aux = j["aux_losses"];
      if (!aux.is_array() || aux.size() > 64)
        EPOCH_THROW(ConfigError, file, ": \"aux_losses\" must be a list of at most 64");
      for (const nlohmann::json& a : aux) {
        const double w = a.at("weight").get<double>();
        if (!(w > 0.0 && w <= 1e6))
          EPOCH_THROW(ConfigError, file, ": aux_losses weight ", json_excerpt(a.at("weight")),
                      " is outside (0, 1e6]");
        d.aux_losses.emplace_back(a.at("layer").get<std::string>(), w);
      }
    }
  } catch (const nlohmann::json::exception& e) {
    EPOCH_THROW(ConfigError, file, ": ", e.what());
  }
  return d;
}

}  // namespace epoch::models
