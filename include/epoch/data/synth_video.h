// Generated first-person video for `epoch data synth --kind video`: a camera moving forward at
// a car's pace over a procedurally textured ground, panning left and right under a sky with
// distant mountains, past balls that roll on their own. Motion a predictive model can learn,
// with a previous-frame baseline (predict frame t by frame t-1) to beat. Written as folders of
// frames, the layout sequence datasets are read from.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "epoch/data/image.h"

namespace epoch::data {

struct VideoSynthConfig {
  std::string out_dir;
  std::int64_t sequences = 8;       // training sequences
  std::int64_t val_sequences = -1;  // validation sequences; -1: a quarter of sequences, at least 1
  std::int64_t frames = 100;        // frames per sequence
  std::int64_t width = 160, height = 120;
  std::uint64_t seed = 0;
  std::string format = "png";  // png (lossless) or jpeg
  int quality = 90;            // JPEG quality
};

/// Renders the frames of sequence `index` in order, handing each to `frame(t, image)`: a pure
/// function of (seed, index, width, height); frame t does not depend on how many follow.
/// requires: width and height in 16-4096, frames >= 1 (InvalidArgument otherwise).
void render_video_sequence(std::uint64_t seed, std::int64_t index, std::int64_t frames,
                           std::int64_t width, std::int64_t height,
                           const std::function<void(std::int64_t, const Image&)>& frame);

/// The mean over pixels, channels and frames 1..F-1 of (frame_t - frame_{t-1})^2 with pixels
/// scaled to [0, 1]: what predicting each frame by the one before scores. Sums in double;
/// `sum` and `count` accumulate it over several sequences (sum / count is the mean).
struct PreviousFrameMse {
  double sum = 0.0;
  std::int64_t count = 0;
  void add(const Image& previous, const Image& current);
  double mean() const { return count > 0 ? sum / static_cast<double>(count) : 0.0; }
};

struct VideoSynthSummary {
  std::int64_t train_sequences = 0, val_sequences = 0, frames = 0, width = 0, height = 0;
  std::int64_t bytes = 0;  // every file written
  double train_baseline_mse = 0.0, val_baseline_mse = 0.0;
};

/// Writes out_dir/train/seq_<i>/frame_<t>.<png|jpg> (i and t zero-padded to 5 digits) and the
/// same under out_dir/validation/ (sequence numbers continuing after the training ones), in
/// parallel over sequences, each file atomic; then out_dir/baseline.json with the previous-frame
/// MSE of each split, measured on the frames as written (after JPEG coding, for jpeg).
/// Throws ConfigError for bad sizes, counts or format, or an out_dir that already holds train/
/// or validation/; IoError when it cannot be written.
VideoSynthSummary write_synth_video(const VideoSynthConfig& config);

}  // namespace epoch::data
