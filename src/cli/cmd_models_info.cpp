// `epoch models` (the zoo with parameter counts and FLOPs; --show: one model's layer table) and
// `epoch info` (build flags, CPU, threads, GPUs).
#include <omp.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/omp_wait.h"
#include "epoch/models/description.h"
#include "epoch/models/keras_writer.h"
#include "epoch/models/summary.h"
#include "epoch/models/zoo.h"
#include "epoch/nn/layers.h"
#include "epoch/ops/backend.h"
#include "epoch/tensor/cpu_isa.h"
#include "epoch/tensor/file_io.h"
#include "epoch/tensor/storage.h"
#include "epoch/train/recipe.h"
#include "epoch/train/train_config.h"

namespace epoch::cli {
namespace {

int run_models(bool json) {
  nlohmann::json all = nlohmann::json::array();
  if (!json)
    std::printf("%-14s %-14s %12s %14s  %-16s %s\n", "name", "input", "parameters", "MFLOP/sample",
                "task", "description");
  for (const models::ModelSpec& spec : models::model_specs()) {
    const std::shared_ptr<models::Model> m = models::build_model(spec.name);
    const std::int64_t params = m->parameter_count();
    const std::int64_t flops = m->flops(spec.input);
    std::string input;  // 3x64x64, or frames x channels x height x width for video
    for (std::int64_t d : spec.input) {
      if (!input.empty()) input += 'x';
      input += std::to_string(d);
    }
    if (json) {
      all.push_back({{"name", spec.name},
                     {"input", spec.input},
                     {"parameters", params},
                     {"forward_flops_per_sample", flops},
                     {"task", models::task_name(spec.task)},
                     {"outputs", spec.outputs},
                     {"description", spec.summary}});
    } else {
      std::printf("%-14s %-14s %12lld %14.2f  %-16s %s\n", spec.name.c_str(), input.c_str(),
                  static_cast<long long>(params), static_cast<double>(flops) / 1e6,
                  models::task_name(spec.task), spec.summary.c_str());
    }
  }
  if (json) std::printf("%s\n", all.dump().c_str());
  return 0;
}

/// `epoch models --show NAME`: the model's layer table (models/summary.h).
int run_show(const std::string& name, bool json) {
  const std::shared_ptr<models::Model> m = models::build_model(name);
  const models::ModelSummary s = models::summarize(*m);
  if (!json) {
    std::printf("%s", models::format_summary(s).c_str());
    return 0;
  }
  // Shapes as Keras's model.output_shape gives them: the batch as null, then the sizes in the
  // source's order (channels-last for a Keras file).
  const auto batch = [&](const Shape& shape) {
    nlohmann::json out = nlohmann::json::array({nullptr});
    for (std::int64_t d : models::source_shape(shape, s.channels_last)) out.push_back(d);
    return out;
  };
  nlohmann::json layers = nlohmann::json::array();
  for (const models::LayerSummary& l : s.layers)
    layers.push_back({{"name", l.name},
                      {"type", l.type},
                      {"output_shape", batch(l.output)},
                      {"parameters", l.parameters + l.non_trainable},
                      {"trainable_parameters", l.parameters},
                      {"non_trainable_parameters", l.non_trainable},
                      {"forward_flops_per_sample", l.flops}});
  nlohmann::json j{{"name", s.name},
                   {"input_shape", batch(s.input)},
                   {"output_shape", batch(s.output)},
                   {"layers", layers},
                   {"parameters", s.total()},
                   {"trainable_parameters", s.trainable},
                   {"non_trainable_parameters", s.non_trainable},
                   {"forward_flops_per_sample", s.flops}};
  if (!s.format.empty()) {
    j["format"] = s.format;
    j["sha256"] = s.sha256;
  }
  std::printf("%s\n", j.dump().c_str());
  return 0;
}

/// `epoch models --export NAME|FILE --format epoch|keras --out FILE`.
int run_export(const std::string& name, const std::string& format, const std::string& out) {
  if (out.empty()) EPOCH_THROW(ConfigError, "--export needs --out FILE");
  const models::ModelDescription d = models::describe_model(name);
  nlohmann::json j;
  if (format == "epoch") {
    j = models::description_to_json(d);
  } else if (format == "keras") {
    std::vector<std::string> warnings;
    j = models::write_keras_json(d, &warnings);
    for (const std::string& w : warnings) std::fprintf(stderr, "epoch: warning: %s\n", w.c_str());
  } else {
    EPOCH_THROW(ConfigError, "--format ", format, ": epoch or keras");
  }
  const std::string text = j.dump(1) + "\n";
  write_file_atomic(out, std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()),
                    false);
  std::printf("%s: %s as %s\n", out.c_str(), name.c_str(),
              format == "epoch" ? "epoch's description" : "Keras 3 JSON (model.to_json())");
  return 0;
}

int run_info(bool json) {
  __builtin_cpu_init();
  std::vector<std::string> features;
  if (__builtin_cpu_supports("avx2")) features.emplace_back("avx2");
  if (__builtin_cpu_supports("fma")) features.emplace_back("fma");
  if (__builtin_cpu_supports("avx512f")) features.emplace_back("avx512f");
  if (__builtin_cpu_supports("avx512bw")) features.emplace_back("avx512bw");
  if (__builtin_cpu_supports("avx512vnni")) features.emplace_back("avx512vnni");
  nlohmann::json gpus = nlohmann::json::array();
  for (const CudaDeviceInfo& d : memory::cuda_devices())
    gpus.push_back(
        {{"name", d.name},
         {"memory_gib", static_cast<double>(d.total_bytes) / (1u << 30)},
         {"compute_capability", std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor)},
         {"multiprocessors", d.multiprocessors},
         {"driver", d.driver},
         {"runtime", d.runtime}});
  const WaitPolicy wait = wait_policy_in_force();
  nlohmann::json j{
      {"version", EPOCH_VERSION},
      {"build",
       {{"cuda", EPOCH_WITH_CUDA == 1},
        {"onednn", ops::onednn_available()},
        {"compiler", __VERSION__}}},
      {"cpu",
       {{"model", epoch::cpu_model_name()},
        {"features", features},
        {"isa", cpu_isa_name(active_cpu_isa())},
        {"isa_detected", cpu_isa_name(detected_cpu_isa())},
        {"logical_cores", omp_get_num_procs()}}},
      {"threads", ops::num_threads()},
      {"omp_wait", {{"setting", wait.setting}, {"source", wait.source}, {"note", wait.note}}},
      {"cpu_kernels", ops::use_onednn() ? "onednn" : "reference"},
      {"onednn_isa", ops::onednn_cpu_isa()},
      {"winograd",  // whose kernels
       ops::onednn_has_winograd() ? "onednn"
       : static_cast<int>(active_cpu_isa()) >= static_cast<int>(CpuIsa::x86_64_v3) ? "epoch"
                                                                                  : "none"},
      {"gpus", gpus},
      {"cudnn", ops::cudnn_version()}};
  if (json) {
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::printf("epoch %s\n", EPOCH_VERSION);
  std::printf("build:    CUDA %s, oneDNN %s, compiler gcc %s\n", EPOCH_WITH_CUDA ? "yes" : "no",
              ops::onednn_available() ? "yes" : "no", __VERSION__);
  std::string feats;
  for (const auto& f : features) feats += " " + f;
  std::printf("cpu:      %s (%d logical cores;%s)\n", epoch::cpu_model_name().c_str(),
              omp_get_num_procs(), feats.c_str());
  std::printf("isa:      %s (%s) for epoch's own kernels%s\n", cpu_isa_name(active_cpu_isa()),
              cpu_isa_features(active_cpu_isa()),
              active_cpu_isa() == detected_cpu_isa()
                  ? ", this CPU's level (EPOCH_CPU_ISA lowers it)"
                  : (std::string(", lowered by EPOCH_CPU_ISA from this CPU's ") +
                     cpu_isa_name(detected_cpu_isa()))
                        .c_str());
  std::printf("threads:  %d (set with --threads or OMP_NUM_THREADS)\n", ops::num_threads());
  const char* whose = wait.source == "epoch"
                          ? "epoch's default; OMP_WAIT_POLICY or GOMP_SPINCOUNT overrides it"
                      : wait.source == "user" ? "set by the user"
                                              : "libgomp's default";
  std::printf("omp wait: %s (%s%s%s)\n", wait.setting.c_str(), whose, wait.note.empty() ? "" : "; ",
              wait.note.c_str());
  if (ops::use_onednn())
    std::printf("kernels:  oneDNN fast path, ISA %s, %s\n", ops::onednn_cpu_isa().c_str(),
                ops::onednn_has_winograd() ? "Winograd convolutions by oneDNN (--conv-algo auto)"
                : static_cast<int>(active_cpu_isa()) >= static_cast<int>(CpuIsa::x86_64_v3)
                    ? "Winograd convolutions by epoch's AVX2 kernels (--conv-algo auto)"
                    : "no Winograd convolutions (they need AVX2)");
  else
    std::printf("kernels:  reference\n");
  if (gpus.empty())
    std::printf("gpus:     none visible%s\n", EPOCH_WITH_CUDA ? "" : " (built without CUDA)");
  for (const auto& g : gpus)
    std::printf("gpu:      %s, %.0f GiB, compute capability %s, %d SMs\n",
                g["name"].get<std::string>().c_str(), g["memory_gib"].get<double>(),
                g["compute_capability"].get<std::string>().c_str(),
                g["multiprocessors"].get<int>());
  return 0;
}

}  // namespace

