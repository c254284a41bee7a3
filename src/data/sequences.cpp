// Sequence folders, clips and their batches (see sequences.h).
#include "epoch/data/sequences.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <optional>
#include <utility>

#include "epoch/data/augment.h"
#include "epoch/data/image_codec.h"
#include "epoch/tensor/error.h"
#include "epoch/tensor/random.h"

namespace epoch::data {
namespace {

namespace fs = std::filesystem;

bool hidden(const fs::path& p) {
  const std::string name = p.filename().string();
  return !name.empty() && name[0] == '.';
}

bool is_frame_file(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png";
}

/// A sequence's .jpg/.jpeg/.png entries, sorted by name. Entries that are not regular files (a
/// link to a FIFO, to /dev/zero, to a folder, or a dangling one) are listed too: ClipReader
/// refuses them as bad frames, warned about or failing by the --on-bad-image policy, where
/// leaving them out would quietly close the gap they make in the sequence.
std::vector<std::string> list_frames(const fs::path& seq) {
  std::error_code ec;
  std::vector<std::string> frames;
  for (const fs::directory_entry& e : fs::directory_iterator(seq, ec))
    if (!hidden(e.path()) && is_frame_file(e.path())) frames.push_back(e.path().string());
  if (ec) EPOCH_THROW(IoError, seq.string(), ": cannot list: ", ec.message());
  if (frames.empty())
    EPOCH_THROW(ConfigError, seq.string(), ": a sequence without .jpg, .jpeg or .png frames");
  std::sort(frames.begin(), frames.end());
  return frames;
}

/// IoError unless `dir` is a folder: "no such folder", or what it is instead.
void require_folder(const std::string& dir) {
  std::error_code ec;
  const fs::file_status st = fs::status(dir, ec);
  if (fs::is_directory(st)) return;
  if (!fs::exists(st)) EPOCH_THROW(IoError, dir, ": no such folder");
  EPOCH_THROW(IoError, dir,
              fs::is_regular_file(st) ? ": is a file, not a folder of sequences or frames"
                                      : ": is not a folder (a FIFO, a device or a socket)");
}

/// The real folder at `p` (links followed) as (device, inode); nullopt when it cannot be stat'ed.
std::optional<std::pair<std::uint64_t, std::uint64_t>> identity(const fs::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return std::nullopt;
  return std::pair{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
}

}  // namespace

std::int64_t SequenceFolder::total_frames() const {
  std::int64_t n = 0;
  for (const auto& f : frames) n += static_cast<std::int64_t>(f.size());
  return n;
}

SequenceFolder scan_sequence_folder(const std::string& dir, Warnings* warnings) {
  require_folder(dir);
  std::error_code ec;
  SequenceFolder folder;
  folder.root = dir;
  std::vector<std::string> names;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    std::error_code entry_ec;  // a dangling link is no folder, not a listing error
    if (!hidden(e.path()) && e.is_directory(entry_ec))
      names.push_back(e.path().filename().string());
  }
  if (ec) EPOCH_THROW(IoError, dir, ": cannot list: ", ec.message());
  std::sort(names.begin(), names.end());
  // Each real folder once: a sequence linked under a second name would train twice as often
  // as the others. The real folder is kept over a link to it; among links, the first by name.
  using Key = std::pair<std::uint64_t, std::uint64_t>;
  std::map<Key, std::string> kept;
  std::vector<std::string> unique;
  const auto root_key = identity(dir);
  for (const std::string& name : names) {
    const fs::path p = fs::path(dir) / name;
    const auto key = identity(p);
    if (!key) {  // gone since it was listed
      unique.push_back(name);
      continue;
    }
    if (key == root_key) {
      if (warnings != nullptr)
        warnings->warn("linked sequences",
                       p.string() + ": a link to the sequence folder itself, left out");
      continue;
    }
    const auto [it, first] = kept.emplace(*key, name);
    if (first) continue;
    // The one kept so far or this one: the real folder wins over a link.
    std::string dropped = name;
    if (fs::is_symlink(fs::path(dir) / it->second, ec) && !fs::is_symlink(p, ec))
      std::swap(dropped, it->second);
    if (warnings != nullptr)
      warnings->warn("linked sequences", (fs::path(dir) / dropped).string() +
                                             ": the same sequence folder as " +
                                             (fs::path(dir) / it->second).string() +
                                             " (linked twice), read once");
  }
  for (const auto& [key, name] : kept) unique.push_back(name);
  std::sort(unique.begin(), unique.end());
  folder.names = std::move(unique);
  if (folder.names.empty())
    EPOCH_THROW(ConfigError, dir,
                ": no sequence subfolders (a sequence folder holds one subfolder of frames per "
                "sequence)");
  for (const std::string& name : folder.names)
    folder.frames.push_back(list_frames(fs::path(dir) / name));
  return folder;
}

SequenceFolder scan_one_sequence(const std::string& dir) {
  require_folder(dir);
  const fs::path path = fs::path(dir).lexically_normal();
  const fs::path seq = path.has_filename() ? path : path.parent_path();
  SequenceFolder folder;
  folder.root = seq.has_parent_path() ? seq.parent_path().string() : std::string(".");
  folder.names.push_back(seq.filename().string());
  folder.frames.push_back(list_frames(seq));
  return folder;
}

std::vector<Clip> cut_clips(const SequenceFolder& folder, std::int64_t length,
                            std::int64_t stride) {
  if (length < 1 || stride < 1)
    EPOCH_THROW(ConfigError, "clips need a length and a stride of at least 1, got ", length,
                " and ", stride);
  std::vector<Clip> clips;
  std::int64_t longest = 0;
  for (std::size_t s = 0; s < folder.frames.size(); ++s) {
    const auto n = static_cast<std::int64_t>(folder.frames[s].size());
    longest = std::max(longest, n);
    for (std::int64_t first = 0; first + length <= n; first += stride)
      clips.push_back({static_cast<std::int64_t>(s), first});
  }
  if (clips.empty())
    EPOCH_THROW(ConfigError, folder.root, ": no sequence holds ", length,
                " frames (the longest has ", longest, ")");
  return clips;
}

ClipReader::ClipReader(const SequenceFolder& folder, Preprocessing preprocessing,
                       std::int64_t length)
    : folder_(&folder), pre_(std::move(preprocessing)), length_(length) {
  pre_.validate();
  EPOCH_CHECK(length >= 1, "ClipReader: clips need at least 1 frame, got ", length);
}

ClipBatch ClipReader::read(const std::vector<Clip>& clips, OnBadImage on_bad,
                           Warnings* warnings) const {
  for (const Clip& c : clips)
    EPOCH_CHECK(
        c.sequence >= 0 && c.sequence < static_cast<std::int64_t>(folder_->frames.size()) &&
            c.first >= 0 &&
            c.first + length_ <= static_cast<std::int64_t>(
                                     folder_->frames[static_cast<std::size_t>(c.sequence)].size()),
        "ClipReader: clip (sequence ", c.sequence, ", frame ", c.first, ") is not within ",
        folder_->root);
  const std::int64_t b = static_cast<std::int64_t>(clips.size()), frames = b * length_;
  const std::int64_t per_frame = pre_.channels * pre_.height * pre_.width;
  Tensor all = Tensor::empty({b, length_, pre_.channels, pre_.height, pre_.width});
  std::vector<std::string> errors(static_cast<std::size_t>(frames));
  DecodeOptions hint;
  hint.min_width = pre_.width;
  hint.min_height = pre_.height;
#pragma omp parallel for schedule(dynamic, 1)
  for (std::int64_t k = 0; k < frames; ++k) {
    const Clip& clip = clips[static_cast<std::size_t>(k / length_)];
    const std::string& path = folder_->frames[static_cast<std::size_t>(clip.sequence)]
                                             [static_cast<std::size_t>(clip.first + k % length_)];
    try {
      const Image image = read_image(path, hint);
      RandomStream unused(0, 0);  // no augmentation draws from it
      transform_sample(ImageView::of(image), pre_, nullptr, unused, all.f32() + k * per_frame);
    } catch (const std::exception& e) {
      errors[static_cast<std::size_t>(k)] = e.what();
    }
  }
  ClipBatch out;
  std::vector<std::int64_t> kept;
  for (std::int64_t i = 0; i < b; ++i) {
    bool bad = false;
    for (std::int64_t t = 0; t < length_; ++t) {
      const std::string& error = errors[static_cast<std::size_t>(i * length_ + t)];
      if (error.empty()) continue;
      if (on_bad == OnBadImage::fail) EPOCH_THROW(IoError, error);
      const Clip& c = clips[static_cast<std::size_t>(i)];
      out.bad_files.push_back(folder_->frames[static_cast<std::size_t>(c.sequence)]
                                             [static_cast<std::size_t>(c.first + t)]);
      if (warnings != nullptr) warnings->warn("bad images", error + " (its clip is skipped)");
      bad = true;
    }
    if (!bad) kept.push_back(i);
  }
  if (static_cast<std::int64_t>(kept.size()) == b) {
    out.x = all;
    out.clips = clips;
    return out;
  }
  out.x = Tensor::empty(
      {static_cast<std::int64_t>(kept.size()), length_, pre_.channels, pre_.height, pre_.width});
  const std::int64_t per_clip = length_ * per_frame;
  for (std::size_t j = 0; j < kept.size(); ++j) {
    std::copy_n(all.f32() + kept[j] * per_clip, per_clip,
                out.x.f32() + static_cast<std::int64_t>(j) * per_clip);
    out.clips.push_back(clips[static_cast<std::size_t>(kept[j])]);
  }
  return out;
}

}  // namespace epoch::data
