// A model's recipe is a patch of run settings by config.json's keys: each zoo recipe applies
// through the settings table, leaves what it does not name at the defaults (an optimizer's own
// defaults after "optimizer.name"), and a recipe naming an unknown setting or a value out of
// bounds is an error naming the key.
#include "epoch/train/recipe.h"

#include <gtest/gtest.h>

#include <string>

#include "epoch/models/zoo.h"
#include "epoch/optim/optimizer.h"
#include "epoch/train/config_fields.h"

namespace epoch::train {
namespace {

TEST(Recipe, EveryZooRecipeAppliesOverTheDefaults) {
  for (const models::ModelSpec& spec : models::model_specs()) {
    SCOPED_TRACE(spec.name);
    const TrainConfig c = recipe_for(spec.name);
    EXPECT_EQ(c.run.model, spec.name);
    for (const auto& [key, value] : spec.recipe.settings)
      EXPECT_NO_THROW(config_field(key)) << key;  // a setting of the run, by its stored key
  }
  const TrainConfig d = recipe_for("fmnist-cnn");  // the default recipe
  EXPECT_EQ(d.optimizer.kind, optim::OptimizerKind::adam);
  EXPECT_FLOAT_EQ(d.optimizer.lr, 2e-3f);
  EXPECT_EQ(d.schedule.kind, optim::ScheduleKind::cosine);
  EXPECT_EQ(d.schedule.warmup_steps, -1);
  EXPECT_EQ(d.run.batch_size, 32);
  const TrainConfig k = recipe_for("cifar10-keras");
  EXPECT_EQ(k.optimizer.kind, optim::OptimizerKind::rmsprop);
  EXPECT_FLOAT_EQ(k.optimizer.alpha, 0.9f);
  EXPECT_FLOAT_EQ(k.optimizer.eps, 1e-7f);
  EXPECT_EQ(k.optimizer.centered, optim::optimizer_defaults(optim::OptimizerKind::rmsprop).centered);
  EXPECT_TRUE(k.input.augment.horizontal_flip);
  EXPECT_EQ(k.run.batch_size, 32);  // left at the default
  const TrainConfig tf = recipe_for("cifar10-tf");
  EXPECT_EQ(tf.optimizer.decay_only, (std::vector<std::string>{"fc1.weight", "fc2.weight"}));
  EXPECT_TRUE(tf.input.standardize);
  EXPECT_EQ(tf.input.resize, data::Resize::center_crop);
  EXPECT_EQ(recipe_for("resnet50").input.mean.size(), 3u);
  EXPECT_EQ(recipe_for("prednet-study").run.batch_size, 1);
}

TEST(Recipe, TheOptimizersNameStartsFromItsOwnDefaults) {
  TrainConfig c;
  apply_recipe(c, models::Recipe().set("optimizer.lr", 0.5f).set("optimizer.name", "sgd"));
  EXPECT_EQ(c.optimizer.kind, optim::OptimizerKind::sgd);
  EXPECT_FLOAT_EQ(c.optimizer.lr, optim::optimizer_defaults(optim::OptimizerKind::sgd).lr);
  apply_recipe(c, models::Recipe().set("optimizer.lr", 0.5f));
  EXPECT_FLOAT_EQ(c.optimizer.lr, 0.5f);
}

TEST(Recipe, AnUnknownSettingOrABadValueNamesTheKey) {
  TrainConfig c;
  try {
    apply_recipe(c, models::Recipe().set("optimizer.learning_rate", 0.1));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("optimizer.learning_rate"), std::string::npos) << e.what();
  }
  try {
    apply_recipe(c, models::Recipe().set("batch_size", std::int64_t{-4}));
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("batch_size"), std::string::npos) << e.what();
  }
  try {
    apply_recipe(c, models::Recipe().set("optimizer.name", "adamw2"));
    ADD_FAILURE() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("adamw2"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace epoch::train
