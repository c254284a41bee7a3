// Image batches for a Session: the loader's batches of each epoch's order (this rank's shard
// of every global batch under mpirun), and the evaluation of the validation or test images.
// Internal to the train layer.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "batch_source.h"
#include "epoch/data/loader.h"
#include "epoch/tensor/warnings.h"
#include "epoch/train/train_config.h"
#include "epoch/train/training_data.h"

namespace epoch::train {

class ImageBatches final : public BatchSource {
 public:
  /// `workers`: loader threads. `rank` of `world` data-parallel processes.
  ImageBatches(const TrainConfig& c, const data::SampleSource& train, const data::Preprocessing& pre,
               int workers, int rank, int world, bool from_files, Warnings* warnings);

  std::int64_t steps_per_epoch() const override { return steps_per_epoch_; }
  void start_epoch(std::int64_t epoch, std::int64_t first_step) override;
  std::optional<SourceBatch> next(std::int64_t step) override;
  bool can_stop_here() const override;
  double wait_seconds() const override { return loader_.stats().wait_s; }
  std::int64_t bad_samples() const override;
  std::string nothing_trained(std::int64_t epoch) const override;

  std::int64_t global_batch() const { return global_batch_; }

 private:
  const TrainConfig& c_;
  const data::SampleSource& train_;
  data::Loader loader_;
  std::int64_t n_ = 0, global_batch_ = 0, steps_per_epoch_ = 0;
  int rank_ = 0, world_ = 1;
  bool count_each_step_ = false;
  std::size_t bad_at_epoch_start_ = 0;
};

class ImageEvaluation final : public Evaluation {
 public:
  ImageEvaluation(const TrainConfig& c, const models::ModelSpec& spec,
                  const data::SampleSource& val, const std::string& val_name,
                  const data::Preprocessing& pre, int workers, int rank, int world,
                  Warnings* warnings);

  EvalResult evaluate(models::Model& model) override;
  std::int64_t bad_samples() const override;
  std::string nothing_evaluated() const override;

 private:
  const data::SampleSource& val_;
  std::string val_name_;
  data::Loader loader_;
  int rank_ = 0, world_ = 1;
};

}  // namespace epoch::train
