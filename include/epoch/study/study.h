// `epoch study`: the same training under several configurations (CPU thread counts, the plain
// reference kernels, a one-ulp perturbation, CUDA with and without cuDNN), repeated over seeds,
// and a statistical comparison of every pair of configurations (stats.h). For each seed every
// configuration starts from the same initial weights and sees the same data order; the
// configurations this machine cannot run are listed as skipped, with the reason.
#pragma once

#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "epoch/study/stats.h"
#include "epoch/train/machine.h"
#include "epoch/train/train_config.h"

namespace epoch::study {

/// One configuration: a base, "cpu:N" (N threads) or "cuda", then "+key=value" settings over
/// the execution settings `epoch train` takes (execution.h), by their flag's name or their
/// config.json key: "+determinism=reference" (the plain reference kernels), "+perturb=ulp"
/// (initial weights jittered by one ulp, from a seed of each repeat's own), "+perturb=order"
/// (the weight gradients' part sums in a shuffled order, drawn likewise), "+conv-algo=direct",
/// "+cudnn=off" (CUDA's convolutions by epoch's own im2col). "+lr=X" sets the optimizer's
/// learning rate instead of the protocol's, so that a study can set a setting that does change
/// the result beside those it asks about: "cpu:2+perturb=ulp+lr=0.001". Settings chain in any
/// order. The spellings of earlier versions keep their meaning: "+reference", "+perturb",
/// "+perturb-order", "cuda-nocudnn". On CUDA a configuration may set cudnn and determinism
/// fast or reproducible; the CPU's kernel settings are refused there.
struct StudyConfigSpec {
  std::string name;  // as given (its runs' folder under --out)
  /// The base's device and threads (1 for "cuda") and the settings given; the perturbation's
  /// seed is each repeat's own (configured at training).
  train::ExecutionConfig execution;
  double lr = 0.0;  // > 0: the optimizer's learning rate; 0: the protocol's
};
/// The configuration's value in one spelling: the threads as a number, "+key=value" for each
/// setting away from its default, by flag name in the order of `epoch train --help`, the learning rate as the shortest decimal of the float the optimizer gets, and no
/// "+lr" when that float is `protocol_lr` (> 0: the protocol's own rate). Two configurations
/// train alike exactly when these are equal: "cpu:01+lr=1e-3+perturb" is
/// "cpu:1+perturb=ulp+lr=0.001".
std::string canonical_config(const StudyConfigSpec& spec, float protocol_lr = 0.0f);
/// Parses "cpu:1,cpu:2+perturb,cuda", every entry checked before anything trains: ConfigError
/// naming the entry ("--configs cpu:2+lr=1e-300: ...") for a bad one, a learning rate `epoch
/// train --lr` would refuse (one the optimizer's float holds as 0 or infinity included), or
/// one equal by value to an earlier one (canonical_config with `protocol_lr`), naming both
/// spellings.
std::vector<StudyConfigSpec> parse_study_configs(const std::string& list, float protocol_lr = 0.0f);
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
  /// autoencoder protocol: another model than the zoo's autoencoder, by name or a model file
  /// (its SHA-256 is kept in the plan, so a resumed study refuses a changed file), with a
  /// Caffe net's input shape ("C,H,W"); empty: the protocol's.
  std::string model, input_shape;
  std::uint64_t seed = 0;  // repeat r trains with seed + r
  /// What `epoch study combine` calls this machine ("i5-4590"); empty: the short name of its
  /// CPU (of its GPU for CUDA configurations).
  std::string machine;
  bool quiet = false;
  /// Continue the interrupted study in out_dir: every setting above must be the stored one
  /// (stored_study); the runs that finished are kept, the others trained from scratch.
  bool resume = false;
};

/// The settings of the study that `dir` holds (its study-plan.json, written before its first
/// run), so that `epoch study --resume` can start from them; IoError naming the file when
/// there is none or it is not a study's.
StudyConfig stored_study(const std::string& dir);

/// The protocol's training configuration for one run (before the configuration's settings):
/// autoencoder: the zoo's autoencoder on Fashion-MNIST (Debian's; the MNIST digits are in no
/// Debian package), its recipe, 1 epoch, batch 128; the figure is the final test loss, sample
/// by sample in double (train::EvalResult::loss_f64), so that one ulp of difference shows.
/// prednet-study: 250 updates of 20 frames on `data` (required), the figure the mean of the
/// last 50 losses (each taken before its step's update). ConfigError for another protocol.
train::TrainConfig protocol_config(const StudyConfig& study);

/// What makes two studies' runs comparable, whatever machine ran them: the protocol, the model
/// (its description's SHA-256), the data (train::data_digest), and every stored training
/// setting (epochs, batch, limits, optimizer, schedule, preprocessing and augmentation, ...)
/// but the seed (each run's own, what pairs runs), the paths and the settings of how a run
/// computes (the execution settings, which configurations vary, and workers, logging and
/// checkpoints, which leave the result alone). Flat: {"optimizer.lr": 0.001, ...}.
nlohmann::json protocol_fingerprint(const StudyConfig& study, const train::TrainConfig& base);

struct StudyRun {
  std::string config;   // as given; "<machine>/<config>" in a combined study
  std::string machine;  // the label of the machine that ran it
  std::int64_t repeat = 0;
  std::uint64_t seed = 0;
  double figure = 0.0;  // what is compared (lower is better)
  double wall_s = 0.0;
  std::string run_dir;
  std::string weights_sha256;  // of the trained weights (nn::state_sha256)
};

/// Two configurations compared on the seeds both ran (paired by seed).
struct ConfigComparison {
  std::string a, b;
  Comparison stats;
  std::int64_t seeds = 0;           // the seeds both ran
  std::int64_t identical_bits = 0;  // of them, the seeds whose final weights are the same bits
  /// "identical" (every seed), "different" (none) or "partly" (some).
  std::string bits() const;
  /// The verdict in words, the bits first: "identical bits in all 5 seeds", "different bits,
  /// equivalent within margin ...".
  std::string words() const;
};

struct StudyResult {
  std::vector<StudyConfigSpec> ran;
  std::vector<std::pair<std::string, std::string>> skipped;  // config, reason
  std::vector<StudyRun> runs;
  double margin = 0.0;  // absolute
  double alpha = 0.05;
  std::string figure_name;
  std::string protocol;          // autoencoder | prednet-study
  nlohmann::json fingerprint;    // protocol_fingerprint's
  /// The machines by label (one for a study; each source's for a combined one).
  std::vector<std::pair<std::string, train::MachineRecord>> machines;
  std::vector<std::string> sources;  // a combined study's folders, as given
  /// Every pair of configurations that ran, in the order given.
  std::vector<ConfigComparison> comparisons;
  nlohmann::json to_json() const;
};

/// Runs the study: repeats x configurations trainings under out_dir/<config>/seed-<r> (each a
/// run folder of its own, with study-run.json recording its figure once it finished), then
/// the comparisons; writes out_dir/study-plan.json before the first run and out_dir/study.json
/// at the end; prints one line per run and per comparison to `out` (null: nothing).
/// Everything is checked before anything trains: ConfigError for bad settings or
/// configurations, fewer than two configurations that can run here, a protocol whose figure
/// no update would move (prednet-study on a single window), or an out_dir that already holds
/// something (an unfinished study: the message spells the `epoch study --resume` command).
/// With `resume`, ConfigError naming the setting that differs from the stored study's.
/// A run that fails throws its error's type with one line naming the configuration, the
/// seed and the run folder; the finished runs stay for --resume.
StudyResult run_study(const StudyConfig& study, std::FILE* out);

}  // namespace epoch::study
