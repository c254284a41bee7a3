// `epoch study`: one training under several configurations, repeated, and whether the
// configurations change the result, with statistics (study/study.h).
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "epoch/study/study.h"

namespace epoch::cli {
namespace {

struct StudyOptions {
  study::StudyConfig config;
  bool json = false;
};

int run_study_command(const StudyOptions& o) {
  const study::StudyResult r = study::run_study(o.config, o.json ? nullptr : stdout);
  const std::string report = write_report_or_warn(o.config.out_dir);
  if (o.json) {
    nlohmann::json j = r.to_json();
    if (!report.empty()) j["report"] = report;
    std::printf("%s\n", j.dump().c_str());
  } else if (!report.empty()) {
    std::printf("study: report %s\n", report.c_str());
  }
  return 0;
}

}  // namespace

void add_study_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<StudyOptions>();
  study::StudyConfig& c = o->config;
  CLI::App* cmd = app.add_subcommand(
      "study", "Train under several configurations, repeated, and compare them with statistics");
  cmd->add_option("--protocol", c.protocol, "autoencoder or prednet-study")->capture_default_str();
  cmd->add_option("--configs", c.configs,
                  "cpu:N, cpu:N+reference, cpu:N+perturb (ulp), cpu:N+perturb-order, cuda, "
                  "cuda-nocudnn, comma-separated; any may add +lr=X (the learning rate)")
      ->capture_default_str();
  cmd->add_option("--repeats", c.repeats, "Seeds per configuration (>= 2)")
      ->capture_default_str()
      ->check(in_range(2, 100000));
  cmd->add_option("--out", c.out_dir, "Folder for the runs and study.json")->required();
  cmd->add_option("--margin", c.margin, "Equivalence margin, relative to the mean figure")
      ->capture_default_str();
  cmd->add_option("--data", c.data, "The protocol's data (default: the protocol's own)");
  cmd->add_option("--epochs", c.epochs, "Epochs per run (default: the protocol's)")
      ->check(non_negative());
  cmd->add_option("--limit-train", c.limit_train, "Train on the first N samples (0: all)")
      ->check(non_negative());
  cmd->add_option("--limit-test", c.limit_test, "Evaluate on the first N samples (0: all)")
      ->check(non_negative());
  cmd->add_option("--seed", c.seed, "Repeat r trains with seed + r")->capture_default_str();
  cmd->add_flag("--json", o->json, "Print one JSON object instead of lines");
  cmd->callback([o, &exit_code] { exit_code = run_study_command(*o); });
}

}  // namespace epoch::cli