void add_models_command(CLI::App& app, int& exit_code) {
  auto json = std::make_shared<bool>(false);
  auto show = std::make_shared<std::string>();
  auto files = std::make_shared<train::TrainConfig>();  // --input-shape, --solver
  CLI::App* cmd = app.add_subcommand("models", "List the model zoo, or show one model's layers");
  cmd->add_flag("--json", *json, "Print JSON");
  cmd->add_option("--show", *show,
                  "A model's layer table, as Keras's model.summary(): each layer's name, type, "
                  "output shape and parameters, the totals and FLOPs per sample (a zoo name or "
                  "a model file: Keras .json or .keras, Caffe .prototxt, epoch's .json)");
  cmd->add_option("--input-shape", files->run.input_shape,
                  "A Caffe net's input as C,H,W, where its Data layer gives no shape");
  cmd->add_option("--solver", files->run.solver, "A Caffe solver.prototxt (its recipe)");
  auto exported = std::make_shared<std::string>();
  auto format = std::make_shared<std::string>("epoch");
  auto out = std::make_shared<std::string>();
  cmd->add_option("--export", *exported,
                  "Write a model (a zoo name or a model file) as a description file (--out)");
  cmd->add_option("--format", *format, "--export's format: epoch (default) or keras")
      ->check(CLI::IsMember({"epoch", "keras"}));
  cmd->add_option("--out", *out, "--export's file");
  cmd->callback([json, show, files, exported, format, out, &exit_code] {
    train::use_model_file_options(*files);
    if (!exported->empty())
      exit_code = run_export(*exported, *format, *out);
    else
      exit_code = show->empty() ? run_models(*json) : run_show(*show, *json);
  });
}

void add_info_command(CLI::App& app, int& exit_code) {
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("info", "Show build flags, CPU, threads and GPUs");
  cmd->add_flag("--json", *json, "Print JSON");
  cmd->callback([json, &exit_code] { exit_code = run_info(*json); });
}

}  // namespace epoch::cli
