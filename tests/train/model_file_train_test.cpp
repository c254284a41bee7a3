// Training a model file: a Keras file trains on generated inputs of its own shape (any channel
// count) and its loss falls; the same file and seed give the same bits; the checkpoint holds the
// description and the file's SHA-256, so the run resumes and loads with the file gone.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "epoch/models/model_file.h"
#include "epoch/tensor/safetensors.h"
#include "epoch/tensor/sha256.h"
#include "epoch/train/inference.h"
#include "epoch/train/trainer.h"
#include "train/run_testing.h"

namespace epoch::train {
namespace {

namespace fs = std::filesystem;

std::string fixture(const std::string& name) {
  return std::string(EPOCH_SOURCE_DIR) + "/tests/models/keras/" + name;
}

TrainConfig file_run(const std::string& model, const std::string& out) {
  TrainConfig c = testing::small_run_config(out);
  c.run.model = model;
  c.data.synthetic_count = 256;
  c.run.log_every = 1;
  return c;
}

double first_loss(const std::string& run_dir) {
  for (const nlohmann::json& r : testing::read_metrics(run_dir))
    if (r.contains("loss")) return r["loss"].get<double>();
  return -1;
}

TEST(ModelFileTraining, KerasFilesTrainOnInputsOfTheirOwnShape) {
  const std::string dir = ::testing::TempDir() + "/epoch_model_file_train";
  fs::remove_all(dir);
  // odd_layers takes 4 channels of 20x20, residual a Functional graph, autoencoder vectors.
  for (const char* name : {"odd_layers.json", "residual.keras", "autoencoder.json"}) {
    SCOPED_TRACE(name);
    const std::string out = dir + "/" + name;
    const TrainResult r = train(file_run(fixture(name), out), nullptr);
    EXPECT_EQ(r.epochs, 2);
    EXPECT_LT(r.train_loss, first_loss(out)) << "the loss did not fall";
  }
}

TEST(ModelFileTraining, TheCheckpointCarriesTheModel) {
  const std::string dir = ::testing::TempDir() + "/epoch_model_file_ckpt";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string model = dir + "/net.json";
  fs::copy_file(fixture("residual.json"), model);
  std::ifstream in(model, std::ios::binary);
  const std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  TrainConfig c = file_run(model, dir + "/a");
  c.run.epochs = 1;
  const TrainResult a = train(c, nullptr);
  c.run.out_dir = dir + "/b";
  (void)train(c, nullptr);
  testing::expect_same_checkpoint_tensors(a.checkpoint, dir + "/b/checkpoints/last.safetensors");
  const SafetensorsFile f = load_safetensors(a.checkpoint);
  EXPECT_EQ(f.metadata.at("model_sha256"), sha256_hex(bytes));
  EXPECT_NE(f.metadata.at("model_description").find("\"epoch-model\""), std::string::npos);
  std::ifstream config(dir + "/a/config.json");
  EXPECT_EQ(nlohmann::json::parse(config)["model_sha256"], sha256_hex(bytes));
  // The file gone (another program's process would not find it): the checkpoint's own
  // description is the one loaded (the command-line tests run that in a new process).
  fs::remove(model);
  std::ofstream(model) << "{not a model";
  const TrainedModel t = load_trained_model(a.checkpoint);
  EXPECT_EQ(t.model->parameter_count(), 5461 - 64);  // less batch norm's running statistics
}

}  // namespace
}  // namespace epoch::train
