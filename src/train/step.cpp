// The training step (see step.h).
#include "epoch/train/step.h"

#include <chrono>

#include "epoch/autograd/autograd.h"
#include "epoch/ops/elementwise.h"

namespace epoch::train {
namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

/// Waits for a device's queued work on `t` (a one-element copy to the host); nothing on the CPU.
void sync(const Tensor& t) {
  if (t.device().is_cuda()) (void)t.view({t.numel()}).narrow0(0, 1).to(Device::cpu());
}

}  // namespace

Step::Step(models::Model& model, const optim::OptimizerConfig& optimizer,
           std::unique_ptr<optim::LrSchedule> schedule, std::uint64_t seed, ops::Context context)
    : model_(model),
      flat_(nn::flatten_parameters(*model.net)),
      optimizer_(optim::make_optimizer(optimizer, model.net->parameters())),
      schedule_(std::move(schedule)),
      seed_(seed),
      context_(context) {}

Tensor Step::run(const Tensor& x, const Tensor& labels, std::int64_t position, std::uint64_t index,
                 StepTimes* times) {
  const ops::ContextGuard context(context_);
  const auto t0 = Clock::now();
  model_.net->set_step_seed(seed_, index);
  if (schedule_) optimizer_->set_lr(schedule_->lr_at(position));
  ops::fill_(flat_.grads, 0.0f);
  Tensor loss = models::model_loss(model_.spec.task, model_.net->forward(x), x, labels);
  if (times) sync(loss);
  const auto t1 = Clock::now();
  loss.backward();
  if (times) sync(flat_.grads);
  const auto t2 = Clock::now();
  if (before_update) before_update(flat_.grads);
  optimizer_->step();
  if (times) {
    sync(flat_.values);
    const auto t3 = Clock::now();
    times->forward_s = seconds(t0, t1);
    times->backward_s = seconds(t1, t2);
    times->update_s = seconds(t2, t3);
  }
  return loss;
}

}  // namespace epoch::train
