// The training step (see step.h).
#include "epoch/train/step.h"

#include <algorithm>
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
      flat_(nn::flatten_parameters(model)),
      optimizer_(optim::make_optimizer(optimizer, model.parameters())),
      schedule_(std::move(schedule)),
      seed_(seed),
      context_(context) {
  const nn::NamedTensors params = model.parameters();
  for (std::size_t i = 0; i < params.size(); ++i) {
    parameter_index_[params[i].second.autograd_meta().get()] = static_cast<int>(i);
    parameter_metas_.push_back(params[i].second.autograd_meta());
  }
  set_bucket_bytes(kDefaultBucketBytes);
}

void Step::set_bucket_bytes(std::int64_t bytes) {
  EPOCH_CHECK(bytes > 0, "bucket size must be positive, got ", bytes);
  const nn::NamedTensors params = model_.parameters();
  std::vector<std::int64_t> offsets(params.size() + 1, 0);
  for (std::size_t i = 0; i < params.size(); ++i)
    offsets[i + 1] = offsets[i] + params[i].second.numel();
  buckets_.clear();
  bucket_of_.assign(params.size(), 0);
  std::size_t end = params.size();  // one past the bucket's last parameter
  while (end > 0) {
    // The first bucket (ready first) at most kFirstBucketBytes, so communication starts early.
    const std::int64_t cap = buckets_.empty() ? std::min(bytes, kFirstBucketBytes) : bytes;
    std::size_t begin = end - 1;
    while (begin > 0 && (offsets[end] - offsets[begin]) * 4 < cap) --begin;
    GradBucket b;
    b.index = static_cast<int>(buckets_.size());
    b.offset = offsets[begin];
    b.count = offsets[end] - offsets[begin];
    b.grads = flat_.grads.narrow0(b.offset, b.count);
    for (std::size_t i = begin; i < end; ++i) bucket_of_[i] = b.index;
    buckets_.push_back(std::move(b));
    end = begin;
  }
}

void Step::mark_gradients_stale() {
  for (const auto& meta : parameter_metas_) meta->grad_stale = true;
}

void Step::zero_if_stale(autograd::Meta& meta) {
  if (!meta.grad_stale) return;
  ops::fill_(meta.grad, 0.0f);
  meta.grad_stale = false;
}

void Step::backward(const Tensor& loss) {
  if (!on_bucket_ready) {
    loss.backward();
    for (const auto& meta : parameter_metas_) zero_if_stale(*meta);  // the graph did not reach
    return;
  }
  std::vector<int> waiting(buckets_.size(), 0);  // parameters not yet complete, per bucket
  for (int b : bucket_of_) ++waiting[static_cast<std::size_t>(b)];
  std::size_t next = 0;  // the first bucket not yet handed over
  const auto hand_over_ready = [&] {
    while (next < buckets_.size() && waiting[next] == 0) on_bucket_ready(buckets_[next++]);
  };
  autograd::backward(loss, Tensor(), [&](const autograd::Meta& leaf) {
    const auto it = parameter_index_.find(&leaf);
    if (it == parameter_index_.end()) return;  // a leaf that is not a parameter
    zero_if_stale(*parameter_metas_[static_cast<std::size_t>(it->second)]);  // nothing flowed
    --waiting[static_cast<std::size_t>(bucket_of_[static_cast<std::size_t>(it->second)])];
    hand_over_ready();
  });
  for (const auto& meta : parameter_metas_) zero_if_stale(*meta);  // the graph did not reach
  for (int& w : waiting) w = 0;  // parameters the graph did not reach have zeros
  hand_over_ready();
}

Tensor Step::run(const Tensor& x, const Tensor& labels, std::int64_t position, std::uint64_t index,
                 StepTimes* times) {
  const ops::ContextGuard context(context_);
  const auto t0 = Clock::now();
  model_.set_step_seed(seed_, index);
  if (schedule_) optimizer_->set_lr(schedule_->lr_at(position));
  mark_gradients_stale();
  Tensor loss = model_.loss(model_.forward(x), x, labels);
  if (times) sync(loss);
  const auto t1 = Clock::now();
  backward(loss);
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

void Step::run_without_batch(std::int64_t position) {
  const ops::ContextGuard context(context_);
  if (schedule_) optimizer_->set_lr(schedule_->lr_at(position));
  ops::fill_(flat_.grads, 0.0f);
  for (const auto& meta : parameter_metas_) meta->grad_stale = false;
  if (on_bucket_ready)
    for (const GradBucket& b : buckets_) on_bucket_ready(b);
  if (before_update) before_update(flat_.grads);
  optimizer_->step();
}

}  // namespace epoch::train
