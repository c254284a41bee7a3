// `epoch data synth`: writes a procedurally drawn image dataset (cats vs dogs, CIFAR-10-like,
// ImageNet-like folders of JPEG files) and prints one summary line or JSON.
#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "epoch/data/synth.h"
#include "epoch/data/synth_video.h"
#include "epoch/ops/backend.h"
#include "epoch/tensor/error.h"

namespace epoch::cli {
namespace {

struct SynthOptions {
  data::SynthConfig config;
  data::VideoSynthConfig video;
  std::vector<CLI::Option*> image_only, video_only;  // flags of one family of kinds
  std::string size;
  bool no_cifar_binary = false;
  int threads = 0;
  bool json = false;
};

/// "WxH" -> width, height (ConfigError naming --size otherwise).
void parse_size(const std::string& text, std::int64_t& width, std::int64_t& height) {
  const std::size_t x = text.find_first_of("xX");
  auto digits = [](const std::string& s) {
    return !s.empty() && s.size() <= 6 && s.find_first_not_of("0123456789") == std::string::npos;
  };
  if (x == std::string::npos || !digits(text.substr(0, x)) || !digits(text.substr(x + 1)))
    EPOCH_THROW(ConfigError, "--size: expected WIDTHxHEIGHT such as 500x375, got '", text, "'");
  width = std::stoll(text.substr(0, x));
  height = std::stoll(text.substr(x + 1));
  if (width == 0 || height == 0)
    EPOCH_THROW(ConfigError, "--size: width and height must be positive, got '", text, "'");
}

std::string human_bytes(std::int64_t bytes) {
  char buf[32];
  const auto b = static_cast<double>(bytes);
  if (b >= 1e9)
    std::snprintf(buf, sizeof buf, "%.2f GB", b / 1e9);
  else if (b >= 1e6)
    std::snprintf(buf, sizeof buf, "%.1f MB", b / 1e6);
  else if (b >= 1e3)
    std::snprintf(buf, sizeof buf, "%.1f kB", b / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%lld bytes", static_cast<long long>(bytes));
  return buf;
}

// Flags that belong to the other family of kinds are refused, naming the first one given.
void refuse_flags(const std::vector<CLI::Option*>& flags, const std::string& kind) {
  for (const CLI::Option* f : flags)
    if (f->count() > 0) EPOCH_THROW(ConfigError, f->get_name(), " does not apply to --kind ", kind);
}

int run_synth_video(SynthOptions& o) {
  data::VideoSynthConfig& v = o.video;
  refuse_flags(o.image_only, "video");
  v.out_dir = o.config.out_dir;
  v.seed = o.config.seed;
  v.quality = o.config.quality;
  if (!o.size.empty()) parse_size(o.size, v.width, v.height);
  ops::set_num_threads(o.threads);
  const auto start = std::chrono::steady_clock::now();
  const data::VideoSynthSummary s = data::write_synth_video(v);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::int64_t frames = (s.train_sequences + s.val_sequences) * s.frames;
  const double rate = seconds > 0 ? static_cast<double>(frames) / seconds : 0.0;
  if (o.json) {
    const nlohmann::json j{{"kind", "video"},
                           {"out", v.out_dir},
                           {"train_sequences", s.train_sequences},
                           {"val_sequences", s.val_sequences},
                           {"frames_per_sequence", s.frames},
                           {"width", s.width},
                           {"height", s.height},
                           {"format", v.format},
                           {"train_previous_frame_mse", s.train_baseline_mse},
                           {"val_previous_frame_mse", s.val_baseline_mse},
                           {"bytes", s.bytes},
                           {"seconds", seconds},
                           {"frames_per_s", rate}};
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::printf(
      "synth video: %lld train + %lld validation sequences of %lld frames, %lldx%lld %s, "
      "previous-frame MSE %.5f (train) %.5f (validation), %s in %.1f s (%.0f frames/s) -> %s\n",
      static_cast<long long>(s.train_sequences), static_cast<long long>(s.val_sequences),
      static_cast<long long>(s.frames), static_cast<long long>(s.width),
      static_cast<long long>(s.height), v.format.c_str(), s.train_baseline_mse, s.val_baseline_mse,
      human_bytes(s.bytes).c_str(), seconds, rate, v.out_dir.c_str());
  return 0;
}

int run_synth(SynthOptions& o) {
  const std::string& kind = o.config.kind;
  if (kind != "catdog" && kind != "cifar10" && kind != "imagenet" && kind != "video")
    EPOCH_THROW(ConfigError, "unknown synth kind '", kind,
                "' (valid: catdog, cifar10, imagenet, video)");
  if (kind == "video") return run_synth_video(o);
  refuse_flags(o.video_only, o.config.kind);
  data::SynthConfig& c = o.config;
  if (!o.size.empty()) parse_size(o.size, c.width, c.height);
  c.cifar_binary = !o.no_cifar_binary;
  ops::set_num_threads(o.threads);
  const auto start = std::chrono::steady_clock::now();
  const data::SynthSummary s = data::write_synth_dataset(c);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::int64_t images = s.train_images + s.val_images;
  const double rate = seconds > 0 ? static_cast<double>(images) / seconds : 0.0;
  if (o.json) {
    const nlohmann::json j{{"kind", c.kind},
                           {"out", c.out_dir},
                           {"train_images", s.train_images},
                           {"val_images", s.val_images},
                           {"classes", s.class_names.size()},
                           {"class_names", s.class_names},
                           {"width", s.width},
                           {"height", s.height},
                           {"size_varies", c.kind == "imagenet"},
                           {"cifar_binary", c.kind == "cifar10" && c.cifar_binary},
                           {"bytes", s.bytes},
                           {"seconds", seconds},
                           {"images_per_s", rate}};
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::string names;
  for (std::size_t i = 0; i < s.class_names.size() && i < 10; ++i)
    names += (i ? ", " : "") + s.class_names[i];
  if (s.class_names.size() > 10) names += ", ...";
  std::printf(
      "synth %s: %lld train + %lld validation images, %zu classes (%s), %lldx%lld%s, "
      "%s in %.1f s (%.0f images/s) -> %s%s\n",
      c.kind.c_str(), static_cast<long long>(s.train_images), static_cast<long long>(s.val_images),
      s.class_names.size(), names.c_str(), static_cast<long long>(s.width),
      static_cast<long long>(s.height), c.kind == "imagenet" ? " +-25%" : "",
      human_bytes(s.bytes).c_str(), seconds, rate, c.out_dir.c_str(),
      c.kind == "cifar10" && c.cifar_binary ? " (and cifar-10-batches-bin/)" : "");
  return 0;
}

}  // namespace

void add_data_command(CLI::App& app, int& exit_code) {
  CLI::App* cmd =
      app.add_subcommand("data", "Make datasets (synth: procedurally drawn images and video)");
  cmd->require_subcommand(1);
  auto o = std::make_shared<SynthOptions>();
  data::SynthConfig& c = o->config;
  CLI::App* synth = cmd->add_subcommand(
      "synth",
      "Write a drawn image dataset: out/train/<class>/*.jpg and out/validation/... "
      "(imagenet: out/val/...)");
  synth
      ->add_option("--kind", c.kind,
                   "catdog (500x375), cifar10 (32x32), imagenet (256x256) or video (160x120 "
                   "frames: out/train/seq_*/frame_*.png)")
      ->required();
  synth->add_option("--out", c.out_dir, "Output folder (must not hold train/ already)")->required();
  o->image_only.push_back(
      synth->add_option("--count", c.count, "Training images, spread evenly over the classes")
          ->capture_default_str()
          ->check(in_range(1, 1e9)));
  o->image_only.push_back(
      synth->add_option("--val-count", c.val_count, "Validation images (default: count / 5)"));
  data::VideoSynthConfig& v = o->video;
  o->video_only.push_back(synth->add_option("--sequences", v.sequences, "video: training sequences")
                              ->capture_default_str()
                              ->check(in_range(1, 1e6)));
  o->video_only.push_back(
      synth->add_option("--val-sequences", v.val_sequences,
                        "video: validation sequences (default: a quarter, >= 1)"));
  o->video_only.push_back(synth->add_option("--frames", v.frames, "video: frames per sequence")
                              ->capture_default_str()
                              ->check(in_range(1, 1e6)));
  o->video_only.push_back(
      synth->add_option("--format", v.format, "video: png or jpeg frames")->capture_default_str());
  synth->add_option("--size", o->size, "Image size WxH (default: the kind's)");
  o->image_only.push_back(synth->add_option("--classes", c.classes,
                                            "Classes of the imagenet kind (2-1000, default 10)"));
  synth->add_option("--seed", c.seed, "Seed: the same arguments draw the same images")
      ->capture_default_str()
      ->check(unsigned_64());
  synth->add_option("--quality", c.quality, "JPEG quality 1-100")->capture_default_str();
  o->image_only.push_back(
      synth->add_flag("--no-cifar-binary", o->no_cifar_binary,
                      "cifar10: skip the CIFAR-10 binary files in out/cifar-10-batches-bin"));
  synth->add_option("--threads", o->threads, "CPU threads (0: all cores)")->check(thread_count());
  synth->add_flag("--json", o->json, "Print the summary as JSON");
  synth->callback([o, &exit_code] { exit_code = run_synth(*o); });
}

}  // namespace epoch::cli
