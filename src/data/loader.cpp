// The input pipeline (see loader.h): worker threads claim a free buffer slot, then the next
// batch number, fill the slot sample by sample, and publish it; the consumer takes slots in
// batch order. Claiming the slot before the number means every batch being waited for is
// already in someone's hands, so the pipeline cannot deadlock.
#include "epoch/data/loader.h"

#include <chrono>
#include <cmath>
#include <cstring>

namespace epoch::data {

OnBadImage parse_on_bad_image(const std::string& s) {
  if (s == "skip") return OnBadImage::skip;
  if (s == "fail") return OnBadImage::fail;
  EPOCH_THROW(ConfigError, "--on-bad-image ", s, ": expected skip or fail");
}

const char* on_bad_image_name(OnBadImage p) { return p == OnBadImage::skip ? "skip" : "fail"; }

DecodeOptions decode_hint(const Preprocessing& pre, const AugmentConfig* augment) {
  DecodeOptions hint;
  if (pre.resize == Resize::center_crop) return hint;
  if (pre.resize == Resize::resize_center_crop && !(augment && augment->enabled())) {
    // Both sides at least the resized short side: the decode keeps what the crop samples.
    const auto side = static_cast<std::int64_t>(
        std::ceil(static_cast<double>(std::max(pre.width, pre.height)) / kResizeCropFraction));
    hint.min_width = side;
    hint.min_height = side;
    return hint;
  }
  const std::int64_t k = augment && augment->enabled() && augment->random_resized_crop ? 2 : 1;
  hint.min_width = pre.width * k;
  hint.min_height = pre.height * k;
  return hint;
}

namespace {

// Who may touch a slot's buffers: free, nobody (a worker claims it under the lock); filling, the
// worker that claimed it, without the lock; ready, nobody until the consumer takes it under the
// lock; held, the consumer. Everything else changes only under the lock, and order_ and epoch_
// (which fillers read unlocked) only while no slot is filling: start_epoch waits for that.
enum class SlotState { free, filling, ready, held };

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// What happened to one sample of a batch.
struct SampleStatus {
  bool ok = false;
  std::string message;       // a skipped bad image's error
  std::exception_ptr error;  // anything to rethrow to the consumer
};

}  // namespace

struct Loader::Slot {
  SlotState state = SlotState::free;
  std::int64_t batch = -1;
  Tensor images;                                          // (capacity, C, H, W) f32
  Tensor labels;                                          // (capacity) i32
  Batch out;                                              // views of the first `count` rows
  std::vector<Image> scratch;                             // one decode buffer per sample position
  std::vector<SampleStatus> status;                       // per sample position, reused
  std::vector<std::pair<std::int64_t, std::string>> bad;  // (sample, message), in batch order
  std::exception_ptr error;
};

Loader::Loader(const SampleSource& source, Preprocessing preprocessing,
               std::optional<AugmentConfig> augment, LoaderConfig config, Warnings* warnings)
    : source_(&source), pre_(std::move(preprocessing)), config_(config), warnings_(warnings) {
  pre_.validate();
  EPOCH_CHECK(config_.batch_size > 0, "Loader: batch size ", config_.batch_size,
              " must be positive");
  EPOCH_CHECK(config_.workers >= 0, "Loader: ", config_.workers, " workers");
  EPOCH_CHECK(config_.prefetch >= 1, "Loader: prefetch ", config_.prefetch, " must be at least 1");
  if (augment && augment->enabled()) {
    augment->validate();
    augment_ = std::move(augment);
  }
  hint_ = decode_hint(pre_, augment_ ? &*augment_ : nullptr);
  const int n_slots = config_.workers == 0 ? 1 : std::max(config_.prefetch, config_.workers) + 1;
  for (int i = 0; i < n_slots; ++i) slots_.push_back(std::make_unique<Slot>());
  try {
    for (int i = 0; i < config_.workers; ++i) threads_.emplace_back([this] { worker_loop(); });
  } catch (...) {
    stop_workers();  // a thread failed to start: the destructor will not run to join the others
    throw;
  }
}

Loader::~Loader() { stop_workers(); }

void Loader::stop_workers() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : threads_)
    if (t.joinable()) t.join();
  threads_.clear();
}

