// `epoch train`: trains a zoo model; `--json` ends with one machine-readable summary line.
#include <sys/resource.h>

#include <csignal>
#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/config_flags.h"
#include "epoch/data/loader.h"
#include "epoch/dist/process_group.h"
#include "epoch/train/config_fields.h"
#include "epoch/train/recipe.h"
#include "epoch/train/run_dir.h"
#include "epoch/train/stop.h"
#include "epoch/train/callback.h"
#include "epoch/train/trainer.h"

namespace epoch::cli {
namespace {

struct TrainOptions {
  ConfigFlags flags;  // the settings table's flags as given
  std::string augment_base = "recipe";
  std::vector<float> contrast;
  std::string resume_dir;
  bool json = false;
};

/// report.html, written again at each epoch's end and when the run stops: a run has a current
/// page while it trains, and one of its completed epochs if it fails later.
class ReportCallback final : public train::Callback {
 public:
  void on_run_start(const train::RunStart& r) override { dir_ = r.run_dir; }
  void on_epoch_end(const train::EpochEnd&, train::RunControl&) override { write(); }
  void on_stop(const train::StopEnd&) override { write(); }
  /// The page last written ("" when none was).
  const std::string& written() const { return written_; }

 private:
  void write() {
    if (failed_) return;  // warned once
    train::record_files(dir_, {"report.html"});  // the run's own, to replace
    written_ = write_report_or_warn(dir_);
    failed_ = written_.empty();
  }
  std::string dir_, written_;
  bool failed_ = false;
};

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

/// "1234", "12.3", "0.42": a rate with the digits that matter, so a slow one never reads as 0.
std::string format_rate(double per_s) {
  char text[64];
  if (per_s >= 100)
    std::snprintf(text, sizeof text, "%.0f", per_s);
  else if (per_s >= 1)
    std::snprintf(text, sizeof text, "%.1f", per_s);
  else
    std::snprintf(text, sizeof text, "%.2g", per_s);
  return text;
}

/// `base` (the model's recipe, or a resumed run's configuration), then every flag given on
/// the command line on top of it.
train::TrainConfig config_from_flags(const TrainOptions& o, train::TrainConfig c) {
  const auto given = [&](const std::string& flag) { return o.flags.given(flag); };
  const train::TrainConfig f = flag_values(o.flags);
  // Another optimizer than the base's starts from its own defaults; another schedule from the
  // default warm-up; the flags given then apply on top.
  if (given("--optimizer") && f.optimizer.kind != c.optimizer.kind) {
    c.optimizer = optim::optimizer_defaults(f.optimizer.kind);
    if (f.optimizer.kind == optim::OptimizerKind::sgd)
      c.optimizer.lr = 0.01f;
    else if (f.optimizer.kind != optim::OptimizerKind::lars)  // lars keeps its own 0.1
      c.optimizer.lr = 2e-3f;
  }
  if (given("--schedule") && !given("--warmup-steps")) c.schedule.warmup_steps = -1;
  // Augmentation: the recipe's (or none), then each augmentation flag given.
  if (o.augment_base == "none") {
    c.input.augment = data::AugmentConfig{};
  } else if (o.augment_base != "recipe") {
    EPOCH_THROW(ConfigError, "--augment ", o.augment_base, ": expected recipe or none");
  }
  apply_given_flags(o.flags, c);
  // --epochs alone is the run's length, even where a solver's max_iter gave one in steps.
  if (given("--epochs") && !given("--max-steps")) c.run.max_steps = 0;
  if (given("--contrast")) {
    if (o.contrast.size() != 2)
      EPOCH_THROW(ConfigError, "--contrast expects MIN,MAX (e.g. 0.2,1.8)");
    c.input.augment.contrast_min = o.contrast[0];
    c.input.augment.contrast_max = o.contrast[1];
  }
  c.input.augment.validate();
  return c;
}

/// A resumed run's configuration: the stored one, with the flags given that a resumed run may
/// change (threads, workers, epochs, ...); a flag that would change what the run computes is
/// refused, naming it, unless it repeats the stored value.
train::TrainConfig resumed_config(const TrainOptions& o) {
  if (o.flags.given("--out") > 0 && o.flags.config.run.out_dir != o.resume_dir)
    EPOCH_THROW(ConfigError, "--resume ", o.resume_dir, " and --out ", o.flags.config.run.out_dir,
                " disagree");
  const train::TrainConfig stored = train::stored_run_config(o.resume_dir);
  train::TrainConfig c = config_from_flags(o, stored);
  c.run.out_dir = o.resume_dir;
  c.run.resume = true;
  if (const std::string conflicts = train::resume_conflicts(stored, c); !conflicts.empty())
    EPOCH_THROW(ConfigError, "--resume ", o.resume_dir,
                " continues the run as it was started; flags would change ", conflicts,
                ": drop them, or start a new run with another --out");
  if (c.run.epochs != stored.run.epochs && stored.schedule.kind != optim::ScheduleKind::constant &&
      dist::ProcessGroup::world().rank() == 0)
    std::fprintf(stderr,
                 "epoch: warning: --epochs %lld changes the run's plan of %lld epochs: its %s "
                 "learning-rate schedule is recomputed over %lld epochs\n",
                 static_cast<long long>(c.run.epochs), static_cast<long long>(stored.run.epochs),
                 optim::schedule_name(stored.schedule.kind), static_cast<long long>(c.run.epochs));
  return c;
}

int run_train(TrainOptions& o) {
  train::use_model_file_options(o.flags.config);  // before the model file is first read
  train::TrainConfig c = o.resume_dir.empty()
                             ? config_from_flags(o, train::recipe_for(o.flags.config.run.model))
                             : resumed_config(o);
  c.run.progress_interactive = stdout_is_terminal() && !o.json;
  std::FILE* progress = o.json ? stderr : stdout;
  // Under mpirun rank 0 alone prints (the trainer keeps the other ranks quiet too).
  const dist::ProcessGroup& group = dist::ProcessGroup::world();
  const std::string ranks =
      group.distributed() ? " on " + std::to_string(group.size()) + " processes (global batch " +
                                std::to_string(c.run.batch_size * group.size()) + ")"
                          : "";
  if (!c.run.quiet && group.rank() == 0)
    std::fprintf(progress, "epoch: training %s%s%s: %s\n", c.run.model.c_str(), ranks.c_str(),
                 c.run.resume ? (" (resuming " + c.run.out_dir + ")").c_str() : "",
                 train::describe_recipe(c).c_str());
  // Ctrl-C or SIGTERM: the run stops after its current step with a checkpoint (a second one
  // ends it at once). Ranks under mpirun keep the default: they must stop at the same step.
  if (!group.distributed()) train::stop_on_signals();
  ReportCallback report_callback;
  train::TrainOptions options;
  options.progress = progress;
  if (group.rank() == 0) options.callbacks.push_back(&report_callback);  // rank 0 writes the run
  const train::TrainResult r = train::train(c, options);
  if (group.rank() != 0) return 0;
  const std::string report = report_callback.written();
  if (o.json) {
    nlohmann::json j = r.to_json();
    j["model"] = c.run.model;
    if (!report.empty()) j["report"] = report;
    j["peak_rss_mib"] = peak_rss_mib();
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("run directory: %s\n", r.run_dir.c_str());
    std::printf("checkpoint:    %s\n", r.checkpoint.c_str());
    if (!r.evaluated)
      std::printf("%s loss:     none (stopped before an evaluation)\n", r.eval_name.c_str());
    else if (r.test_accuracy >= 0 && r.test_top5_accuracy >= 0)
      std::printf("%s accuracy: %.2f%% (top-5 %.2f%%)  %s loss: %.4f\n", r.eval_name.c_str(),
                  100.0 * r.test_accuracy, 100.0 * r.test_top5_accuracy, r.eval_name.c_str(),
                  r.test_loss);
    else if (r.test_accuracy >= 0)
      std::printf("%s accuracy: %.2f%%  %s loss: %.4f\n", r.eval_name.c_str(),
                  100.0 * r.test_accuracy, r.eval_name.c_str(), r.test_loss);
    else
      std::printf("%s loss: %.5f\n", r.eval_name.c_str(), r.test_loss);
    // A video model's samples are windows of frames: its rate in frames (a few windows a
    // second would print as 0 images/s).
    const bool video = r.frames_per_sample > 1;
    const std::string rate =
        video ? format_rate(r.frames_per_s) + " frames/s (" + format_rate(r.images_per_s) +
                    " windows of " + std::to_string(r.frames_per_sample) + " frames/s, training)"
              : format_rate(r.images_per_s) + " images/s (training)";
    std::printf("throughput:    %s, wall time %.1f s, peak memory %.0f MiB\n", rate.c_str(),
                r.wall_s, peak_rss_mib());
    std::printf("input:         %.0f%% of training time waiting for data\n",
                100.0 * r.data_wait_fraction);
    if (r.skipped_images > 0)
      std::printf("skipped:       %lld bad image file%s (named in the warnings above)\n",
                  static_cast<long long>(r.skipped_images), r.skipped_images == 1 ? "" : "s");
    if (!report.empty()) std::printf("report:        %s\n", report.c_str());
  }
  if (r.stopped) {
    const int signal = r.stop_signal;
    const std::string where =
        r.stopped_in_epoch > 0 ? "in epoch " + std::to_string(r.stopped_in_epoch) + " after step " +
                                     std::to_string(r.stopped_epoch_step)
                               : "after epoch " + std::to_string(r.epochs);
    const char* by =
        signal == SIGTERM ? "SIGTERM" : signal == SIGINT ? "Ctrl-C (SIGINT)" : "a request";
    std::fflush(stdout);
    if (r.stop_saved)
      std::fprintf(stderr, "epoch: stopped by %s %s, checkpoint %s; continue with: epoch train "
                   "--resume %s\n", by, where.c_str(), r.checkpoint.c_str(), r.run_dir.c_str());
    else if (!r.checkpoint.empty())
      std::fprintf(stderr, "epoch: stopped by %s %s; that epoch is not saved (a video run "
                   "checkpoints at epoch ends): continue from %s with: epoch train --resume %s\n",
                   by, where.c_str(), r.checkpoint.c_str(), r.run_dir.c_str());
    else
      std::fprintf(stderr, "epoch: stopped by %s %s, before its first checkpoint: nothing to "
                   "resume\n", by, where.c_str());
    return signal > 0 ? 128 + signal : 1;
  }
  return 0;
}

}  // namespace

void add_train_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<TrainOptions>();
  CLI::App* cmd =
      app.add_subcommand("train", "Train a model (default: fmnist-cnn on Fashion-MNIST)");
  add_config_flags(*cmd, o->flags, [](const train::ConfigField&) { return true; });
  add_replaced_flag(*cmd, "--cpu-kernels", "--determinism reference", true);
  // Flags that set several settings at once, or say how to run this command.
  cmd->add_option("--augment", o->augment_base,
                  "recipe (the model's augmentation) or none; the flags below change it")
      ->capture_default_str();
  cmd->add_option("--contrast", o->contrast, "Random contrast factor range MIN,MAX")
      ->delimiter(',');
  cmd->add_option("--resume", o->resume_dir,
                  "Continue the run in RUN_DIR from its last checkpoint");
  cmd->add_flag("--json", o->json,
                "Print one JSON summary line on stdout (progress goes to stderr)");
  cmd->callback([o, &exit_code] { exit_code = run_train(*o); });
}

}  // namespace epoch::cli
