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
#include "epoch/ops/backend.h"
#include "epoch/tensor/error.h"

namespace epoch::cli {
namespace {

struct SynthOptions {
  data::SynthConfig config;
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

int run_synth(SynthOptions& o) {
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
  CLI::App* cmd = app.add_subcommand("data", "Make datasets (synth: procedurally drawn images)");
  cmd->require_subcommand(1);
  auto o = std::make_shared<SynthOptions>();
  data::SynthConfig& c = o->config;
  CLI::App* synth = cmd->add_subcommand(
      "synth",
      "Write a drawn image dataset: out/train/<class>/*.jpg and out/validation/... "
      "(imagenet: out/val/...)");
  synth->add_option("--kind", c.kind, "catdog (500x375), cifar10 (32x32) or imagenet (256x256)")
      ->required();
  synth->add_option("--out", c.out_dir, "Output folder (must not hold train/ already)")->required();
  synth->add_option("--count", c.count, "Training images, spread evenly over the classes")
      ->capture_default_str();
  synth->add_option("--val-count", c.val_count, "Validation images (default: count / 5)");
  synth->add_option("--size", o->size, "Image size WxH (default: the kind's)");
  synth->add_option("--classes", c.classes, "Classes of the imagenet kind (2-1000, default 10)");
  synth->add_option("--seed", c.seed, "Seed: the same arguments draw the same images")
      ->capture_default_str()
      ->check(unsigned_64());
  synth->add_option("--quality", c.quality, "JPEG quality 1-100")->capture_default_str();
  synth->add_flag("--no-cifar-binary", o->no_cifar_binary,
                  "cifar10: skip the CIFAR-10 binary files in out/cifar-10-batches-bin");
  synth->add_option("--threads", o->threads, "CPU threads (0: all cores)")->check(thread_count());
  synth->add_flag("--json", o->json, "Print the summary as JSON");
  synth->callback([o, &exit_code] { exit_code = run_synth(*o); });
}

}  // namespace epoch::cli
