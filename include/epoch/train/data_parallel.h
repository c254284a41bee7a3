// What data-parallel training adds to a run (MPI ranks, dist/): parameters and buffers from
// rank 0 at the start, each step's gradients averaged bucket by bucket while backward runs
// (weighted by each rank's share of the global batch), the step's mean loss over the ranks,
// checksums that catch ranks drifting apart, and evaluation results summed over the ranks'
// shards. With a group of one it changes nothing and installs no hook.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "epoch/dist/gradient_averager.h"
#include "epoch/dist/nccl_averager.h"
#include "epoch/dist/process_group.h"
#include "epoch/nn/module.h"
#include "epoch/train/evaluate.h"
#include "epoch/train/step.h"
#include "epoch/train/train_config.h"

namespace epoch::train {

/// The settings of a training run every rank must share (train/config_fields.h's fields but
/// those marked ranks_may_differ, the device's kind and the command), for DataParallel's
/// check.
std::vector<dist::Setting> run_settings_ranks_share(const TrainConfig& c);

/// Communication over an epoch (CommTimes summed).
struct CommTotals {
  double busy_s = 0.0, exposed_s = 0.0;
  std::int64_t bytes = 0, steps = 0;
};

class DataParallel {
 public:
  /// Wires `step`'s hooks to average gradients over `group` in buckets of `bucket_bytes`,
  /// after checking, in one exchange before any other collective of its own, that every rank
  /// holds the same `job` (what the caller knows must match: its command and settings, the
  /// data's size, the steps) and the same parameters, buffers and buckets (their names, shapes
  /// and sizes). dist::RanksDisagree on every rank, naming the first setting that differs,
  /// the ranks and their values, when one does not.
  DataParallel(dist::ProcessGroup& group, Step& step, nn::Module& model, std::int64_t bucket_bytes,
               std::vector<dist::Setting> job, const std::string& what);

  bool distributed() const { return group_.distributed(); }
  bool lead() const { return group_.rank() == 0; }
  int rank() const { return group_.rank(); }
  int world() const { return group_.size(); }

  /// Every parameter and buffer (batch-norm running statistics) from rank 0.
  void broadcast_state();
  /// The buffers alone (before evaluating and checkpointing: batch norm's statistics stay per
  /// rank while training, as DDP's default).
  void broadcast_buffers();
  /// This rank's samples and the global batch's in the coming step: its gradient weight.
  void set_share(std::int64_t local, std::int64_t global);
  /// The samples every rank holds this step (a sum over the ranks: bad images skipped).
  std::int64_t global_count(std::int64_t local) const;
  /// The global batch's mean of per-rank mean losses weighted by share.
  double mean_loss(double local_loss) const;
  /// Throws, naming the ranks and `where`, unless every rank holds the same parameters.
  void check_in_sync(const std::string& where);
  /// An evaluation of each rank's shard, summed over the ranks (counts, loss, correct).
  EvalResult reduce(const EvalResult& local) const;

  const dist::CommTimes& last_step() const { return last_; }
  /// The totals since the last call, then zeroed.
  CommTotals take_totals();

 private:
  dist::ProcessGroup& group_;
  Step& step_;
  nn::Module& model_;
  std::unique_ptr<dist::GradientAverager> averager_;  // host gradients (and CUDA without NCCL)
  std::unique_ptr<dist::NcclAverager> nccl_;          // CUDA gradients
  float weight_ = 1.0f;
  double share_ = 1.0;
  dist::CommTimes last_;
  CommTotals totals_;
  Tensor host_grads_;  // a CUDA run's gradients on the host, in a build without NCCL
};

}  // namespace epoch::train
