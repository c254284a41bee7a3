// The one training step: it computes exactly forward, loss, backward and the update (bitwise
// against those calls written out), follows its schedule, calls the before-update hook once
// with every gradient in place, and says where its time went.
#include "epoch/train/step.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>

#include "epoch/autograd/autograd.h"
#include "epoch/nn/layers.h"
#include "epoch/ops/backend.h"
#include "epoch/ops/elementwise.h"
#include "testing/testing.h"

namespace epoch::train {
namespace {

std::shared_ptr<models::Model> fresh_model() {
  std::shared_ptr<models::Model> m = models::build_model("autoencoder");
  nn::initialize(*m, 5);
  return m;
}

TEST(Step, IsForwardLossBackwardUpdate) {
  const Tensor x = testing::random_tensor({4, 1, 28, 28}, 1, 0.0f, 1.0f);
  const Tensor labels = Tensor::from_ints({4}, std::vector<std::int32_t>{0, 1, 2, 3});
  optim::OptimizerConfig oc = optim::optimizer_defaults("adam");
  oc.lr = 1e-3f;

  std::shared_ptr<models::Model> a = fresh_model();
  optim::ScheduleConfig sc;
  sc.kind = optim::ScheduleKind::constant;
  sc.base_lr = 1e-3f;
  sc.total_steps = 3;
  Step step(*a, oc, optim::make_schedule(sc), 9);
  int hook_calls = 0;
  step.before_update = [&](Tensor& grads) {
    ++hook_calls;
    EXPECT_EQ(grads.numel(), a->parameter_count());
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
  std::shared_ptr<models::Model> b = fresh_model();
  nn::FlatParameters flat = nn::flatten_parameters(*b);
  auto opt = optim::make_optimizer(oc, b->parameters());
  for (int i = 0; i < 3; ++i) {
    b->set_step_seed(9, static_cast<std::uint64_t>(i));
    ops::fill_(flat.grads, 0.0f);
    Tensor loss = b->loss(b->forward(x), x, labels);
    loss.backward();
    opt->step();
    EXPECT_EQ(loss.item(), losses[static_cast<std::size_t>(i)]);
  }
  EXPECT_EQ(step.flat().values.to_vector(), flat.values.to_vector());
}

// As DDP, the first bucket (the last layers, whose gradients come first) holds about 1 MiB,
// the others up to the bucket size: cifar10-keras's 4.7 MB dense layer closes the first.
TEST(Step, TheFirstBucketIsSmallSoCommunicationStartsEarly) {
  std::shared_ptr<models::Model> m = models::build_model("cifar10-keras");
  nn::initialize(*m, 5);
  Step step(*m, optim::optimizer_defaults("sgd"), nullptr, 1);
  const auto& buckets = step.buckets();
  ASSERT_EQ(buckets.size(), 2u);
  const nn::NamedTensors params = m->parameters();
  std::int64_t convs = 0;
  for (const auto& [name, t] : params)
    if (name.rfind("conv", 0) == 0) convs += t.numel();
  EXPECT_EQ(buckets[0].offset, convs) << "the dense layers' parameters";
  EXPECT_EQ(buckets[1].offset, 0);
  EXPECT_EQ(buckets[1].count, convs) << "every convolution's, in the second";
}

// Buckets cover the flat gradients from the end back, each whole parameters; during backward
// each is handed over once, in order, as soon as it is complete (its values then are the final
// ones), and the first is handed over while earlier layers' gradients are still zero.
TEST(Step, HandsOverEachGradientBucketWhenItIsComplete) {
  std::shared_ptr<models::Model> m = fresh_model();  // four dense layers: 8 parameters
  Step step(*m, optim::optimizer_defaults("sgd"), nullptr, 1);
  EXPECT_EQ(step.buckets().size(), 1u) << "the autoencoder's 0.9 MB fit one 25 MiB bucket";
  step.set_bucket_bytes(64 * 256 * 4);  // about one 256x64 matrix per bucket
  const auto& buckets = step.buckets();
  ASSERT_GE(buckets.size(), 3u);
  std::int64_t end = step.flat().grads.numel();
  for (const GradBucket& b : buckets) {
    EXPECT_EQ(b.offset + b.count, end) << "bucket " << b.index;
    end = b.offset;
  }
  EXPECT_EQ(end, 0);

  const Tensor x = testing::random_tensor({4, 1, 28, 28}, 1, 0.0f, 1.0f);
  const Tensor labels = Tensor::from_ints({4}, std::vector<std::int32_t>{0, 1, 2, 3});
  std::vector<int> order;
  std::vector<std::vector<float>> at_hand_over;
  bool first_layer_zero_at_first = false;
  Tensor first_weight_grad = m->parameters().front().second.grad();
  step.on_bucket_ready = [&](const GradBucket& b) {
    order.push_back(b.index);
    at_hand_over.push_back(b.grads.to_vector());
    if (b.index == 0) {
      const std::vector<float> g = first_weight_grad.to_vector();
      first_layer_zero_at_first = std::all_of(g.begin(), g.end(), [](float v) { return v == 0; });
    }
  };
  step.before_update = [&](Tensor& grads) {
    for (const GradBucket& b : buckets)
      EXPECT_EQ(at_hand_over[static_cast<std::size_t>(b.index)],
                grads.narrow0(b.offset, b.count).to_vector())
          << "bucket " << b.index << " changed after it was handed over";
  };
  (void)step.run(x, labels, 0, 0);
  std::vector<int> expected(buckets.size());
  for (std::size_t i = 0; i < expected.size(); ++i) expected[i] = static_cast<int>(i);
  EXPECT_EQ(order, expected);
  EXPECT_TRUE(first_layer_zero_at_first);
  order.clear();
  at_hand_over.clear();
  (void)step.run(x, labels, 1, 1);
  EXPECT_EQ(order, expected) << "every step hands every bucket over once";
}

// The bucket hook changes nothing: the same steps with and without it give the same bits.
TEST(Step, BucketHookLeavesTheStepUnchanged) {
  const Tensor x = testing::random_tensor({4, 1, 28, 28}, 1, 0.0f, 1.0f);
  const Tensor labels = Tensor::from_ints({4}, std::vector<std::int32_t>{0, 1, 2, 3});
  std::shared_ptr<models::Model> a = fresh_model(), b = fresh_model();
  Step plain(*a, optim::optimizer_defaults("adam"), nullptr, 1);
  Step hooked(*b, optim::optimizer_defaults("adam"), nullptr, 1);
  hooked.set_bucket_bytes(4096);
  int calls = 0;
  hooked.on_bucket_ready = [&](const GradBucket&) { ++calls; };
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(plain.run(x, labels, i, static_cast<std::uint64_t>(i)).item(),
              hooked.run(x, labels, i, static_cast<std::uint64_t>(i)).item());
  }
  EXPECT_EQ(calls, 2 * static_cast<int>(hooked.buckets().size()));
  EXPECT_EQ(plain.flat().values.to_vector(), hooked.flat().values.to_vector());
}

// The step does not zero its gradients before backward: each parameter's first contribution
// replaces what the buffer held, so poisoned buffers give the gradients of zeroed ones and a
// plain backward, with and without the bucket hook.
TEST(Step, WhatTheGradientBuffersHeldBeforeTheStepDoesNotMatter) {
  const Tensor x = testing::random_tensor({4, 1, 28, 28}, 1, 0.0f, 1.0f);
  const Tensor labels = Tensor::from_ints({4}, std::vector<std::int32_t>{0, 1, 2, 3});
  std::shared_ptr<models::Model> ref = fresh_model();
  nn::FlatParameters flat = nn::flatten_parameters(*ref);
  ref->set_step_seed(1, 0);
  ops::fill_(flat.grads, 0.0f);
  ref->loss(ref->forward(x), x, labels).backward();
  const std::vector<float> want = flat.grads.to_vector();
  for (const bool hooked : {false, true}) {
    std::shared_ptr<models::Model> m = fresh_model();
    Step step(*m, optim::optimizer_defaults("adam"), nullptr, 1);
    if (hooked) step.on_bucket_ready = [](const GradBucket&) {};
    std::vector<float> got;
    step.before_update = [&](Tensor& g) { got = g.to_vector(); };
    ops::fill_(step.flat().grads, std::numeric_limits<float>::quiet_NaN());
    (void)step.run(x, labels, 0, 0);
    ASSERT_EQ(want, got) << (hooked ? "with" : "without") << " the bucket hook";
  }
}

// A classifier with a layer its forward pass skips: the graph never reaches its parameters.
class SkipsALayer : public models::Model {
 public:
  SkipsALayer() : Model(models::find_model("fmnist-cnn")) {
    register_module("used", used_);
    register_module("skipped", skipped_);
  }
  Tensor forward(const Tensor& x) override { return used_->forward(x.view({x.size(0), 784})); }
  std::string describe() const override { return "skips a layer"; }

