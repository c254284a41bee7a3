// Video data: a folder of sequences (one subfolder per sequence, its frames the JPEG/PNG files
// in it, in name order), cut into clips of consecutive frames, read into batches (B, T, C, H, W)
// of model inputs. Frames decode in parallel, and a batch is bit-identical for any thread count.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "epoch/data/dataset.h"
#include "epoch/data/loader.h"
#include "epoch/tensor/tensor.h"
#include "epoch/tensor/warnings.h"

namespace epoch::data {

struct SequenceFolder {
  std::string root;
  std::vector<std::string> names;                // the sequences' folder names, sorted
  std::vector<std::vector<std::string>> frames;  // per sequence, its frame files' paths, sorted
  std::int64_t total_frames() const;
};

/// Scans `dir`: every subfolder not starting with '.' is a sequence; its .jpg/.jpeg/.png entries
/// (any case, not in deeper folders) are its frames. Each real folder is one sequence: one
/// linked under a second name (or a link to `dir` itself) is read once, with a warning of kind
/// "linked sequences" naming the link (when `warnings` is given). Frame entries that are not
/// regular files (links to a FIFO, a device, a folder) are listed, for ClipReader to refuse as
/// bad frames. IoError for a missing, unlistable or non-folder `dir`; ConfigError (naming it)
/// for a folder without sequence subfolders or a sequence without frames.
SequenceFolder scan_sequence_folder(const std::string& dir, Warnings* warnings = nullptr);

/// One sequence: `dir`'s frames, as a folder holding that one sequence (root: dir's parent).
/// IoError for a missing folder or one that is not a folder; ConfigError for one without
/// frames.
SequenceFolder scan_one_sequence(const std::string& dir);

/// `length` consecutive frames of one sequence, from frame `first`.
struct Clip {
  std::int64_t sequence = 0, first = 0;
  bool operator==(const Clip&) const = default;
};

/// Every sequence cut into clips of `length` frames starting at 0, stride, 2 stride, ... (a
/// sequence's frames after its last whole clip are left out), sequence by sequence.
/// ConfigError when length or stride is below 1, or no sequence holds `length` frames.
std::vector<Clip> cut_clips(const SequenceFolder& folder, std::int64_t length, std::int64_t stride);

struct ClipBatch {
  Tensor x;                            // (B, T, C, H, W) f32, the clips that were read
  std::vector<Clip> clips;             // which they are, in the order asked for
  std::vector<std::string> bad_files;  // frames that could not be read (skip), in clip order
};

/// Reads clips of `length` frames of `folder`, each frame fitted to the preprocessing's size and
/// preprocessed as an image would be (transform_sample without augmentation).
class ClipReader {
 public:
  ClipReader(const SequenceFolder& folder, Preprocessing preprocessing, std::int64_t length);
  /// The clips as one batch. A clip with a corrupt, truncated or missing frame, or one that is
  /// not a regular file (a FIFO, a device, a folder: refused without reading), is left out
  /// (skip: a warning naming the file, of kind "bad images", when `warnings` is given) or
  /// throws IoError naming the first such frame of the batch (fail): a sequence with a frame
  /// missing would teach wrong motion. Clips outside the folder: InvalidArgument.
  ClipBatch read(const std::vector<Clip>& clips, OnBadImage on_bad = OnBadImage::skip,
                 Warnings* warnings = nullptr) const;
  const Preprocessing& preprocessing() const { return pre_; }
  std::int64_t length() const { return length_; }

 private:
  const SequenceFolder* folder_;
  Preprocessing pre_;
  std::int64_t length_;
};

}  // namespace epoch::data
