// Image batches and their evaluation for a Session (see image_source.h).
#include "image_source.h"

#include <algorithm>
#include <numeric>

#include "epoch/data/dataset.h"
#include "epoch/tensor/error.h"

namespace epoch::train {
namespace {

data::LoaderConfig loader_config(const TrainConfig& c, std::int64_t batch, int workers) {
  data::LoaderConfig l;
  l.batch_size = batch;
  l.workers = workers;
  l.prefetch = c.data.prefetch;
  l.seed = c.run.seed;
  l.on_bad_image = c.data.on_bad_image;
  return l;
}

data::LoaderConfig training_loader(const TrainConfig& c, int workers, int world) {
  data::LoaderConfig l = loader_config(c, c.run.batch_size, workers);
  l.keep_empty_batches = world > 1;  // ranks step together, a rank with nothing included
  return l;
}

}  // namespace

ImageBatches::ImageBatches(const TrainConfig& c, const data::SampleSource& train,
                           const data::Preprocessing& pre, int workers, int rank, int world,
                           bool from_files, Warnings* warnings)
    : c_(c),
      train_(train),
      loader_(train, pre, c.input.augment, training_loader(c, workers, world), warnings),
      n_(train.size()),
      global_batch_(c.run.batch_size * world),
      rank_(rank),
      world_(world),
      // Several ranks reading image files agree each step on how many samples survived (a
      // rank whose share was all bad images still takes part, with no gradient of its own).
      count_each_step_(world > 1 && from_files) {
  // One process: ceil(n / batch). Ranks: global batches of batch x world (data::shard_order).
  steps_per_epoch_ = data::global_batches(n_, c.run.batch_size, world);
  if (steps_per_epoch_ == 0)
    EPOCH_THROW(ConfigError, "the training set's ", n_, " samples are fewer than the ", world,
                " ranks");
}

void ImageBatches::start_epoch(std::int64_t epoch, std::int64_t first_step) {
  std::vector<std::int64_t> order = data::epoch_order(n_, c_.run.seed, epoch, true);
  if (world_ > 1) order = data::shard_order(order, c_.run.batch_size, rank_, world_);
  // The same batches as the uninterrupted epoch: each is a slice of the order, whose
  // augmentation draws from (seed, epoch, sample index) alone.
  order.erase(order.begin(),
              order.begin() + std::min<std::int64_t>(first_step * global_batch_,
                                                     static_cast<std::int64_t>(order.size())));
  loader_.start_epoch(epoch, std::move(order));
  bad_at_epoch_start_ = loader_.stats().bad_files.size();
}

std::optional<SourceBatch> ImageBatches::next(std::int64_t step) {
  const data::Batch* batch = loader_.next();
  if (batch == nullptr) return std::nullopt;  // bad images were skipped: fewer batches
  SourceBatch b;
  b.samples = batch->images.size(0);
  if (b.samples > 0) {
    b.x = batch->images;
    b.labels = batch->labels;
  }
  if (!count_each_step_) b.planned_global = std::min(global_batch_, n_ - step * global_batch_);
  return b;
}

bool ImageBatches::can_stop_here() const {
  // After a bad image the batches no longer match the order's slices one to one, so the
  // epoch runs to its end, where the stop is taken.
  return loader_.stats().bad_files.size() == bad_at_epoch_start_;
}

std::int64_t ImageBatches::bad_samples() const {
  return static_cast<std::int64_t>(loader_.stats().bad_files.size());
}

std::string ImageBatches::nothing_trained(std::int64_t epoch) const {
  return train_.description() + ": every training image of epoch " + std::to_string(epoch + 1) +
         " was skipped as bad (see the warnings)";
}

ImageEvaluation::ImageEvaluation(const TrainConfig& c, const models::ModelSpec& spec,
                                 const data::SampleSource& val, const std::string& val_name,
                                 const data::Preprocessing& pre, int workers, int rank, int world,
                                 Warnings* warnings)
    : val_(val),
      val_name_(val_name),
      loader_(val, pre, std::nullopt,
              loader_config(c,
                            c.run.eval_batch_size > 0
                                ? c.run.eval_batch_size
                                : auto_eval_batch_size(spec, c.run.batch_size),
                            workers),
              warnings),
      rank_(rank),
      world_(world) {}

EvalResult ImageEvaluation::evaluate(models::Model& model) {
  // This rank's consecutive share of the samples (all of them for one process).
  const data::ShardSlice s = data::shard_slice(val_.size(), rank_, world_);
  std::vector<std::int64_t> order(static_cast<std::size_t>(s.count));
  std::iota(order.begin(), order.end(), s.offset);
  return train::evaluate(model, loader_, std::move(order));
}

std::int64_t ImageEvaluation::bad_samples() const {
  return static_cast<std::int64_t>(loader_.stats().bad_files.size());
}

std::string ImageEvaluation::nothing_evaluated() const {
  return val_.description() + ": every " + val_name_ +
         " image was skipped as bad (see the warnings), so there is nothing to report";
}

}  // namespace epoch::train
