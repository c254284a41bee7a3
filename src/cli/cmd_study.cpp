// `epoch study`: one training under several configurations, repeated, and whether the
// configurations change the result, with statistics (study/study.h).
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "epoch/study/combine.h"
#include "epoch/study/study.h"

namespace epoch::cli {
namespace {

struct StudyOptions {
  study::StudyConfig config;
  bool json = false;
  /// The flags that set a stored setting of the study, and how each copies its value: with
  /// --resume the study starts from its stored settings and takes only the flags given here
  /// (run_study then refuses one that differs, naming it).
  std::vector<std::pair<CLI::Option*, void (*)(study::StudyConfig&, const study::StudyConfig&)>>
      stored_flags;
};

int run_study_command(const StudyOptions& o) {
  study::StudyConfig config = o.config;
  if (o.config.resume) {
    config = study::stored_study(o.config.out_dir);
    for (const auto& [option, copy] : o.stored_flags)
      if (option->count() > 0) copy(config, o.config);
    config.out_dir = o.config.out_dir;
  }
  const study::StudyResult r = study::run_study(config, o.json ? nullptr : stdout);
  const std::string report = write_report_or_warn(config.out_dir);
  if (o.json) {
    nlohmann::json j = r.to_json();
    if (!report.empty()) j["report"] = report;
    std::printf("%s\n", j.dump().c_str());
  } else if (!report.empty()) {
    std::printf("study: report %s\n", report.c_str());
  }
  return 0;
}

struct CombineOptions {
  std::vector<std::string> dirs;
  std::string out_dir;
  bool json = false;
};

int run_combine_command(const CombineOptions& o) {
  const study::StudyResult r = study::combine_studies(o.dirs, o.out_dir, o.json ? nullptr : stdout);
  const std::string report = write_report_or_warn(o.out_dir);
  if (o.json) {
    nlohmann::json j = r.to_json();
    if (!report.empty()) j["report"] = report;
    std::printf("%s\n", j.dump().c_str());
  } else if (!report.empty()) {
    std::printf("study combine: report %s\n", report.c_str());
  }
  return 0;
}

void add_combine_command(CLI::App& study, int& exit_code) {
  auto o = std::make_shared<CombineOptions>();
  CLI::App* cmd = study.add_subcommand(
      "combine",
      "Pool finished studies of several machines (each its own --out) into one, comparing "
      "every machine's configurations paired by seed; studies of another protocol are refused");
  cmd->add_option("studies", o->dirs, "The study folders, two or more")->required();
  cmd->add_option("--out", o->out_dir, "Folder for the pooled study.json and report")->required();
  cmd->add_flag("--json", o->json, "Print one JSON object instead of lines");
  cmd->callback([o, &exit_code] { exit_code = run_combine_command(*o); });
}

}  // namespace

void add_study_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<StudyOptions>();
  study::StudyConfig& c = o->config;
  CLI::App* cmd = app.add_subcommand(
      "study", "Train under several configurations, repeated, and compare them with statistics");
  const auto stored = [&](CLI::Option* option,
                          void (*copy)(study::StudyConfig&, const study::StudyConfig&)) {
    o->stored_flags.emplace_back(option, copy);
    return option;
  };
  using Config = study::StudyConfig;
  stored(cmd->add_option("--protocol", c.protocol, "autoencoder or prednet-study"),
         [](Config& to, const Config& from) { to.protocol = from.protocol; })
      ->capture_default_str();
  stored(cmd->add_option("--configs", c.configs,
                         "cpu:N or cuda, each with any +key=value of determinism, perturb, "
                         "conv-algo, cudnn (as the flags) and lr, comma-separated: "
                         "cpu:2+determinism=reference,cpu:2+perturb=ulp,cuda+cudnn=off"),
         [](Config& to, const Config& from) { to.configs = from.configs; })
      ->capture_default_str();
  stored(cmd->add_option("--repeats", c.repeats, "Seeds per configuration (>= 2)"),
         [](Config& to, const Config& from) { to.repeats = from.repeats; })
      ->capture_default_str()
      ->check(in_range(2, 100000));
  cmd->add_option("--out", c.out_dir, "Folder for the runs and study.json (needed)");
  cmd->add_flag("--resume", c.resume,
                "Continue the interrupted study in --out: its finished runs are kept, the rest "
                "trained (its settings are the stored ones; a flag that differs is refused)");
  stored(cmd->add_option("--margin", c.margin, "Equivalence margin, relative to the mean figure"),
         [](Config& to, const Config& from) { to.margin = from.margin; })
      ->capture_default_str();
  stored(cmd->add_option("--data", c.data, "The protocol's data (default: the protocol's own)"),
         [](Config& to, const Config& from) { to.data = from.data; });
  stored(cmd->add_option("--model", c.model,
                         "autoencoder protocol: another model, by name or a model file (Keras, "
                         "Caffe, epoch's); the figure stays the final test loss"),
         [](Config& to, const Config& from) { to.model = from.model; });
  stored(cmd->add_option("--input-shape", c.input_shape,
                         "A Caffe net's input as C,H,W, where its Data layer gives none"),
         [](Config& to, const Config& from) { to.input_shape = from.input_shape; });
  stored(cmd->add_option("--epochs", c.epochs, "Epochs per run (default: the protocol's)"),
         [](Config& to, const Config& from) { to.epochs = from.epochs; })
      ->check(non_negative());
  stored(cmd->add_option("--limit-train", c.limit_train, "Train on the first N samples (0: all)"),
         [](Config& to, const Config& from) { to.limit_train = from.limit_train; })
      ->check(non_negative());
  stored(cmd->add_option("--limit-test", c.limit_test, "Evaluate on the first N samples (0: all)"),
         [](Config& to, const Config& from) { to.limit_test = from.limit_test; })
      ->check(non_negative());
  stored(cmd->add_option("--seed", c.seed, "Repeat r trains with seed + r"),
         [](Config& to, const Config& from) { to.seed = from.seed; })
      ->capture_default_str();
  stored(cmd->add_option("--machine", c.machine,
                         "What `epoch study combine` calls this machine (default: its CPU's "
                         "short name, its GPU's for CUDA configurations)"),
         [](Config& to, const Config& from) { to.machine = from.machine; });
  cmd->add_flag("--json", o->json, "Print one JSON object instead of lines");
  add_combine_command(*cmd, exit_code);
  cmd->callback([o, cmd, &exit_code] {
    if (cmd->get_subcommands().empty()) exit_code = run_study_command(*o);
  });
}

}  // namespace epoch::cli
