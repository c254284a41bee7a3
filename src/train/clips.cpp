// Video models' data, baseline, evaluation and predicted frames (see clips.h).
#include "epoch/train/clips.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "epoch/autograd/autograd.h"
#include "epoch/data/image.h"
#include "epoch/tensor/error.h"
#include "epoch/tensor/file_io.h"

namespace epoch::train {
namespace {

namespace fs = std::filesystem;

/// baseline.json's previous-frame MSE of one split, when the file and the figure are there. A
/// baseline.json that is not a regular JSON file within kMaxJsonFileBytes (a folder, a FIFO, a
/// device) is an IoError naming it, refused without reading or waiting.
std::optional<double> stored_baseline(const fs::path& file, const std::string& split) {
  std::error_code ec;
  if (!fs::exists(file, ec)) return std::nullopt;
  const std::string text = read_text_file(file.string(), kMaxJsonFileBytes);
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    if (!j.contains(split) || !j[split].contains("previous_frame_mse")) return std::nullopt;
    return j[split]["previous_frame_mse"].get<double>();
  } catch (const nlohmann::json::exception& e) {
    EPOCH_THROW(IoError, file.string(), ": not a baseline file: ", e.what());
  }
}

/// The last `count` sequences of `folder` as a folder of their own, removed from `folder`.
data::SequenceFolder split_off(data::SequenceFolder& folder, std::size_t count) {
  data::SequenceFolder held;
  held.root = folder.root;
  const std::size_t keep = folder.names.size() - count;
  held.names.assign(folder.names.begin() + static_cast<std::ptrdiff_t>(keep), folder.names.end());
  held.frames.assign(folder.frames.begin() + static_cast<std::ptrdiff_t>(keep),
                     folder.frames.end());
  folder.names.resize(keep);
  folder.frames.resize(keep);
  return held;
}

/// open_clip_data without the check of --tbptt against the sequences.
ClipData open_sequences(const TrainConfig& c, Warnings* warnings) {
  const std::string& dir = c.data.source;
  if (dir.empty() || dir == "synthetic" || dir == "mnist")
    EPOCH_THROW(ConfigError, "model ", c.run.model,
                " trains on a folder of sequences: pass --data DIR (make one with `epoch data "
                "synth --kind video --out DIR`)");
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) EPOCH_THROW(IoError, dir, ": no such folder");
  ClipData d;
  const fs::path root(dir);
  std::string val_dir;
  if (fs::is_directory(root / "train", ec)) {
    d.train = data::scan_sequence_folder((root / "train").string(), warnings);
    for (const char* name : {"validation", "val", "test"})
      if (fs::is_directory(root / name, ec)) {
        val_dir = (root / name).string();
        d.val_name = name == std::string("test") ? "test" : "validation";
        break;
      }
    d.train_baseline_mse = stored_baseline(root / "baseline.json", "train");
    if (!val_dir.empty())
      d.val_baseline_mse = stored_baseline(root / "baseline.json", "validation");
  } else {
    d.train = data::scan_sequence_folder(dir, warnings);
  }
  if (!c.data.val_data.empty()) {
    val_dir = c.data.val_data;
    d.val_name = "validation";
    d.val_baseline_mse.reset();
  }
  if (!val_dir.empty()) {
    if (c.data.val_split > 0)
      EPOCH_THROW(ConfigError, "--val-split: ", dir, " already has validation sequences (", val_dir,
                  ")");
    d.val = data::scan_sequence_folder(val_dir, warnings);
    return d;
  }
  if (c.data.val_split > 0) {
    const std::size_t n = d.train.names.size();
    const auto held = std::max<std::size_t>(
        1, static_cast<std::size_t>(std::llround(c.data.val_split * static_cast<double>(n))));
    if (held >= n)
      EPOCH_THROW(ConfigError, "--val-split ", c.data.val_split, ": ", dir, " has ", n,
                  " sequence(s), too few to hold ", held, " out and train on the rest");
    d.val = split_off(d.train, held);
    d.val_name = "validation";
    d.train_baseline_mse.reset();
    return d;
  }
  EPOCH_THROW(ConfigError, dir,
              ": no validation sequences (no train/ with validation/ beside it): pass --val-data "
              "DIR or --val-split F");
}

}  // namespace

