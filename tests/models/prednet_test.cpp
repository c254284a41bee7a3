// PredNet: parameter counts and FLOPs of the PyTorch definitions (bench/reference/prednet.py),
// the loss terms, predicted frames, loss and gradients of PyTorch's on the same weights and
// sequences (tests/models/reference), the numerical gradient, truncated backpropagation over
// carried state, and bad configurations and inputs.
#include "epoch/models/prednet.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "epoch/autograd/autograd.h"
#include "epoch/autograd/functions.h"
#include "epoch/tensor/safetensors.h"
#include "testing/testing.h"

namespace epoch::models {
namespace {

const SafetensorsFile& golden() {
  static const SafetensorsFile file = load_safetensors(
      std::string(EPOCH_SOURCE_DIR) + "/tests/models/reference/prednet_torch.safetensors");
  return file;
}

ModelSpec video_spec(const PredNetConfig& c, std::int64_t steps) {
  return {"prednet-test",         "", {steps, c.stack[0], c.height, c.width}, 1,
          Task::frame_prediction, {}};
}

PredNetConfig study_config() {
  PredNetConfig c;
  c.height = 120;
  c.width = 160;
  c.peepholes = true;
  c.loss = PredNetLoss::next_frame_mse;
  return c;
}

TEST(PredNet, ParameterCountsAndFlopsMatchThePyTorchDefinitions) {
  const auto summary = nlohmann::json::parse(golden().metadata.at("summary"));
  const PredNetConfig paper;  // the defaults are the paper's
  const auto prednet = build_prednet(video_spec(paper, 10), paper);
  EXPECT_EQ(prednet->parameter_count(), summary["prednet"]["parameters"].get<std::int64_t>());
  EXPECT_EQ(prednet->parameter_count(), 6915948);
  EXPECT_EQ(prednet->flops({10, 3, 128, 160}),
            10 * summary["prednet"]["flops_per_frame"].get<std::int64_t>());
  const auto study = build_prednet(video_spec(study_config(), 20), study_config());
  EXPECT_EQ(study->parameter_count(), summary["prednet-study"]["parameters"].get<std::int64_t>());
  EXPECT_EQ(study->flops({1, 3, 120, 160}),
            summary["prednet-study"]["flops_per_frame"].get<std::int64_t>());
  EXPECT_EQ(prednet->output_shape({10, 3, 128, 160}), (Shape{10, 4}));
  EXPECT_EQ(study->output_shape({20, 3, 120, 160}), (Shape{20, 1}));
}

PredNetConfig golden_config(const std::string& name) {
  const auto c = nlohmann::json::parse(golden().metadata.at("configs")).at(name);
  PredNetConfig p;
  p.stack = c["stack"].get<std::vector<std::int64_t>>();
  p.height = c["height"];
  p.width = c["width"];
  p.peepholes = c["peepholes"];
  p.gate = c["gate"] == "sigmoid" ? nn::Activation::sigmoid : nn::Activation::hard_sigmoid;
  p.loss = c["loss"] == "error_units" ? PredNetLoss::error_units : PredNetLoss::next_frame_mse;
  p.layer_weights = c["layer_weights"].get<std::vector<float>>();
  return p;
}

void compare_with_torch(const std::string& name) {
  const SafetensorsFile& ref = golden();
  const PredNetConfig config = golden_config(name);
  const Tensor& x = ref.at(name + ".x");
  const auto model = build_prednet(video_spec(config, x.size(1)), config);
  const nn::NamedTensors params = model->parameters();
  for (const auto& [pname, p] : params) {
    Tensor target = p;
    target.copy_from(ref.at(name + "." + pname));
  }
  const PredNet::Outputs out = model->run(x);
  EXPECT_TRUE(testing::allclose(out.terms, ref.at(name + ".terms"), 1e-6f, 1e-4f)) << name;
  EXPECT_TRUE(testing::allclose(out.predictions, ref.at(name + ".predictions"), 1e-5f, 1e-4f))
      << name;
  const Tensor loss = model->loss(out.terms, x, Tensor());
  EXPECT_TRUE(testing::allclose(reshape(loss, {1}), ref.at(name + ".loss"), 1e-6f, 1e-4f)) << name;
  loss.backward();
  for (const auto& [pname, p] : params)
    EXPECT_TRUE(testing::allclose(p.grad(), ref.at(name + ".grad." + pname), 1e-6f, 2e-3f))
        << name << " gradient of " << pname;
}

TEST(PredNet, MatchesPyTorchOnTheSameWeightsWithErrorUnits) { compare_with_torch("errors"); }

TEST(PredNet, MatchesPyTorchOnTheSameWeightsWithPeepholesAndNextFrameMse) {
  compare_with_torch("study");
}

PredNetConfig tiny_config(PredNetLoss loss) {
  PredNetConfig c;
  c.stack = {2, 3};
  c.height = c.width = 4;
  c.gate = nn::Activation::sigmoid;
  c.loss = loss;
  c.layer_weights = {1.0f, 0.5f};
  c.peepholes = loss == PredNetLoss::next_frame_mse;
  return c;
}

// The loss as a function of the sequence and every parameter, for the numerical gradient:
// each call binds the model's parameters to the inputs it is given (Module::rebind).
void gradcheck_prednet(PredNetLoss kind) {
  const PredNetConfig config = tiny_config(kind);
  const auto model = build_prednet(video_spec(config, 3), config);
  const nn::NamedTensors params = model->parameters();
  std::vector<Tensor> leaves = {testing::random_tensor({1, 3, 2, 4, 4}, 1, 0.05f, 0.95f)};
  for (std::size_t k = 0; k < params.size(); ++k)
    leaves.push_back(testing::random_tensor(params[k].second.shape(), 10 + k, -0.5f, 0.5f));
  for (Tensor& t : leaves) t.set_requires_grad(true);
  const auto f = [&](const std::vector<Tensor>& in) {
    std::size_t k = 0;
    model->rebind([&](const std::string&, const Tensor&) { return in[++k]; },
                  [](const std::string&, const Tensor& t) { return t; });
    return reshape(model->loss(model->forward(in[0]), in[0], Tensor()), {1});
  };
  testing::GradcheckOptions opts;
  opts.eps = 2e-3f;
  EXPECT_TRUE(testing::gradcheck(f, leaves, opts));
}

TEST(PredNet, GradientCheckWithErrorUnits) { gradcheck_prednet(PredNetLoss::error_units); }
TEST(PredNet, GradientCheckWithPeepholesAndNextFrameMse) {
  gradcheck_prednet(PredNetLoss::next_frame_mse);
}

TEST(PredNet, CarriedStateContinuesTheSequenceAndCutsTheGradient) {
  PredNetConfig config = tiny_config(PredNetLoss::error_units);
  const auto whole = build_prednet(video_spec(config, 6), config);
  config.carry_state = true;
  const auto windows = build_prednet(video_spec(config, 3), config);
  nn::initialize(*whole, 4);
  nn::initialize(*windows, 4);
  const Tensor x = testing::random_tensor({2, 6, 2, 4, 4}, 3, 0.0f, 1.0f);
  const Tensor all = whole->forward(x);
  Tensor first_x = slice(x, 1, 0, 3).clone();
  first_x.set_requires_grad(true);
  const Tensor first = windows->forward(first_x);
  Tensor second_x = slice(x, 1, 3, 3).clone();
  second_x.set_requires_grad(true);
  const Tensor second = windows->forward(second_x);
  EXPECT_TRUE(testing::allclose(first, slice(all, 1, 0, 3), 0.0f, 0.0f));
  EXPECT_TRUE(testing::allclose(second, slice(all, 1, 3, 3), 1e-6f, 1e-5f));
  // The second window's loss counts all of its steps (its first prediction saw frames).
  const Tensor l2 = windows->loss(second, second_x, Tensor());
  EXPECT_NEAR(l2.item(),
              (sum(mul(slice(second, 2, 0, 1), Tensor::scalar(1.0f))).item() +
               0.5f * sum(slice(second, 2, 1, 1)).item()) /
                  (2.0f * 3.0f),
              1e-6f);
  l2.backward();
  EXPECT_TRUE(second_x.grad().defined());
  EXPECT_FALSE(first_x.grad().defined());  // the state was cut from the first window's graph
  for (const auto& [name, p] : windows->parameters()) EXPECT_TRUE(p.grad().defined()) << name;
  // After a reset the next call starts from zeros again, as the whole sequence did.
  windows->reset_state();
  EXPECT_TRUE(testing::allclose(windows->forward(slice(x, 1, 0, 3)), first, 0.0f, 0.0f));
}

TEST(PredNet, RefusesBadConfigurationsAndInputs) {
  PredNetConfig c = tiny_config(PredNetLoss::error_units);
  c.height = 5;  // not divisible by 2, for 2 layers
  EXPECT_THROW(build_prednet(video_spec(tiny_config(PredNetLoss::error_units), 3), c),
               InvalidArgument);
  c = tiny_config(PredNetLoss::error_units);
  c.layer_weights = {1.0f};
  EXPECT_THROW(build_prednet(video_spec(c, 3), c), InvalidArgument);
  c = tiny_config(PredNetLoss::error_units);
  c.r_stack = {2};
  EXPECT_THROW(build_prednet(video_spec(c, 3), c), InvalidArgument);
  c = tiny_config(PredNetLoss::error_units);
  const auto model = build_prednet(video_spec(c, 3), c);
  EXPECT_THROW(model->forward(Tensor::zeros({1, 3, 2, 4, 8})), InvalidArgument);
  EXPECT_THROW(model->forward(Tensor::zeros({1, 2, 4, 4})), InvalidArgument);
  EXPECT_THROW(model->loss(model->forward(Tensor::zeros({1, 1, 2, 4, 4})), Tensor(), Tensor()),
               InvalidArgument);  // one frame from zeros: nothing to predict
  EXPECT_THROW(model->output_shape({3, 3, 4, 4}), InvalidArgument);
}

}  // namespace
}  // namespace epoch::models
