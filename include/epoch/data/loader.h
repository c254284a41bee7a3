// The input pipeline: turns a SampleSource into batches of model inputs, fetching, decoding and
// augmenting samples on worker threads into reused buffers, a bounded number of batches ahead.
// Each sample's randomness comes from (seed, epoch, index), so the batches are bit-identical for
// any number of workers.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "epoch/data/augment.h"
#include "epoch/data/dataset.h"
#include "epoch/data/source.h"
#include "epoch/tensor/warnings.h"

namespace epoch::data {

/// What a corrupt, truncated, empty or non-image file does: skip it (a warning naming it, once
/// per file, and a count in the stats) or fail (the loader throws IoError naming it).
enum class OnBadImage { skip, fail };
OnBadImage parse_on_bad_image(const std::string& s);  // ConfigError for other words
const char* on_bad_image_name(OnBadImage p);

/// The decode size the loader asks for: the output size (twice that with random-resized-crop,
/// which may magnify a small region), or full size for a centre crop (which takes pixels as
/// they are).
DecodeOptions decode_hint(const Preprocessing& pre, const AugmentConfig* augment);

struct LoaderConfig {
  std::int64_t batch_size = 32;
  /// Worker threads; 0: batches are made in the consumer's thread when asked for (samples in
  /// parallel with OpenMP).
  int workers = 0;
  /// Batches made ahead of the consumer (at least 1; with workers only).
  int prefetch = 2;
  std::uint64_t seed = 0;
  OnBadImage on_bad_image = OnBadImage::skip;
  /// A batch whose images were all skipped comes back with no samples instead of being passed
  /// over, so that ranks which step together stay in step.
  bool keep_empty_batches = false;
};

struct LoaderStats {
  std::int64_t batches = 0, samples = 0;
  std::int64_t skipped = 0;            // sample fetches skipped as bad images (every epoch)
  std::vector<std::string> bad_files;  // distinct bad samples, in the order first met
  double wait_s = 0.0;                 // consumer time spent waiting inside next()
  double work_s = 0.0;                 // time spent making batches (summed over workers)
};

class Loader {
 public:
  /// `source` must outlive the loader. `augment` null or disabled: the deterministic
  /// evaluation transform. Warnings for skipped files go to `warnings` (kind "bad images";
  /// null: none).
  Loader(const SampleSource& source, Preprocessing preprocessing,
         std::optional<AugmentConfig> augment, LoaderConfig config, Warnings* warnings = nullptr);
  ~Loader();  // stops and joins the workers, even mid-epoch
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  /// Begins an epoch over `order` (sample indices, each in [0, size)): batches of batch_size
  /// consecutive entries, the last one possibly smaller. Abandons any unfinished epoch.
  void start_epoch(std::int64_t epoch, std::vector<std::int64_t> order);

  /// The next batch of the epoch, or nullptr after the last. A batch holds fewer samples when
  /// bad images were skipped (and is dropped entirely when all were). Valid until the next
  /// call of next(), start_epoch() or the destructor. Rethrows a worker's exception.
  const Batch* next();

  LoaderStats stats() const;
  const Preprocessing& preprocessing() const { return pre_; }
  std::int64_t batches_per_epoch() const;

 private:
  struct Slot;
  void make_batch(std::int64_t batch, Slot& slot, bool parallel);
  void worker_loop();
  void stop_workers();
  void report_bad(Slot& slot);

  const SampleSource* source_;
  Preprocessing pre_;
  std::optional<AugmentConfig> augment_;
  LoaderConfig config_;
  Warnings* warnings_;
  DecodeOptions hint_;

  std::int64_t epoch_ = 0;
  std::vector<std::int64_t> order_;
  std::int64_t num_batches_ = 0;
  std::int64_t next_to_consume_ = 0;

  std::vector<std::unique_ptr<Slot>> slots_;
  Slot* held_ = nullptr;  // the slot the consumer holds

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::thread> threads_;
  bool stopping_ = false;
  std::int64_t generation_ = 0;  // bumps on every start_epoch; stale work is discarded
  std::int64_t next_to_make_ = 0;

  LoaderStats stats_;
  std::set<std::string> warned_;
};

}  // namespace epoch::data
