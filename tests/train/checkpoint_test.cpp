// Checkpoints refuse what would resume or evaluate into nonsense: NaN or infinite tensors on
// save and load, optimizer state that cannot be (a negative running mean of squares), epoch and
// step metadata that is not a whole number in range, stored preprocessing the model cannot take.
#include "epoch/train/checkpoint.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "epoch/models/zoo.h"
#include "epoch/nn/layers.h"
#include "epoch/train/inference.h"
#include "epoch/train/trainer.h"
#include "testing/testing.h"

namespace epoch::train {
namespace {

/// A trained-looking autoencoder checkpoint at `path` (Adam state, the metadata epoch writes),
/// with `edit` applied to the tensors and metadata first.
using Meta = std::map<std::string, std::string>;
using Edit = std::function<void(std::vector<NamedTensor>&, Meta&)>;

/// The first tensor whose name contains `part`.
Tensor& tensor_named(std::vector<NamedTensor>& tensors, const std::string& part) {
  for (NamedTensor& nt : tensors)
    if (nt.name.find(part) != std::string::npos) return nt.tensor;
  throw std::runtime_error("no tensor " + part);
}

void write_checkpoint(const std::string& path, const Edit& edit) {
  std::shared_ptr<models::Model> m = models::build_model("autoencoder");
  nn::initialize(*m, 1);
  auto opt = optim::make_optimizer(optim::optimizer_defaults("adam"), m->parameters());
  TrainConfig c;
  c.run.model = "autoencoder";
  data::Preprocessing pre;
  pre.channels = 1;
  pre.height = 28;
  pre.width = 28;
  std::map<std::string, std::string> meta = {
      {"model", "autoencoder"}, {"preprocessing", pre.to_json()},
      {"class_names", "[]"},    {"epoch", "1"},
      {"step", "10"},           {"config", c.to_json().dump()}};
  std::vector<NamedTensor> tensors;
  for (const auto& [name, t] : m->state()) tensors.push_back({"model." + name, t.detach().clone()});
  for (const auto& [name, t] : opt->state()) tensors.push_back({"optim." + name, t.clone()});
  edit(tensors, meta);
  meta["format"] = kCheckpointFormat;
  save_safetensors(path, tensors, meta);  // bypasses save_checkpoint's own check
}

void expect_load_error(const std::string& path, const std::string& needle) {
  try {
    const SafetensorsFile f = read_checkpoint(path);
    std::shared_ptr<models::Model> m = models::build_model("autoencoder");
    load_model_state(f, *m);
    auto opt = optim::make_optimizer(optim::optimizer_defaults("adam"), m->parameters());
    load_optimizer_state(f, *opt);
    (void)metadata_int(f, "epoch", 0, 1000);
    (void)load_trained_model(path);
    ADD_FAILURE() << path << " loaded; expected an IoError containing \"" << needle << "\"";
  } catch (const IoError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind(path + ": ", 0), 0u) << what;
    EXPECT_NE(what.find(needle), std::string::npos) << what;
  }
}

TEST(Checkpoint, SaveRefusesNonFiniteTensorsAndWritesNothing) {
  testing::TempDir dir;
  std::shared_ptr<models::Model> m = models::build_model("autoencoder");
  nn::initialize(*m, 1);
  m->parameters()[2].second.f32()[5] = std::nanf("");
  EXPECT_EQ(first_non_finite_tensor(*m, nullptr), "model." + m->parameters()[2].first);
  EXPECT_THROW(save_checkpoint(dir / "c.safetensors", *m, nullptr, {}), NumericalError);
  EXPECT_FALSE(std::filesystem::exists(dir / "c.safetensors"));
}

TEST(Checkpoint, LoadRefusesWhatCannotBeResumed) {
  testing::TempDir dir;
  const auto none = [](std::vector<NamedTensor>&, Meta&) {};
  write_checkpoint(dir / "good.safetensors", none);
  EXPECT_NO_THROW(load_trained_model(dir / "good.safetensors"));

  write_checkpoint(dir / "nan.safetensors", [](std::vector<NamedTensor>& t, Meta&) {
    tensor_named(t, "model.").f32()[0] = INFINITY;
  });
  expect_load_error(dir / "nan.safetensors", "NaN or infinite");

  write_checkpoint(dir / "negative.safetensors", [](std::vector<NamedTensor>& t, Meta&) {
    tensor_named(t, "exp_avg_sq").f32()[0] = -1.0f;
  });
  expect_load_error(dir / "negative.safetensors", "exp_avg_sq");

  for (const char* epoch : {"abc", "-5", "", "1e3", "99999999999999999999"}) {
    write_checkpoint(dir / "epoch.safetensors",
                     [&](std::vector<NamedTensor>&, Meta& meta) { meta["epoch"] = epoch; });
    expect_load_error(dir / "epoch.safetensors", "metadata 'epoch'");
  }

  write_checkpoint(dir / "pre.safetensors", [](std::vector<NamedTensor>&, Meta& meta) {
    data::Preprocessing pre;
    pre.channels = 3;
    pre.height = 28;
    pre.width = 28;
    meta["preprocessing"] = pre.to_json();
  });
  expect_load_error(dir / "pre.safetensors", "takes 1x28x28");
}

}  // namespace
}  // namespace epoch::train

