// `epoch train`: trains a zoo model; `--json` ends with one machine-readable summary line.
#include <sys/resource.h>

#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "epoch/data/loader.h"
#include "epoch/train/recipe.h"
#include "epoch/train/trainer.h"

namespace epoch::cli {
namespace {

struct TrainOptions {
  CLI::App* cmd = nullptr;
  train::TrainConfig config;  // the flags as given; set() says which were
  data::AugmentConfig augment;
  std::string augment_base = "recipe";
  std::vector<float> contrast;
  std::string optimizer = "adam";
  float lr = 0.0f;
  float momentum = -1.0f;
  bool nesterov = false;
  float weight_decay = 0.0f;
  std::string schedule = "cosine";
  std::int64_t warmup_steps = -1;
  std::string determinism = "reproducible";
  std::string resume_dir;
  bool json = false;
};

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

/// `base` (the model's recipe, or a resumed run's configuration), then every flag given on
/// the command line on top of it.
train::TrainConfig config_from_flags(const TrainOptions& o, train::TrainConfig c) {
  const auto given = [&](const char* flag) { return o.cmd->count(flag) > 0; };
  const train::TrainConfig& f = o.config;
  // Plain fields: copy the flag's value when it was given.
  const auto take = [&](const char* flag, auto member) {
    if (given(flag)) c.*member = f.*member;
  };
  take("--model", &train::TrainConfig::model);
  take("--data", &train::TrainConfig::data);
  take("--val-data", &train::TrainConfig::val_data);
  take("--val-split", &train::TrainConfig::val_split);
  take("--workers", &train::TrainConfig::workers);
  take("--prefetch", &train::TrainConfig::prefetch);
  take("--on-bad-image", &train::TrainConfig::on_bad_image);
  take("--cache-mib", &train::TrainConfig::cache_mib);
  take("--rescale", &train::TrainConfig::rescale);
  take("--standardize", &train::TrainConfig::standardize);
  take("--mean", &train::TrainConfig::mean);
  take("--std", &train::TrainConfig::std);
  take("--resize", &train::TrainConfig::resize);
  take("--epochs", &train::TrainConfig::epochs);
  take("--batch-size", &train::TrainConfig::batch_size);
  take("--device", &train::TrainConfig::device);
  take("--threads", &train::TrainConfig::threads);
  take("--seed", &train::TrainConfig::seed);
  take("--out", &train::TrainConfig::out_dir);
  take("--limit-train", &train::TrainConfig::limit_train);
  take("--limit-test", &train::TrainConfig::limit_test);
  take("--synthetic-count", &train::TrainConfig::synthetic_count);
  take("--log-every", &train::TrainConfig::log_every);
  take("--keep-checkpoints", &train::TrainConfig::keep_checkpoints);
  take("--quiet", &train::TrainConfig::quiet);
  if (given("--optimizer") && o.optimizer != c.optimizer.name) {
    c.optimizer = optim::optimizer_defaults(o.optimizer);
    c.optimizer.lr = o.optimizer == "sgd" ? 0.01f : 2e-3f;
  }
  if (given("--lr")) c.optimizer.lr = o.lr;
  if (given("--momentum")) c.optimizer.momentum = o.momentum;
  if (given("--nesterov")) c.optimizer.nesterov = o.nesterov;
  if (given("--weight-decay")) c.optimizer.weight_decay = o.weight_decay;
  if (given("--schedule")) {
    c.schedule.name = o.schedule;
    if (!given("--warmup-steps")) c.warmup_steps = -1;
  }
  if (given("--warmup-steps")) c.warmup_steps = o.warmup_steps;
  if (given("--determinism")) c.determinism = train::parse_determinism(o.determinism);
  // Augmentation: the recipe's (or none), then each augmentation flag given.
  if (o.augment_base == "none") {
    c.augment = data::AugmentConfig{};
  } else if (o.augment_base != "recipe") {
    EPOCH_THROW(ConfigError, "--augment ", o.augment_base, ": expected recipe or none");
  }
  const data::AugmentConfig& a = o.augment;
  const auto aug = [&](const char* flag, auto member) {
    if (given(flag)) c.augment.*member = a.*member;
  };
  aug("--rotation", &data::AugmentConfig::rotation_deg);
  aug("--width-shift", &data::AugmentConfig::width_shift);
  aug("--height-shift", &data::AugmentConfig::height_shift);
  aug("--shear", &data::AugmentConfig::shear);
  aug("--zoom", &data::AugmentConfig::zoom);
  aug("--horizontal-flip", &data::AugmentConfig::horizontal_flip);
  aug("--vertical-flip", &data::AugmentConfig::vertical_flip);
  aug("--crop-padding", &data::AugmentConfig::crop_padding);
  aug("--random-resized-crop", &data::AugmentConfig::random_resized_crop);
  aug("--brightness", &data::AugmentConfig::brightness);
  aug("--fill-mode", &data::AugmentConfig::fill_mode);
  if (given("--contrast")) {
    if (o.contrast.size() != 2)
      EPOCH_THROW(ConfigError, "--contrast expects MIN,MAX (e.g. 0.2,1.8)");
    c.augment.contrast_min = o.contrast[0];
    c.augment.contrast_max = o.contrast[1];
  }
  c.augment.validate();
  (void)data::parse_on_bad_image(c.on_bad_image);  // bad words fail before any work
  if (c.resize != "stretch" && c.resize != "center_crop")
    EPOCH_THROW(ConfigError, "--resize ", c.resize, ": expected stretch or center_crop");
  return c;
}

/// A resumed run's configuration: the stored one, with the flags given that a resumed run may
/// change (threads, workers, epochs, ...); a flag that would change what the run computes is
/// refused, naming it, unless it repeats the stored value.
train::TrainConfig resumed_config(const TrainOptions& o) {
  if (o.cmd->count("--out") > 0 && o.config.out_dir != o.resume_dir)
    EPOCH_THROW(ConfigError, "--resume ", o.resume_dir, " and --out ", o.config.out_dir,
                " disagree");
  const train::TrainConfig stored = train::stored_run_config(o.resume_dir);
  train::TrainConfig c = config_from_flags(o, stored);
  c.out_dir = o.resume_dir;
  c.resume = true;
  if (const std::string conflicts = train::resume_conflicts(stored, c); !conflicts.empty())
    EPOCH_THROW(ConfigError, "--resume ", o.resume_dir,
                " continues the run as it was started; flags would change ", conflicts,
                ": drop them, or start a new run with another --out");
  if (c.epochs != stored.epochs && stored.schedule.name != "constant")
    std::fprintf(stderr,
                 "epoch: warning: --epochs %lld changes the run's plan of %lld epochs: its %s "
                 "learning-rate schedule is recomputed over %lld epochs\n",
                 static_cast<long long>(c.epochs), static_cast<long long>(stored.epochs),
                 stored.schedule.name.c_str(), static_cast<long long>(c.epochs));
  return c;
}

int run_train(TrainOptions& o) {
  train::TrainConfig c = o.resume_dir.empty()
                             ? config_from_flags(o, train::recipe_for(o.config.model))
                             : resumed_config(o);
  c.progress_interactive = stdout_is_terminal() && !o.json;
  std::FILE* progress = o.json ? stderr : stdout;
  if (!c.quiet)
    std::fprintf(progress, "epoch: training %s%s: %s\n", c.model.c_str(),
                 c.resume ? (" (resuming " + c.out_dir + ")").c_str() : "",
                 train::describe_recipe(c).c_str());
  const train::TrainResult r = train::train(c, progress);
  if (o.json) {
    nlohmann::json j = r.to_json();
    j["model"] = c.model;
    j["peak_rss_mib"] = peak_rss_mib();
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("run directory: %s\n", r.run_dir.c_str());
    std::printf("checkpoint:    %s\n", r.checkpoint.c_str());
    if (r.test_accuracy >= 0)
      std::printf("%s accuracy: %.2f%%  %s loss: %.4f\n", r.eval_name.c_str(),
                  100.0 * r.test_accuracy, r.eval_name.c_str(), r.test_loss);
    else
      std::printf("%s loss: %.5f\n", r.eval_name.c_str(), r.test_loss);
    std::printf("throughput:    %.0f images/s (training), wall time %.1f s, peak memory %.0f MiB\n",
                r.images_per_s, r.wall_s, peak_rss_mib());
    std::printf("input:         %.0f%% of training time waiting for data\n",
                100.0 * r.data_wait_fraction);
    if (r.skipped_images > 0)
      std::printf("skipped:       %lld bad image file%s (named in the warnings above)\n",
                  static_cast<long long>(r.skipped_images), r.skipped_images == 1 ? "" : "s");
  }
  return 0;
}

}  // namespace

void add_train_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<TrainOptions>();
  CLI::App* cmd =
      app.add_subcommand("train", "Train a model (default: fmnist-cnn on Fashion-MNIST)");
  o->cmd = cmd;
  train::TrainConfig& c = o->config;
  data::AugmentConfig& a = o->augment;
  cmd->add_option("--model", c.model, "Model from `epoch models`")->capture_default_str();
  cmd->add_option("--data", c.data,
                  "An image folder (class subfolders, or train/ + validation/), cifar10:DIR, a "
                  "folder of IDX files, or 'synthetic' (default: Fashion-MNIST)");
  cmd->add_option("--val-data", c.val_data, "Validation image folder (same class subfolders)");
  cmd->add_option("--val-split", c.val_split,
                  "Hold out this fraction of each class of an image folder for validation")
      ->check(in_range(0.0, 1.0));
  cmd->add_option(
         "--workers", c.workers,
         "Input pipeline threads (default: the cores compute leaves free, for image files)")
      ->check(in_range(0, 64));
  cmd->add_option("--prefetch", c.prefetch, "Batches prepared ahead")
      ->capture_default_str()
      ->check(in_range(1, 64));
  cmd->add_option("--on-bad-image", c.on_bad_image,
                  "skip (warn and go on) or fail on a corrupt or unreadable image")
      ->capture_default_str();
  cmd->add_option("--cache-mib", c.cache_mib,
                  "Memory for decoded images of an image folder (0: decode every epoch)")
      ->capture_default_str()
      ->check(non_negative());
  cmd->add_option("--augment", o->augment_base,
                  "recipe (the model's augmentation) or none; the flags below change it")
      ->capture_default_str();
  cmd->add_option("--rotation", a.rotation_deg, "Random rotation range, degrees")
      ->check(non_negative());
  cmd->add_option("--width-shift", a.width_shift, "Random horizontal shift, fraction of width")
      ->check(non_negative());
  cmd->add_option("--height-shift", a.height_shift, "Random vertical shift, fraction of height")
      ->check(non_negative());
  cmd->add_option("--shear", a.shear, "Random shear range, radians")->check(non_negative());
  cmd->add_option("--zoom", a.zoom, "Random zoom: scale in [1-z, 1+z] per axis")
      ->check(in_range(0.0, 0.99));
  cmd->add_option("--horizontal-flip", a.horizontal_flip, "Random left-right flips (true/false)");
  cmd->add_option("--vertical-flip", a.vertical_flip, "Random up-down flips (true/false)");
  cmd->add_option("--crop-padding", a.crop_padding,
                  "Random crop of the input size after zero padding by P pixels");
  cmd->add_option("--random-resized-crop", a.random_resized_crop,
                  "torchvision RandomResizedCrop (true/false)");
  cmd->add_option("--brightness", a.brightness, "Random brightness change, pixel units (0-255)")
      ->check(non_negative());
  cmd->add_option("--contrast", o->contrast, "Random contrast factor range MIN,MAX")
      ->delimiter(',');
  cmd->add_option("--fill-mode", a.fill_mode, "Outside the image: nearest or constant");
  cmd->add_option("--rescale", c.rescale, "Pixel scale factor (default 1/255)");
  cmd->add_option("--standardize", c.standardize, "Per-image standardization (true/false)");
  cmd->add_option("--mean", c.mean, "Per-channel mean to subtract after rescale (R,G,B)")
      ->delimiter(',');
  cmd->add_option("--std", c.std, "Per-channel std to divide by after rescale (R,G,B)")
      ->delimiter(',');
  cmd->add_option("--resize", c.resize,
                  "Evaluation resize of other-sized images: stretch or center_crop");
  cmd->add_option("--epochs", c.epochs, "Epochs to train")
      ->capture_default_str()
      ->check(positive());
  cmd->add_option("--batch-size", c.batch_size, "Samples per step")
      ->capture_default_str()
      ->check(positive());
  cmd->add_option("--optimizer", o->optimizer, "sgd, adam, adamw or rmsprop")
      ->capture_default_str();
  cmd->add_option("--lr", o->lr,
                  "Learning rate (default: the model's recipe; 0.01 for another --optimizer sgd, "
                  "2e-3 for others)")
      ->check(positive());
  cmd->add_option("--momentum", o->momentum, "Momentum (sgd, rmsprop)")->check(in_range(0.0, 1.0));
  cmd->add_flag("--nesterov", o->nesterov, "Nesterov momentum (sgd)");
  cmd->add_option("--weight-decay", o->weight_decay, "Weight decay")->check(non_negative());
  cmd->add_option("--schedule", o->schedule, "constant, step or cosine")->capture_default_str();
  cmd->add_option("--warmup-steps", o->warmup_steps,
                  "Linear warm-up steps (default: min(300, 10% of the steps))")
      ->check(non_negative());
  cmd->add_option("--device", c.device, "cpu, cuda or cuda:N")->capture_default_str();
  cmd->add_option("--threads", c.threads, "CPU threads (0: all cores)")->check(thread_count());
  cmd->add_option("--seed", c.seed, "Random seed (0 to 2^64-1)")
      ->capture_default_str()
      ->check(unsigned_64());
  cmd->add_option("--out", c.out_dir, "Run directory (default: runs/<model>-<date>-<time>)");
  cmd->add_option("--resume", o->resume_dir,
                  "Continue the run in RUN_DIR from its last checkpoint");
  cmd->add_option("--determinism", o->determinism, "fast, reproducible or strict")
      ->capture_default_str();
  cmd->add_option("--limit-train", c.limit_train, "Use only the first N training samples")
      ->check(non_negative());
  cmd->add_option("--limit-test", c.limit_test, "Use only the first N test samples")
      ->check(non_negative());
  cmd->add_option("--synthetic-count", c.synthetic_count, "Training samples of --data synthetic")
      ->check(positive());
  cmd->add_option("--log-every", c.log_every, "Steps between metrics.jsonl records")
      ->check(non_negative());
  cmd->add_option("--keep-checkpoints", c.keep_checkpoints,
                  "epoch-K checkpoints kept, the newest (-1: all); last and best are always kept")
      ->capture_default_str()
      ->check(in_range(-1, 1e9));
  cmd->add_flag("--quiet", c.quiet, "No progress output");
  cmd->add_flag("--json", o->json,
                "Print one JSON summary line on stdout (progress goes to stderr)");
  cmd->callback([o, &exit_code] { exit_code = run_train(*o); });
}

}  // namespace epoch::cli