ClipData open_clip_data(const TrainConfig& c, Warnings* warnings) {
  ClipData d = open_sequences(c, warnings);
  if (c.run.tbptt > 0)
    check_window_fits(d, c.run.tbptt, "--tbptt " + std::to_string(c.run.tbptt));
  return d;
}

void check_window_fits(const ClipData& d, std::int64_t frames, const std::string& what) {
  for (const data::SequenceFolder* folder : {&d.train, &d.val}) {
    std::size_t longest = 0;
    for (const auto& f : folder->frames) longest = std::max(longest, f.size());
    const auto n = static_cast<std::int64_t>(longest);
    if (frames > n)
      EPOCH_THROW(ConfigError, what, ": longer than every ",
                  folder == &d.train ? std::string("training") : d.val_name, " sequence of ",
                  folder->root, " (the longest has ", n, " frames)",
                  n >= 2 ? ": pass --tbptt " + std::to_string(n) + " or less" : std::string());
  }
}

std::int64_t window_frames(const TrainConfig& c, const models::ModelSpec& spec) {
  return c.run.tbptt > 0 ? c.run.tbptt : spec.input[0];
}

std::vector<data::Clip> windows_of(const data::SequenceFolder& folder, std::int64_t frames) {
  return data::cut_clips(folder, frames, frames);
}

bool continues(const data::Clip& previous, const data::Clip& next, std::int64_t frames) {
  return next.sequence == previous.sequence && next.first == previous.first + frames;
}

double previous_frame_mse(const Tensor& x, const Tensor* before) {
  EPOCH_CHECK(x.ndim() == 5 && x.device().is_cpu(),
              "previous_frame_mse: x must be (N, T, C, H, W) on the CPU, got ",
              shape_str(x.shape()));
  const Tensor xc = x.contiguous();
  const std::int64_t n = x.size(0), steps = x.size(1), frame = x.size(2) * x.size(3) * x.size(4);
  Tensor bc;
  if (before != nullptr) {
    EPOCH_CHECK(before->ndim() == 4 && before->size(0) == n && before->numel() == n * frame,
                "previous_frame_mse: the frame before must be (N, C, H, W), got ",
                shape_str(before->shape()));
    bc = before->contiguous();
  }
  const std::int64_t first = before != nullptr ? 0 : 1;
  if (steps - first < 1) return 0.0;
  double total = 0.0;
  for (std::int64_t i = 0; i < n; ++i) {
    double per_sample = 0.0;
    for (std::int64_t t = first; t < steps; ++t) {
      const float* cur = xc.f32() + (i * steps + t) * frame;
      const float* prev = t > 0 ? cur - frame : bc.f32() + i * frame;
      double sum = 0.0;
      for (std::int64_t k = 0; k < frame; ++k) {
        const double d = static_cast<double>(cur[k]) - static_cast<double>(prev[k]);
        sum += d * d;
      }
      per_sample += sum / static_cast<double>(frame);
    }
    total += per_sample / static_cast<double>(steps - first);
  }
  return total / static_cast<double>(n);
}

Tensor last_frames(const Tensor& x) {
  EPOCH_CHECK(x.ndim() == 5 && x.device().is_cpu() && x.size(1) >= 1,
              "last_frames: x must be (N, T, C, H, W) on the CPU, got ", shape_str(x.shape()));
  const std::int64_t n = x.size(0), steps = x.size(1);
  const Tensor xc = x.contiguous();
  const std::int64_t frame = x.size(2) * x.size(3) * x.size(4);
  Tensor out = Tensor::empty({n, x.size(2), x.size(3), x.size(4)});
  for (std::int64_t i = 0; i < n; ++i)
    std::copy_n(xc.f32() + (i * steps + steps - 1) * frame, frame, out.f32() + i * frame);
  return out;
}

