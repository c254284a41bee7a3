// One training step: forward, loss, backward and the optimizer update on a model whose
// parameters and gradients live in flat buffers. Training and every benchmark run this same
// code, so what is measured is what trains; what changes a step (an all-reduce of the
// gradients, say) hooks in here once.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "epoch/autograd/autograd.h"
#include "epoch/models/zoo.h"
#include "epoch/nn/flat_parameters.h"
#include "epoch/ops/backend.h"
#include "epoch/optim/optimizer.h"
#include "epoch/optim/schedule.h"

namespace epoch::train {

/// Where one step's time went, in seconds (filled when asked for; on a GPU each phase is
/// synchronized before it is timed, which costs a little).
struct StepTimes {
  double forward_s = 0.0;  // forward and loss
  double backward_s = 0.0;
  double update_s = 0.0;  // the before-update hook and the optimizer
};

/// A range of the flat gradient buffer that backward completes together. Buckets hold whole
/// parameters, taken from the last parameter back (the order backward produces them), so the
/// first bucket is ready first; the layout depends only on the model and the bucket size, so
/// every process training the same model has the same buckets.
struct GradBucket {
  int index = 0;            // 0 is ready first
  std::int64_t offset = 0;  // first element in the flat buffer
  std::int64_t count = 0;   // elements
  Tensor grads;             // the view of the flat gradients [offset, offset + count)
};

/// The default bucket size (PyTorch DDP's 25 MiB), and the first bucket's, which backward
/// completes first (DDP's 1 MiB): small, so the first all-reduce starts early.
inline constexpr std::int64_t kDefaultBucketBytes = std::int64_t{25} << 20;
inline constexpr std::int64_t kFirstBucketBytes = std::int64_t{1} << 20;

class Step {
 public:
  /// Takes the model (already on its device and initialized), flattens its parameters and
  /// gradients, and builds the optimizer over them. `schedule` may be null: the optimizer's
  /// learning rate is then left as it is. Every run() installs `context` (kernels and
  /// threads) on the calling thread for its duration.
  Step(models::Model& model, const optim::OptimizerConfig& optimizer,
       std::unique_ptr<optim::LrSchedule> schedule, std::uint64_t seed,
       ops::Context context = ops::current_context());

  /// Runs during backward for each gradient bucket as soon as all of its gradients are
  /// complete, in bucket order, every bucket once per step (a bucket whose parameters the
  /// graph does not reach is handed over when backward ends); where an all-reduce of that
  /// bucket starts, overlapping the rest of backward.
  std::function<void(const GradBucket& bucket)> on_bucket_ready;

  /// Regroups the gradients into buckets of about `bytes` (at least one parameter each; the
  /// first about min(bytes, kFirstBucketBytes)).
  void set_bucket_bytes(std::int64_t bytes);
  const std::vector<GradBucket>& buckets() const { return buckets_; }

  /// Runs once between backward and the update with the flat gradient buffer, every gradient
  /// complete (where gradients are averaged across processes).
  std::function<void(Tensor& grads)> before_update;

  /// One step on a batch x (N, ...) with labels (N) i32, both on the model's device.
  /// `position` is the schedule's step (the planned step of the run), `index` the count of
  /// steps taken (dropout streams are drawn from it). Returns the loss, not synchronized.
  Tensor run(const Tensor& x, const Tensor& labels, std::int64_t position, std::uint64_t index,
             StepTimes* times = nullptr);

  /// The step of a rank whose share of the global batch had no usable sample (all bad images):
  /// zero gradients go through the same hooks, in bucket order, and the optimizer steps on
  /// what the other ranks sent, so every rank stays in step.
  void run_without_batch(std::int64_t position);

  optim::Optimizer& optimizer() { return *optimizer_; }
  nn::FlatParameters& flat() { return flat_; }

 private:
  models::Model& model_;
  nn::FlatParameters flat_;
  std::unique_ptr<optim::Optimizer> optimizer_;
  std::unique_ptr<optim::LrSchedule> schedule_;
  void backward(const Tensor& loss);

  std::uint64_t seed_;
  ops::Context context_;
  std::vector<GradBucket> buckets_;
  std::vector<int> bucket_of_;  // per parameter (Module::parameters() order)
  std::unordered_map<const autograd::Meta*, int> parameter_index_;
  std::vector<std::shared_ptr<autograd::Meta>> parameter_metas_;  // Module::parameters() order
  // Instead of zeroing the gradients before backward: their first contribution replaces them
  // (autograd::Meta::grad_stale), and those that got none are zeroed when complete.
  void mark_gradients_stale();
  void zero_if_stale(autograd::Meta& meta);
};

}  // namespace epoch::train
