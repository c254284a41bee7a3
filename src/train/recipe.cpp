// A run's configuration from the recipe the zoo keeps beside each model (see recipe.h).
#include "epoch/train/recipe.h"

#include <sstream>

#include <nlohmann/json.hpp>
#include <variant>

#include "epoch/models/model_file.h"
#include "epoch/models/zoo.h"
#include "epoch/train/config_fields.h"

namespace epoch::train {

void apply_recipe(TrainConfig& config, const models::Recipe& recipe) {
  for (const auto& [key, value] : recipe.settings)
    apply_setting(config, key,
                  std::visit([](const auto& v) { return nlohmann::json(v); }, value));
}

TrainConfig recipe_for(const std::string& model) {
  TrainConfig c;  // the default recipe (models::default_recipe)
  c.run.model = model;
  for (const models::ModelSpec& spec : models::model_specs())
    if (spec.name == model) apply_recipe(c, spec.recipe);
  if (const models::RegisteredModel* m = models::registered_model(model))  // a model file's
    apply_recipe(c, m->spec.recipe);
  return c;
}

void use_model_file_options(const TrainConfig& c) {
  models::ModelFileOptions o;
  o.solver = c.run.solver;
  if (!c.run.input_shape.empty()) {
    std::istringstream in(c.run.input_shape);
    std::string part;
    while (std::getline(in, part, ',')) {
      std::size_t used = 0;
      long long v = 0;
      try {
        v = std::stoll(part, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != part.size() || v < 1 || v > (1 << 22))
        EPOCH_THROW(ConfigError, "--input-shape ", c.run.input_shape,
                    ": give C,H,W as three positive sizes (3,227,227)");
      o.input_shape.push_back(v);
    }
    if (o.input_shape.size() != 3)
      EPOCH_THROW(ConfigError, "--input-shape ", c.run.input_shape,
                  ": give C,H,W as three positive sizes (3,227,227)");
  }
  models::set_model_file_options(o);
}

std::string describe_recipe(const TrainConfig& c) {
  std::ostringstream out;
  out << optim::optimizer_name(c.optimizer.kind) << " lr " << c.optimizer.lr << ", "
      << optim::schedule_name(c.schedule.kind) << " schedule, batch " << c.run.batch_size
      << ", augmentation: " << c.input.augment.describe();
  if (c.input.standardize) out << ", per-image standardization";
  if (c.input.resize != data::Resize::stretch)
    out << ", evaluation " << data::resize_name(c.input.resize);
  return out.str();
}

}  // namespace epoch::train