ClipEvalResult evaluate_clips(models::Model& model, const data::SequenceFolder& folder,
                              const data::Preprocessing& pre, std::int64_t frames,
                              std::int64_t batch_size, data::OnBadImage on_bad, Warnings* warnings,
                              std::int64_t max_windows) {
  autograd::NoGradGuard no_grad;
  nn::Module& net = model;
  const bool was_training = net.is_training();
  net.train(false);
  const Device device = net.parameters().front().second.device();
  const bool stream = model.carries_state();
  std::vector<data::Clip> windows = windows_of(folder, frames);
  if (max_windows > 0 && static_cast<std::int64_t>(windows.size()) > max_windows)
    windows.resize(static_cast<std::size_t>(max_windows));
  const data::ClipReader reader(folder, pre, frames);
  const std::int64_t batch = stream ? 1 : std::max<std::int64_t>(1, batch_size);
  ClipEvalResult r;
  double loss_sum = 0.0, baseline_sum = 0.0;
  std::optional<data::Clip> previous;
  Tensor before;  // the last frame of the window before, when the next continues it
  model.reset_state();
  for (std::size_t at = 0; at < windows.size(); at += static_cast<std::size_t>(batch)) {
    const std::size_t end = std::min(windows.size(), at + static_cast<std::size_t>(batch));
    const std::vector<data::Clip> asked(windows.begin() + static_cast<std::ptrdiff_t>(at),
                                        windows.begin() + static_cast<std::ptrdiff_t>(end));
    const data::ClipBatch b = reader.read(asked, on_bad, warnings);
    r.bad_files += static_cast<std::int64_t>(b.bad_files.size());
    if (b.clips.empty()) continue;
    const bool carried = stream && previous && continues(*previous, b.clips.front(), frames);
    if (stream && !carried) model.reset_state();
    const Tensor x = b.x.to(device);
    const Tensor out = net.forward(x);
    const auto count = static_cast<double>(b.clips.size());
    loss_sum += static_cast<double>(model.loss(out, x, Tensor()).item()) * count;
    baseline_sum += previous_frame_mse(b.x, carried ? &before : nullptr) * count;
    r.windows += static_cast<std::int64_t>(b.clips.size());
    r.frames += static_cast<std::int64_t>(b.clips.size()) * frames;
    if (stream) {
      previous = b.clips.back();
      before = last_frames(b.x);
    }
  }
  model.reset_state();
  net.train(was_training);
  if (r.windows > 0) {
    r.loss = loss_sum / static_cast<double>(r.windows);
    r.baseline_mse = baseline_sum / static_cast<double>(r.windows);
  }
  return r;
}

namespace {

/// A model output frame (C, H, W) in [0, 1] (clamped) as an 8-bit image.
data::Image to_image(const float* frame, std::int64_t channels, std::int64_t height,
                     std::int64_t width) {
  data::Image image;
  image.width = width;
  image.height = height;
  image.channels = channels;
  image.pixels.resize(static_cast<std::size_t>(channels * height * width));
  for (std::int64_t y = 0; y < height; ++y)
    for (std::int64_t x = 0; x < width; ++x)
      for (std::int64_t ch = 0; ch < channels; ++ch) {
        const float v = frame[(ch * height + y) * width + x];
        const float clamped = std::isfinite(v) ? std::clamp(v, 0.0f, 1.0f) : 0.0f;
        image.pixels[static_cast<std::size_t>((y * width + x) * channels + ch)] =
            static_cast<std::uint8_t>(std::lround(clamped * 255.0f));
      }
  return image;
}

/// ConfigError when `out_dir` is the sequence folder itself (its predictions would become
/// frames), or already holds predicted frames (pred_*.png) and `overwrite` is not asked: a
/// second prediction would silently replace some of them and leave others beside it.
void check_prediction_folder(const std::string& out_dir, const std::string& sequence_dir,
                             bool overwrite) {
  std::error_code ec;
  if (!fs::is_directory(out_dir, ec)) return;
  if (fs::equivalent(out_dir, sequence_dir, ec))
    EPOCH_THROW(ConfigError, out_dir,
                ": is the sequence folder itself; its predicted frames would become frames of "
                "the sequence: pass another --out");
  if (overwrite) return;
  std::vector<std::string> found;
  for (fs::directory_iterator it(out_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("pred_", 0) == 0 && it->path().extension() == ".png") found.push_back(name);
  }
  if (ec) EPOCH_THROW(IoError, out_dir, ": cannot list: ", ec.message());
  if (found.empty()) return;
  std::sort(found.begin(), found.end());
  EPOCH_THROW(ConfigError, out_dir, ": already holds ", found.size(), " predicted frame",
              found.size() == 1 ? "" : "s", " (", found.front(),
              found.size() > 1 ? ", ..." : "",
              "): pass another --out, remove them, or pass --overwrite to replace them");
}

}  // namespace