std::int64_t Loader::batches_per_epoch() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return num_batches_;
}

void Loader::start_epoch(std::int64_t epoch, std::vector<std::int64_t> order) {
  const std::int64_t n = source_->size();
  for (std::int64_t i : order)
    EPOCH_CHECK(i >= 0 && i < n, "Loader::start_epoch: sample ", i, " out of range for ", n);
  std::unique_lock<std::mutex> lock(mutex_);
  ++generation_;
  num_batches_ = 0;  // no new work until the new order is in place
  cv_.wait(lock, [this] {
    for (const auto& s : slots_)
      if (s->state == SlotState::filling) return false;
    return true;
  });
  for (auto& s : slots_) {
    s->state = SlotState::free;
    s->batch = -1;
  }
  held_ = nullptr;
  epoch_ = epoch;
  order_ = std::move(order);
  num_batches_ =
      (static_cast<std::int64_t>(order_.size()) + config_.batch_size - 1) / config_.batch_size;
  next_to_make_ = 0;
  next_to_consume_ = 0;
  lock.unlock();
  cv_.notify_all();
}

void Loader::make_batch(std::int64_t batch, Slot& slot, bool parallel) {
  slot.bad.clear();
  slot.error = nullptr;
  const std::int64_t begin = batch * config_.batch_size;
  const std::int64_t count =
      std::min<std::int64_t>(config_.batch_size, static_cast<std::int64_t>(order_.size()) - begin);
  const std::int64_t sample = pre_.channels * pre_.height * pre_.width;
  if (!slot.images.defined() || slot.images.size(0) < count) {
    slot.images =
        Tensor::empty({config_.batch_size, pre_.channels, pre_.height, pre_.width}, DType::f32);
    slot.labels = Tensor::empty({config_.batch_size}, DType::i32);
  }
  if (static_cast<std::int64_t>(slot.scratch.size()) < count)
    slot.scratch.resize(static_cast<std::size_t>(count));
  float* images = slot.images.f32();                        // (B, C, H, W)
  std::int32_t* labels = slot.labels.data<std::int32_t>();  // (B)
  const std::int64_t* indices = order_.data() + begin;
  const ImageDataset* memory = source_->in_memory();
  const bool plain_copy = memory != nullptr && !augment_ && memory->channels() == pre_.channels &&
                          memory->height() == pre_.height && memory->width() == pre_.width;
  const AugmentConfig* augment = augment_ ? &*augment_ : nullptr;
  slot.status.assign(static_cast<std::size_t>(count), SampleStatus{});

#pragma omp parallel for schedule(dynamic, 1) if (parallel && count > 1)
  for (std::int64_t i = 0; i < count; ++i) {
    const std::int64_t index = indices[i];
    float* dst = images + i * sample;
    SampleStatus& status = slot.status[static_cast<std::size_t>(i)];
    try {
      if (plain_copy) {
        preprocess_sample(pre_, memory->images.data<std::uint8_t>() + index * sample, dst);
      } else {
        const ImageView view =
            source_->fetch(index, hint_, slot.scratch[static_cast<std::size_t>(i)]);
        RandomStream rng = sample_stream(config_.seed, epoch_, index);
        transform_sample(view, pre_, augment, rng, dst);
      }
      labels[i] = source_->label(index);
      status.ok = true;
    } catch (const IoError& e) {
      if (config_.on_bad_image == OnBadImage::skip)
        status.message = e.what();
      else
        status.error = std::current_exception();
    } catch (const Error& e) {
      // Anything else this sample's decoding or transform refused (a size the warp cannot
      // take, say): the same choice, with the file named.
      const std::string message = source_->sample_name(index) + ": " + without_location(e.what());
      if (config_.on_bad_image == OnBadImage::skip)
        status.message = message;
      else
        status.error = std::make_exception_ptr(IoError(message));
    } catch (...) {
      status.error = std::current_exception();
    }
  }
  // Compact the good samples to the front, in batch order.
  std::int64_t kept = 0;
  for (std::int64_t i = 0; i < count; ++i) {
    const SampleStatus& status = slot.status[static_cast<std::size_t>(i)];
    if (status.error && !slot.error) slot.error = status.error;
    if (!status.ok) {
      if (!status.message.empty()) slot.bad.emplace_back(indices[i], status.message);
      continue;
    }
    if (kept != i) {
      std::memmove(images + kept * sample, images + i * sample,
                   static_cast<std::size_t>(sample) * sizeof(float));
      labels[kept] = labels[i];
    }
    ++kept;
  }
  slot.out = kept > 0 ? Batch{slot.images.narrow0(0, kept), slot.labels.narrow0(0, kept)} : Batch{};
  slot.batch = batch;
}