namespace epoch::train {
namespace {

// A checkpoint from before parameters had names (format 1: "model.0.weight", Adam's
// "optim.adam.exp_avg.0.weight", the recipe's decay_only "9.weight") reads as the same
// checkpoint named by module path.
TEST(Checkpoint, PositionalFormatOneIsUpgradedToModulePaths) {
  testing::TempDir dir;
  std::shared_ptr<models::Model> m = models::build_model("cifar10-tf");
  nn::initialize(*m, 1);
  optim::OptimizerConfig oc = optim::optimizer_defaults("adam");
  oc.decay_only = {"fc1.weight", "fc2.weight"};
  oc.weight_decay = 0.004f;
  auto opt = optim::make_optimizer(oc, m->parameters());
  TrainConfig c;
  c.run.model = "cifar10-tf";
  c.optimizer = oc;
  save_checkpoint(dir / "named.safetensors", *m, opt.get(),
                  {{"model", "cifar10-tf"}, {"config", c.to_json().dump()}});
  const SafetensorsFile named = read_checkpoint(dir / "named.safetensors");

  // The same file as format 1 wrote it: layer positions instead of names.
  std::map<std::string, std::string> positions;  // "fc1" -> "9"
  for (std::size_t i = 0; i < m->children().size(); ++i)
    positions[m->children()[i].first] = std::to_string(i);
  std::vector<NamedTensor> old = named.tensors;
  for (NamedTensor& nt : old)
    for (const auto& [layer, index] : positions) {
      const std::size_t at = nt.name.find("." + layer + ".");
      if (at != std::string::npos) nt.name.replace(at + 1, layer.size(), index);
    }
  ASSERT_NE(std::find_if(old.begin(), old.end(),
                         [](const NamedTensor& nt) { return nt.name == "model.9.weight"; }),
            old.end());
  std::map<std::string, std::string> meta = named.metadata;
  meta["format"] = kPositionalCheckpointFormat;
  TrainConfig positional = c;
  positional.optimizer.decay_only = {"9.weight", "11.weight"};
  meta["config"] = positional.to_json().dump();
  save_safetensors(dir / "old.safetensors", old, meta);

  const SafetensorsFile upgraded = read_checkpoint(dir / "old.safetensors");
  EXPECT_EQ(upgraded.metadata.at("format"), kCheckpointFormat);
  ASSERT_EQ(upgraded.tensors.size(), named.tensors.size());
  for (std::size_t i = 0; i < named.tensors.size(); ++i)
    EXPECT_EQ(upgraded.tensors[i].name, named.tensors[i].name);
  EXPECT_EQ(stored_config(upgraded).optimizer.decay_only, oc.decay_only);
  std::shared_ptr<models::Model> loaded = models::build_model("cifar10-tf");
  load_model_state(upgraded, *loaded);
  EXPECT_EQ(loaded->parameters().back().second.to_vector(),
            m->parameters().back().second.to_vector());
}

}  // namespace
}  // namespace epoch::train