PredictedFrames predict_sequence(models::Model& model, const data::Preprocessing& pre,
                                 const std::string& sequence_dir, std::int64_t frames,
                                 std::string out_dir, bool overwrite) {
  EPOCH_CHECK(frames >= 1, "predict_sequence: windows need at least 1 frame, got ", frames);
  std::error_code ec;
  if (fs::exists(sequence_dir, ec) && !fs::is_directory(sequence_dir, ec))
    EPOCH_THROW(ConfigError, sequence_dir, ": not a folder; model ", model.spec().name,
                " is a video model and predicts from a sequence folder (SEQUENCE_DIR holding "
                "the sequence's frames as .png or .jpg files), not from single images");
  const data::SequenceFolder folder = data::scan_one_sequence(sequence_dir);
  const std::vector<std::string>& paths = folder.frames.front();
  const auto total = static_cast<std::int64_t>(paths.size());
  if (out_dir.empty()) out_dir = (fs::path(sequence_dir) / "predicted").string();
  check_prediction_folder(out_dir, sequence_dir, overwrite);
  fs::create_directories(out_dir, ec);
  if (ec) EPOCH_THROW(IoError, out_dir, ": cannot create: ", ec.message());

  autograd::NoGradGuard no_grad;
  nn::Module& net = model;
  net.train(false);
  const Device device = net.parameters().front().second.device();
  // A model without carried state sees the whole sequence at once (each of its calls starts
  // afresh); one that carries state sees it in windows, as it trained.
  const std::int64_t window = model.carries_state() ? frames : total;
  PredictedFrames out;
  out.out_dir = out_dir;
  double mse_sum = 0.0, base_sum = 0.0;
  std::int64_t counted = 0;
  Tensor before;
  model.reset_state();
  for (std::int64_t first = 0; first < total; first += window) {
    const std::int64_t length = std::min(window, total - first);
    const data::ClipReader reader(folder, pre, length);
    const data::ClipBatch b = reader.read({{0, first}}, data::OnBadImage::fail);
    const Tensor predicted = model.predict_frames(b.x.to(device)).to(Device::cpu()).contiguous();
    const std::int64_t c = pre.channels, h = pre.height, w = pre.width, frame = c * h * w;
    const float* truth = b.x.f32();
    for (std::int64_t t = 0; t < length; ++t) {
      const float* p = predicted.f32() + t * frame;
      const fs::path name = fs::path(paths[static_cast<std::size_t>(first + t)]).filename();
      const std::string file =
          (fs::path(out_dir) / ("pred_" + name.stem().string() + ".png")).string();
      data::write_png(file, to_image(p, c, h, w));
      out.files.push_back(file);
      const float* prev = t > 0 ? truth + (t - 1) * frame : (first > 0 ? before.f32() : nullptr);
      if (prev == nullptr) continue;  // frame 0 is predicted from nothing
      double e = 0.0, base = 0.0;
      for (std::int64_t k = 0; k < frame; ++k) {
        const double y = truth[t * frame + k];
        e += (static_cast<double>(p[k]) - y) * (static_cast<double>(p[k]) - y);
        base += (static_cast<double>(prev[k]) - y) * (static_cast<double>(prev[k]) - y);
      }
      mse_sum += e / static_cast<double>(frame);
      base_sum += base / static_cast<double>(frame);
      ++counted;
    }
    before = last_frames(b.x);
  }
  model.reset_state();
  if (counted > 0) {
    out.mse = mse_sum / static_cast<double>(counted);
    out.baseline_mse = base_sum / static_cast<double>(counted);
  }
  return out;
}

}  // namespace epoch::train
