// `epoch eval CKPT` and `epoch predict CKPT INPUT...`: both use the model, weights,
// preprocessing and kernels (the execution settings) stored in the checkpoint; the execution
// flags given override its kernels.
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/config_flags.h"
#include "cli/flag_checks.h"
#include "epoch/ops/backend.h"
#include "epoch/tensor/warnings.h"
#include "epoch/train/checkpoint_eval.h"
#include "epoch/train/clips.h"
#include "epoch/train/inference.h"

namespace epoch::cli {
namespace {

struct EvalOptions {
  std::string checkpoint, data;
  std::int64_t batch_size = 0;  // 0: auto
  std::int64_t limit = 0;
  ConfigFlags flags;  // the execution flags (--threads, --determinism, --conv-algo)
  bool json = false;
};

/// The flags of train's execution settings that a CPU evaluation takes (device, cuDNN and a
/// perturbation of training are not).
const std::vector<std::string> kNotForInference = {"--device", "--cudnn", "--perturb",
                                                   "--perturb-seed"};

/// Adds the execution flags an inference takes, each defaulting to the checkpoint's setting.
void add_inference_flags(CLI::App& cmd, ConfigFlags& flags) {
  add_execution_flags(cmd, flags, kNotForInference);
  for (CLI::Option* option : cmd.get_options()) {
    const std::string name = option->get_name();
    for (const train::ConfigField& f : train::config_fields())
      if (f.execution && f.flag == name)
        option->default_str("")->description(option->get_description() +
                                             " (default: the checkpoint's)");
  }
  add_replaced_flag(cmd, "--cpu-kernels", "--determinism reference", true);
}

std::string describe_kernels(const train::ExecutionConfig& e) {
  return std::string(train::determinism_name(e.determinism)) + " kernels, " +
         std::to_string(ops::num_threads()) + " thread" + (ops::num_threads() == 1 ? "" : "s");
}

bool predicts_frames(const train::TrainedModel& t) {
  return t.model->spec().task == models::Task::frame_prediction;
}

/// A video model's evaluation: its loss and the previous-frame baseline on the same frames.
void print_clip_eval(const EvalOptions& o, const train::TrainedModel& t,
                     const train::CheckpointEval& e, const train::ExecutionConfig& execution) {
  const train::ClipEvalResult& r = e.clips;
  if (o.json) {
    std::printf("%s\n", nlohmann::json{{"checkpoint", o.checkpoint},
                                       {"model", t.model->spec().name},
                                       {"windows", r.windows},
                                       {"frames", r.frames},
                                       {"test_loss", r.loss},
                                       {"test_baseline_mse", r.baseline_mse},
                                       {"margin", r.baseline_mse - r.loss},
                                       {"test_accuracy", nullptr},
                                       {"determinism", train::determinism_name(execution.determinism)},
                                       {"threads", ops::num_threads()}}
                            .dump()
                            .c_str());
  } else {
    std::printf(
        "%s on %lld %s frames (%lld windows): loss %.5f, previous-frame baseline %.5f (%s by "
        "%.5f; %s)\n",
        t.model->spec().name.c_str(), static_cast<long long>(r.frames), e.data_name.c_str(),
        static_cast<long long>(r.windows), r.loss, r.baseline_mse,
        r.loss < r.baseline_mse ? "better" : "worse", std::abs(r.baseline_mse - r.loss),
        describe_kernels(execution).c_str());
  }
}

int run_eval(const EvalOptions& o) {
  train::TrainedModel t = train::load_trained_model(o.checkpoint);
  // The checkpoint's execution settings with the flags given on top.
  const train::ExecutionConfig execution = execution_from_flags(o.flags, t.config.execution);
  const ops::ContextGuard context(train::kernel_context(execution));
  Warnings warnings(stderr);
  const train::CheckpointEval e =
      train::evaluate_checkpoint(t, {o.data, o.batch_size, o.limit}, warnings);
  if (e.frames) {
    print_clip_eval(o, t, e, execution);
    return 0;
  }
  const train::EvalResult& r = e.images;
  if (o.json) {
    nlohmann::json j{{"checkpoint", o.checkpoint},
                     {"model", t.model->spec().name},
                     {"samples", r.count},
                     {"test_loss", r.loss},
                     {"determinism", train::determinism_name(execution.determinism)},
                     {"threads", ops::num_threads()}};
    j["test_accuracy"] = r.accuracy >= 0 ? nlohmann::json(r.accuracy) : nlohmann::json(nullptr);
    if (r.top5_accuracy >= 0) j["test_top5_accuracy"] = r.top5_accuracy;
    std::printf("%s\n", j.dump().c_str());
  } else if (r.accuracy >= 0) {
    std::printf("%s on %lld test samples: accuracy %.2f%%", t.model->spec().name.c_str(),
                static_cast<long long>(r.count), 100.0 * r.accuracy);
    if (r.top5_accuracy >= 0) std::printf(", top-5 %.2f%%", 100.0 * r.top5_accuracy);
    std::printf(", loss %.4f (%s)\n", r.loss, describe_kernels(execution).c_str());
  } else {
    std::printf("%s on %lld test samples: loss %.5f (%s)\n", t.model->spec().name.c_str(),
                static_cast<long long>(r.count), r.loss, describe_kernels(execution).c_str());
  }
  return 0;
}

struct PredictOptions {
  std::string checkpoint;
  std::vector<std::string> inputs;
  std::string out;         // video models: where the predicted frames go
  bool overwrite = false;  // video models: replace the predicted frames already there
  ConfigFlags flags;       // the execution flags (--threads, --determinism, --conv-algo)
  bool json = false;
};

/// A video model's predictions: per sequence folder, its predicted frames as PNG.
int run_predict_frames(const PredictOptions& o, train::TrainedModel& t) {
  if (!o.out.empty() && o.inputs.size() > 1)
    EPOCH_THROW(ConfigError, "--out names one folder: give one sequence with it, got ",
                o.inputs.size());
  const std::int64_t frames = train::window_frames(t.config, t.model->spec());
  for (const std::string& input : o.inputs) {
    const train::PredictedFrames p =
        train::predict_sequence(*t.model, t.preprocessing, input, frames, o.out, o.overwrite);
    if (o.json)
      std::printf("%s\n", nlohmann::json{{"input", input},
                                         {"out_dir", p.out_dir},
                                         {"frames", p.files.size()},
                                         {"mse", p.mse},
                                         {"baseline_mse", p.baseline_mse}}
                              .dump()
                              .c_str());
    else
      std::printf("%s: %zu predicted frames in %s (MSE %.5f, previous frame %.5f)\n", input.c_str(),
                  p.files.size(), p.out_dir.c_str(), p.mse, p.baseline_mse);
  }
  return 0;
}

int run_predict(const PredictOptions& o) {
  train::TrainedModel t = train::load_trained_model(o.checkpoint);
  // The checkpoint's execution settings with the flags given on top.
  const train::ExecutionConfig execution = execution_from_flags(o.flags, t.config.execution);
  const ops::ContextGuard context(train::kernel_context(execution));
  if (predicts_frames(t)) return run_predict_frames(o, t);
  if (!o.out.empty())
    EPOCH_THROW(ConfigError, "--out: model ", t.model->spec().name,
                " classifies images; --out is for video models' predicted frames");
  if (o.overwrite)
    EPOCH_THROW(ConfigError, "--overwrite: model ", t.model->spec().name,
                " classifies images; --overwrite is for video models' predicted frames");
  for (const train::Prediction& p : train::predict(t, o.inputs)) {
    if (o.json) {
      std::printf("%s\n", nlohmann::json{{"input", p.input},
                                         {"class", p.class_name},
                                         {"class_index", p.class_index},
                                         {"probability", p.probability},
                                         {"probabilities", p.probabilities},
                                         {"determinism",
                                          train::determinism_name(execution.determinism)},
                                         {"threads", ops::num_threads()}}
                              .dump()
                              .c_str());
    } else {
      std::printf("%s: %s (%.1f%%)\n", p.input.c_str(), p.class_name.c_str(),
                  100.0 * p.probability);
    }
  }
  return 0;
}

}  // namespace

void add_eval_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<EvalOptions>();
  CLI::App* cmd = app.add_subcommand("eval", "Evaluate a checkpoint on the test split");
  cmd->add_option("checkpoint", o->checkpoint, "A checkpoint written by epoch train")->required();
  cmd->add_option("--data", o->data,
                  "Data to evaluate on, as train --data (default: the run's validation data)");
  cmd->add_option("--batch-size", o->batch_size,
                  "Samples per batch (default: about 1M input values)")
      ->check(positive());
  cmd->add_option("--limit", o->limit, "Evaluate only the first N samples")->check(non_negative());
  add_inference_flags(*cmd, o->flags);
  cmd->add_flag("--json", o->json, "Print one JSON line");
  cmd->callback([o, &exit_code] { exit_code = run_eval(*o); });
}

void add_predict_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<PredictOptions>();
  CLI::App* cmd = app.add_subcommand(
      "predict", "Classify images, or predict a sequence's frames, with a checkpoint");
  cmd->add_option("checkpoint", o->checkpoint, "A checkpoint written by epoch train")->required();
  cmd->add_option("inputs", o->inputs,
                  "JPEG or PNG files, or idx:PATH:INDEX; for a video model, sequence folders "
                  "(SEQUENCE_DIR: a folder of one sequence's frames)")
      ->required();
  cmd->add_option(
      "--out", o->out,
      "Video models: the folder for the predicted frames (default: SEQUENCE/predicted); "
      "refused when it already holds predicted frames (pred_*.png) unless --overwrite");
  cmd->add_flag("--overwrite", o->overwrite,
                "Video models: replace the predicted frames (pred_*.png) already in the --out "
                "folder");
  add_inference_flags(*cmd, o->flags);
  cmd->add_flag("--json", o->json, "One JSON line per input");
  cmd->callback([o, &exit_code] { exit_code = run_predict(*o); });
}

}  // namespace epoch::cli