 private:
  std::shared_ptr<nn::Linear> used_ = std::make_shared<nn::Linear>(784, 10);
  std::shared_ptr<nn::Linear> skipped_ = std::make_shared<nn::Linear>(784, 10);
};

// Parameters the graph does not reach get zero gradients, whatever their buffers held, and so
// do the buckets handed over with them.
TEST(Step, ParametersTheGraphDoesNotReachGetZeros) {
  const Tensor x = testing::random_tensor({4, 1, 28, 28}, 1, 0.0f, 1.0f);
  const Tensor labels = Tensor::from_ints({4}, std::vector<std::int32_t>{0, 1, 2, 3});
  for (const bool hooked : {false, true}) {
    SkipsALayer m;
    nn::initialize(m, 3);
    Step step(m, optim::optimizer_defaults("sgd"), nullptr, 1);
    bool finite_buckets = true;
    if (hooked)
      step.on_bucket_ready = [&](const GradBucket& b) {
        for (float v : b.grads.to_vector()) finite_buckets = finite_buckets && std::isfinite(v);
      };
    std::vector<float> got;
    step.before_update = [&](Tensor& g) { got = g.to_vector(); };
    ops::fill_(step.flat().grads, std::numeric_limits<float>::quiet_NaN());
    (void)step.run(x, labels, 0, 0);
    EXPECT_TRUE(finite_buckets);
    std::int64_t at = 0;
    for (const auto& [name, t] : m.parameters()) {
      const bool skipped = name.rfind("skipped.", 0) == 0;
      bool zeros = true, finite = true;
      for (std::int64_t i = at; i < at + t.numel(); ++i) {
        zeros = zeros && got[static_cast<std::size_t>(i)] == 0.0f;
        finite = finite && std::isfinite(got[static_cast<std::size_t>(i)]);
      }
      EXPECT_TRUE(finite) << name;
      if (skipped) {
        EXPECT_TRUE(zeros) << name;
      }
      at += t.numel();
    }
  }
}

// Three steps of the cnn under a context; returns the final parameters.
std::vector<float> three_steps(const ops::Context& context) {
  std::shared_ptr<models::Model> m = models::build_model("fmnist-cnn");
  nn::initialize(*m, 2);
  Step step(*m, optim::optimizer_defaults("adam"), nullptr, 4, context);
  const Tensor x = testing::random_tensor({8, 1, 28, 28}, 3, 0.0f, 1.0f);
  const Tensor labels = Tensor::from_ints({8}, std::vector<std::int32_t>{0, 1, 2, 3, 4, 5, 6, 7});
  for (int i = 0; i < 3; ++i) (void)step.run(x, labels, i, static_cast<std::uint64_t>(i));
  return step.flat().values.to_vector();
}

// Two configurations in one process at once, each on its own thread: a step installs its
// context on its own thread only, so each trains exactly as it does alone, and the caller's
// context is as it was.
TEST(Step, ConfigurationsRunSideBySide) {
  const ops::Context reference{ops::CpuKernels::reference, 1};
  const ops::Context fast{ops::CpuKernels::fast, 2};
  const std::vector<float> reference_alone = three_steps(reference);
  const std::vector<float> fast_alone = three_steps(fast);
  const ops::Context before = ops::current_context();

  std::vector<float> reference_together, fast_together;
  std::thread a([&] { reference_together = three_steps(reference); });
  std::thread b([&] { fast_together = three_steps(fast); });
  a.join();
  b.join();
  EXPECT_EQ(reference_together, reference_alone);
  EXPECT_EQ(fast_together, fast_alone);
  EXPECT_EQ(ops::current_context().kernels, before.kernels);
  EXPECT_EQ(ops::current_context().threads, before.threads);
}

TEST(Step, ContextGuardIsPerThreadAndRestores) {
  const ops::Context before = ops::current_context();
  {
    const ops::ContextGuard guard(ops::Context{ops::CpuKernels::reference, 1});
    EXPECT_EQ(ops::cpu_kernels(), ops::CpuKernels::reference);
    EXPECT_EQ(ops::num_threads(), 1);
    ops::Context other;
    std::thread t([&] { other = ops::current_context(); });
    t.join();
    EXPECT_EQ(other.kernels, ops::default_context().kernels);
  }
  EXPECT_EQ(ops::cpu_kernels(), before.kernels);
  EXPECT_EQ(ops::num_threads(), before.threads);
  EXPECT_THROW(ops::ContextGuard(ops::Context{ops::CpuKernels::fast, ops::kMaxThreads + 1}),
               ConfigError);
}

}  // namespace
}  // namespace epoch::train
