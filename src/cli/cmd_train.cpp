// `epoch train`: trains a zoo model; `--json` ends with one machine-readable summary line.
#include <sys/resource.h>

#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "epoch/train/trainer.h"

namespace epoch::cli {
namespace {

struct TrainOptions {
  train::TrainConfig config;
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

int run_train(TrainOptions& o) {
  train::TrainConfig c = o.config;
  c.optimizer = optim::optimizer_defaults(o.optimizer);
  c.optimizer.lr = o.lr > 0.0f ? o.lr : (o.optimizer == "sgd" ? 0.01f : 2e-3f);
  if (o.momentum >= 0.0f) c.optimizer.momentum = o.momentum;
  c.optimizer.nesterov = o.nesterov;
  c.optimizer.weight_decay = o.weight_decay;
  c.schedule.name = o.schedule;
  c.warmup_steps = o.warmup_steps;
  c.determinism = train::parse_determinism(o.determinism);
  if (!o.resume_dir.empty()) {
    if (!c.out_dir.empty() && c.out_dir != o.resume_dir)
      EPOCH_THROW(ConfigError, "--resume ", o.resume_dir, " and --out ", c.out_dir, " disagree");
    c.out_dir = o.resume_dir;
    c.resume = true;
  }
  c.progress_interactive = stdout_is_terminal() && !o.json;
  std::FILE* progress = o.json ? stderr : stdout;
  if (!c.quiet)
    std::fprintf(progress, "epoch: training %s%s\n", c.model.c_str(),
                 c.resume ? (" (resuming " + c.out_dir + ")").c_str() : "");
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
      std::printf("test accuracy: %.2f%%  test loss: %.4f\n", 100.0 * r.test_accuracy, r.test_loss);
    else
      std::printf("test loss: %.5f\n", r.test_loss);
    std::printf("throughput:    %.0f images/s (training), wall time %.1f s, peak memory %.0f MiB\n",
                r.images_per_s, r.wall_s, peak_rss_mib());
  }
  return 0;
}

}  // namespace

void add_train_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<TrainOptions>();
  CLI::App* cmd = app.add_subcommand("train", "Train a model (default: fmnist-cnn on Fashion-MNIST)");
  train::TrainConfig& c = o->config;
  cmd->add_option("--model", c.model, "Model from `epoch models`")->capture_default_str();
  cmd->add_option("--data", c.data,
                  "Folder of MNIST-format IDX files, or 'synthetic' (default: Fashion-MNIST)");
  cmd->add_option("--epochs", c.epochs, "Epochs to train")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--batch-size", c.batch_size, "Samples per step")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--optimizer", o->optimizer, "sgd, adam, adamw or rmsprop")->capture_default_str();
  cmd->add_option("--lr", o->lr, "Learning rate (default: 2e-3; 0.01 for sgd)")->check(CLI::PositiveNumber);
  cmd->add_option("--momentum", o->momentum, "Momentum (sgd, rmsprop)")->check(CLI::Range(0.0, 1.0));
  cmd->add_flag("--nesterov", o->nesterov, "Nesterov momentum (sgd)");
  cmd->add_option("--weight-decay", o->weight_decay, "Weight decay")->check(CLI::NonNegativeNumber);
  cmd->add_option("--schedule", o->schedule, "constant, step or cosine")->capture_default_str();
  cmd->add_option("--warmup-steps", o->warmup_steps,
                  "Linear warm-up steps (default: min(300, 10% of the steps))")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--device", c.device, "cpu, cuda or cuda:N")->capture_default_str();
  cmd->add_option("--threads", c.threads, "CPU threads (0: all cores)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--seed", c.seed, "Random seed")->capture_default_str();
  cmd->add_option("--out", c.out_dir, "Run directory (default: runs/<model>-<date>-<time>)");
  cmd->add_option("--resume", o->resume_dir, "Continue the run in RUN_DIR from its last checkpoint");
  cmd->add_option("--determinism", o->determinism, "fast, reproducible or strict")->capture_default_str();
  cmd->add_option("--limit-train", c.limit_train, "Use only the first N training samples")->check(CLI::NonNegativeNumber);
  cmd->add_option("--limit-test", c.limit_test, "Use only the first N test samples")->check(CLI::NonNegativeNumber);
  cmd->add_option("--synthetic-count", c.synthetic_count, "Training samples of --data synthetic")->check(CLI::PositiveNumber);
  cmd->add_option("--log-every", c.log_every, "Steps between metrics.jsonl records")->check(CLI::NonNegativeNumber);
  cmd->add_flag("--quiet", c.quiet, "No progress output");
  cmd->add_flag("--json", o->json, "Print one JSON summary line on stdout (progress goes to stderr)");
  cmd->callback([o, &exit_code] { exit_code = run_train(*o); });
}

}  // namespace epoch::cli
