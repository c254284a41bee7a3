// A run's configuration around the trainer: TrainConfig's JSON (from the
// settings table, config_fields.h), what a resumed run may change, and reading a run's last
// checkpoint and stored configuration.
#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "epoch/models/model_file.h"
#include "epoch/models/zoo.h"
#include "epoch/train/checkpoint.h"
#include "epoch/train/config_fields.h"
#include "epoch/train/recipe.h"
#include "epoch/train/run_dir.h"
#include "epoch/train/train_config.h"
#include "epoch/train/trainer.h"

namespace epoch::train {
namespace fs = std::filesystem;
using json = nlohmann::json;

TrainConfig::TrainConfig() { apply_recipe(*this, models::default_recipe()); }

json TrainConfig::to_json() const { return config_to_json(*this); }

TrainConfig TrainConfig::from_json(const json& j) {
  try {
    return config_from_json(j);
  } catch (const json::exception& e) {
    EPOCH_THROW(ConfigError, "stored run configuration is invalid: ", e.what());
  }
}

json TrainResult::to_json() const {
  json j{{"run_dir", run_dir},
         {"checkpoint", checkpoint},
         {"epochs", epochs},
         {"steps", steps},
         {"train_loss", train_loss},
         {"test_loss", test_loss},
         {"evaluated_on", eval_name},
         {"images_per_s", images_per_s},
         {"wall_s", wall_s},
         {"world_size", world_size},
         {"global_batch_size", global_batch_size}};
  if (world_size > 1) {
    j["comm_s"] = comm_s;
    j["comm_exposed_s"] = comm_exposed_s;
  }
  j["test_accuracy"] = test_accuracy >= 0 ? json(test_accuracy) : json(nullptr);
  if (!evaluated) j["test_loss"] = nullptr;
  if (stopped) {
    j["stopped"] = true;
    if (stopped_in_epoch > 0)
      j["stopped_in"] = {{"epoch", stopped_in_epoch}, {"step", stopped_epoch_step}};
  }
  if (test_top5_accuracy >= 0) j["test_top5_accuracy"] = test_top5_accuracy;
  if (frames_per_sample > 1) {
    j["frames_per_sample"] = frames_per_sample;
    j["frames_per_s"] = frames_per_s;
    j["test_baseline_mse"] = test_baseline_mse;
    // The judged figure: the last (up to) 50 losses against the baseline on those frames.
    j["last_losses"] = {
        {"steps", recent_steps},
        {"mean_loss", recent_loss},
        {"baseline_mse", recent_baseline_mse},
        {"margin", recent_baseline_mse - recent_loss},
        {"relative_margin", recent_baseline_mse > 0
                                ? (recent_baseline_mse - recent_loss) / recent_baseline_mse
                                : 0.0}};
    if (dataset_baseline_mse >= 0) j["dataset_baseline_mse"] = dataset_baseline_mse;
  }
  return j;
}

namespace {
/// Dotted keys of a JSON object's leaves ("optimizer.lr" -> 0.002).
void flatten_json(const json& j, const std::string& prefix, std::map<std::string, json>& out) {
  if (j.is_object()) {
    for (const auto& [key, value] : j.items())
      flatten_json(value, prefix.empty() ? key : prefix + "." + key, out);
  } else {
    out[prefix] = j;
  }
}
}  // namespace

namespace {
/// A setting's value for a message: floats with 6 significant digits (they are stored from
/// float, so 0.002 would otherwise read 0.0020000000949949026).
std::string shown(const json& v) {
  if (!v.is_number_float()) return v.dump();
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.6g", v.get<double>());
  return buffer;
}
}  // namespace

bool resume_may_change(const std::string& key) {
  for (const ConfigField& f : config_fields())
    if (f.key == key) return f.resume_may_change;
  return false;
}

std::string resume_conflicts(const TrainConfig& stored, const TrainConfig& requested) {
  std::map<std::string, json> was, now;
  flatten_json(stored.to_json(), "", was);
  flatten_json(requested.to_json(), "", now);
  std::string out;
  for (const auto& [key, value] : now) {
    if (resume_may_change(key)) continue;
    const auto it = was.find(key);
    const json before = it == was.end() ? json(nullptr) : it->second;
    if (before != value)
      out += (out.empty() ? "" : ", ") + key + " " + shown(value) + " (the run has " +
             shown(before) + ")";
  }
  return out;
}

SafetensorsFile read_last_checkpoint(const std::string& run_dir) {
  switch (run_state(run_dir)) {
    case RunState::empty:
      EPOCH_THROW(IoError, run_dir, ": no run to resume (no checkpoints/last.safetensors)");
    case RunState::started:
      EPOCH_THROW(IoError, run_dir,
                  ": the run stopped before its first checkpoint, so there is nothing to resume; "
                  "remove the folder or choose another --out");
    case RunState::foreign:
      EPOCH_THROW(IoError, run_dir, ": not an epoch run (it holds ", describe_contents(run_dir),
                  "), so there is nothing to resume");
    case RunState::checkpointed:
      break;
  }
  return read_checkpoint((fs::path(run_dir) / "checkpoints" / "last.safetensors").string());
}

TrainConfig stored_config(const SafetensorsFile& checkpoint) {
  return TrainConfig::from_json(json::parse(metadata_at(checkpoint, "config"), nullptr, false));
}

TrainConfig stored_run_config(const std::string& run_dir) {
  const SafetensorsFile last = read_last_checkpoint(run_dir);
  TrainConfig c = stored_config(last);
  // A model file's description, as the run trained it: the run needs only its checkpoint.
  models::register_stored_description(c.run.model, last.metadata);
  return c;
}
}  // namespace epoch::train
