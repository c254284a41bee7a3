// The one training step: it computes exactly forward, loss, backward and the update (bitwise
// against those calls written out), follows its schedule, calls the before-update hook once
// with every gradient in place, and says where its time went.
#include "epoch/train/step.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "epoch/autograd/autograd.h"
#include "epoch/nn/layers.h"
#include "epoch/ops/elementwise.h"
#include "testing/testing.h"

namespace epoch::train {
namespace {

models::Model fresh_model() {
  models::Model m = models::build_model("autoencoder");
  nn::initialize(*m.net, 5);
  return m;
}

TEST(Step, IsForwardLossBackwardUpdate) {
  const Tensor x = testing::random_tensor({4, 1, 28, 28}, 1, 0.0f, 1.0f);
  const Tensor labels = Tensor::from_ints({4}, std::vector<std::int32_t>{0, 1, 2, 3});
  optim::OptimizerConfig oc = optim::optimizer_defaults("adam");
  oc.lr = 1e-3f;

  models::Model a = fresh_model();
  optim::ScheduleConfig sc;
  sc.name = "constant";
  sc.base_lr = 1e-3f;
  sc.total_steps = 3;
  Step step(a, oc, optim::make_schedule(sc), 9);
  int hook_calls = 0;
  step.before_update = [&](Tensor& grads) {
    ++hook_calls;
    EXPECT_EQ(grads.numel(), a.net->parameter_count());
    const std::vector<float> g = grads.to_vector();
    EXPECT_TRUE(std::any_of(g.begin(), g.end(), [](float v) { return v != 0.0f; }));
  };
  std::vector<double> losses;
  for (int i = 0; i < 3; ++i) {
    StepTimes times;
    losses.push_back(step.run(x, labels, i, static_cast<std::uint64_t>(i), &times).item());
    EXPECT_GT(times.forward_s + times.backward_s + times.update_s, 0.0);
  }
  EXPECT_EQ(hook_calls, 3);
  EXPECT_LT(losses.back(), losses.front());

  // The same three steps written out.
  models::Model b = fresh_model();
  nn::FlatParameters flat = nn::flatten_parameters(*b.net);
  auto opt = optim::make_optimizer(oc, b.net->parameters());
  for (int i = 0; i < 3; ++i) {
    b.net->set_step_seed(9, static_cast<std::uint64_t>(i));
    ops::fill_(flat.grads, 0.0f);
    Tensor loss = models::model_loss(b.spec.task, b.net->forward(x), x, labels);
    loss.backward();
    opt->step();
    EXPECT_EQ(loss.item(), losses[static_cast<std::size_t>(i)]);
  }
  EXPECT_EQ(step.flat().values.to_vector(), flat.values.to_vector());
}

}  // namespace
}  // namespace epoch::train