void Loader::worker_loop() {
  for (;;) {
    Slot* slot = nullptr;
    std::int64_t batch = 0, generation = 0;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [&] {
        if (stopping_) return true;
        if (next_to_make_ >= num_batches_) return false;
        for (auto& s : slots_)
          if (s->state == SlotState::free) return true;
        return false;
      });
      if (stopping_) return;
      for (auto& s : slots_)
        if (s->state == SlotState::free) {
          slot = s.get();
          break;
        }
      slot->state = SlotState::filling;
      batch = next_to_make_++;
      generation = generation_;
    }
    const auto t0 = std::chrono::steady_clock::now();
    try {
      make_batch(batch, *slot, false);
    } catch (...) {
      slot->error = std::current_exception();
      slot->batch = batch;
    }
    const double dt = seconds_since(t0);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      slot->state = generation == generation_ ? SlotState::ready : SlotState::free;
      stats_.work_s += dt;
    }
    cv_.notify_all();
  }
}

void Loader::report_bad(Slot& slot) {
  for (const auto& [index, message] : slot.bad) {
    ++stats_.skipped;
    const std::string name = source_->sample_name(index);
    if (!warned_.insert(name).second) continue;
    stats_.bad_files.push_back(name);
    if (warnings_) warnings_->warn("bad images", "skipping bad image: " + message);
  }
}

const Batch* Loader::next() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    if (held_) {
      held_->state = SlotState::free;
      held_ = nullptr;
      cv_.notify_all();
    }
    if (next_to_consume_ >= num_batches_) return nullptr;
    const auto t0 = std::chrono::steady_clock::now();
    Slot* slot = nullptr;
    if (config_.workers == 0) {
      slot = slots_[0].get();
      lock.unlock();
      try {
        make_batch(next_to_consume_, *slot, true);
      } catch (...) {
        slot->error = std::current_exception();
      }
      lock.lock();
      const double dt = seconds_since(t0);
      stats_.work_s += dt;
      stats_.wait_s += dt;
    } else {
      const std::int64_t want = next_to_consume_;
      cv_.wait(lock, [&] {
        for (auto& s : slots_)
          if (s->state == SlotState::ready && s->batch == want) {
            slot = s.get();
            return true;
          }
        return false;
      });
      stats_.wait_s += seconds_since(t0);
    }
    slot->state = SlotState::held;
    held_ = slot;
    ++next_to_consume_;
    report_bad(*slot);
    if (slot->error) {
      std::exception_ptr e = slot->error;
      slot->error = nullptr;
      std::rethrow_exception(e);
    }
    if (!slot->out.images.defined()) {  // every sample of this batch was skipped
      if (!config_.keep_empty_batches) continue;
      slot->out = Batch{slot->images.narrow0(0, 0), slot->labels.narrow0(0, 0)};
    }
    ++stats_.batches;
    stats_.samples += slot->out.images.size(0);
    return &slot->out;
  }
}

LoaderStats Loader::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace epoch::data
