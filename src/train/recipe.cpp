// A run's configuration from the recipe the zoo keeps beside each model (see recipe.h).
#include "epoch/train/recipe.h"

#include <sstream>

#include "epoch/models/zoo.h"

namespace epoch::train {

TrainConfig recipe_for(const std::string& model) {
  TrainConfig c;  // the default recipe (models::default_recipe)
  c.run.model = model;
  for (const models::ModelSpec& spec : models::model_specs()) {
    if (spec.name != model) continue;
    const models::Recipe& r = spec.recipe;
    c.optimizer = r.optimizer;
    c.schedule = r.schedule;
    c.schedule.warmup_steps = r.warmup_steps;
    c.run.batch_size = r.batch_size;
    c.input.augment = r.augment;
    c.input.rescale = r.rescale;
    c.input.standardize = r.standardize;
    c.input.mean = r.mean;
    c.input.std = r.std;
    c.input.resize = r.resize;
  }
  return c;
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
