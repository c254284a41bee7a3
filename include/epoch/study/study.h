// `epoch study`: the same training under several configurations (CPU thread counts, the plain
// reference kernels, a one-ulp perturbation, CUDA with and without cuDNN), repeated over seeds,
// and a statistical comparison of every pair of configurations (stats.h). For each seed every
// configuration starts from the same initial weights and sees the same data order; the
// configurations this machine cannot run are listed as skipped, with the reason.
#pragma once

#include <cstdint>
#include <cstdio>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "epoch/study/stats.h"
#include "epoch/train/trainer.h"

namespace epoch::study {

/// One configuration: "cpu:N" (N threads, the fast kernels, determinism reproducible),
/// "cpu:N+reference" (the plain reference kernels), "cpu:N+perturb" (initial weights jittered
/// by one ulp from a seed of each repeat's own: --perturb ulp), "cpu:N+perturb-order" (the
/// weight gradients' part sums in a shuffled order, drawn likewise: --perturb order), "cuda"
/// (cuDNN's convolutions), "cuda-nocudnn" (epoch's im2col ones). Any of them may add "+lr=X"
/// (the optimizer's learning rate X instead of the protocol's), so that a study can set a
/// setting that does change the result beside those it asks about: "cpu:2+perturb+lr=0.001".
struct StudyConfigSpec {
  std::string name;  // as given
  std::string device = "cpu";
  int threads = 1;
  bool reference = false, cudnn = true;
  std::string perturb = "none";  // train's --perturb: none, ulp or order
  double lr = 0.0;               // > 0: the optimizer's learning rate; 0: the protocol's
};
/// Parses "cpu:1,cpu:2+perturb,cuda" (ConfigError naming the bad entry, or a repeated one).
std::vector<StudyConfigSpec> parse_study_configs(const std::string& list);
/// Why this machine cannot run a configuration ("no CUDA device", ...); empty when it can.
std::string skip_reason(const StudyConfigSpec& spec);

struct StudyConfig {
  std::string protocol = "autoencoder";  // autoencoder | prednet-study
  std::string configs = "cpu:1,cpu:2,cpu:2+perturb";
  std::int64_t repeats = 5;
  std::string out_dir;
  /// The equivalence margin, relative to the mean of the figure over every run (1%).
  double margin = 0.01;
  double alpha = 0.05;
  /// The protocol's training, shortened for quick studies (0: the protocol's own).
  std::int64_t epochs = 0, limit_train = 0, limit_test = 0;
  std::string data;        // empty: the protocol's data
  std::uint64_t seed = 0;  // repeat r trains with seed + r
  bool quiet = false;
};

/// The protocol's training configuration for one run (before the configuration's settings):
/// autoencoder: the zoo's autoencoder on Fashion-MNIST (Debian's; the MNIST digits are in no
/// Debian package), its recipe, 1 epoch, batch 128; the figure is the final test loss.
/// prednet-study: 250 updates of 20 frames on `data` (required), the figure the mean of the
/// last 50 losses. ConfigError for another protocol.
train::TrainConfig protocol_config(const StudyConfig& study);

struct StudyRun {
  std::string config;
  std::int64_t repeat = 0;
  std::uint64_t seed = 0;
  double figure = 0.0;  // what is compared (lower is better)
  double wall_s = 0.0;
  std::string run_dir;
};

struct StudyResult {
  std::vector<StudyConfigSpec> ran;
  std::vector<std::pair<std::string, std::string>> skipped;  // config, reason
  std::vector<StudyRun> runs;
  double margin = 0.0;  // absolute
  std::string figure_name;
  /// Every pair of configurations that ran, in the order given.
  std::vector<std::pair<std::pair<std::string, std::string>, Comparison>> comparisons;
  nlohmann::json to_json() const;
};

/// Runs the study: repeats x configurations trainings under out_dir/<config>/seed-<r> (each a
/// run folder of its own), then the comparisons; writes out_dir/study.json; prints one line
/// per run and per comparison to `out` (null: nothing). ConfigError for bad settings or when
/// fewer than two configurations can run here.
StudyResult run_study(const StudyConfig& study, std::FILE* out);

}  // namespace epoch::study
