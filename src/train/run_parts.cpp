// The pieces a run is built from (see run_parts.h).
#include "run_parts.h"

#include <sys/resource.h>
#include <unistd.h>

#include <ctime>
#include <nlohmann/json.hpp>

#include "epoch/dist/process_group.h"
#include "epoch/models/model_file.h"
#include "epoch/models/summary.h"
#include "epoch/nn/layers.h"
#include "epoch/ops/backend.h"
#include "epoch/tensor/file_io.h"
#include "epoch/tensor/text.h"
#include "epoch/train/checkpoint.h"
#include "epoch/train/config_fields.h"
#include "epoch/train/machine.h"
#include "epoch/train/run_dir.h"

namespace epoch::train {
namespace fs = std::filesystem;
using json = nlohmann::json;

RunPaths::RunPaths(const fs::path& run_dir)
    : dir(run_dir),
      ckpt_dir(dir / "checkpoints"),
      last_ckpt(ckpt_dir / "last.safetensors"),
      best_ckpt(ckpt_dir / "best.safetensors") {}

void write_epoch_checkpoints(const RunPaths& paths, const nn::Module& model,
                             const optim::Optimizer& optimizer,
                             std::map<std::string, std::string> metadata, std::int64_t epoch,
                             bool best, std::int64_t keep) {
  // Each file is recorded as the run's before it is written, so a kill in between leaves
  // nothing of the run's unrecorded.
  const std::string dir = paths.dir.string(),
                    epoch_name = "checkpoints/" + epoch_checkpoint_name(epoch);
  std::vector<std::string> names{"checkpoints/last.safetensors", epoch_name};
  if (best) names.push_back("checkpoints/best.safetensors");
  record_files(dir, names);
  save_checkpoint(paths.last_ckpt.string(), model, &optimizer, std::move(metadata));
  publish_copy(paths.last_ckpt.string(), (paths.dir / epoch_name).string());
  if (best) publish_copy(paths.last_ckpt.string(), paths.best_ckpt.string());
  prune_epoch_checkpoints(dir, keep);
}

void write_stop_checkpoint(const RunPaths& paths, const nn::Module& model,
                           const optim::Optimizer& optimizer,
                           std::map<std::string, std::string> metadata) {
  record_files(paths.dir.string(), {"checkpoints/last.safetensors"});
  save_checkpoint(paths.last_ckpt.string(), model, &optimizer, std::move(metadata));
}

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

std::string default_run_dir(const std::string& model) {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  return "runs/" + model + "-" + stamp;
}

void check_common_config(const TrainConfig& c) {
  // Every stored setting goes into config.json and checkpoints, which hold UTF-8 alone.
  for (const ConfigField& f : config_fields()) {
    const json value = field_value(f, c);
    const auto check = [&f](const json& v) {
      if (v.is_string() && !valid_utf8(v.get_ref<const std::string&>()))
        EPOCH_THROW(ConfigError, f.flag.empty() ? f.key : f.flag, " ",
                    printable(v.get_ref<const std::string&>()),
                    ": not valid UTF-8 (settings are stored in config.json); rename it");
    };
    check(value);
    if (value.is_array())
      for (const json& v : value) check(v);
  }
  if (c.run.epochs < 1 || c.run.epochs > kMaxEpochs)
    EPOCH_THROW(ConfigError, "--epochs must be from 1 to ", kMaxEpochs, ", got ", c.run.epochs);
  if (c.run.batch_size < 1)
    EPOCH_THROW(ConfigError, "--batch-size must be at least 1, got ", c.run.batch_size);
  if (c.run.eval_batch_size < 0) EPOCH_THROW(ConfigError, "eval batch size must be >= 0 (0: auto)");
  if (!(c.optimizer.lr > 0.0f) || !std::isfinite(c.optimizer.lr))
    EPOCH_THROW(ConfigError, "--lr must be a positive number, got ", c.optimizer.lr);
  if (c.execution.threads < 0) EPOCH_THROW(ConfigError, "--threads must be >= 0, got ", c.execution.threads);
  if (c.schedule.warmup_steps < -1) EPOCH_THROW(ConfigError, "--warmup-steps must be >= 0");
}

bool better_than(const EvalResult& a, double best_accuracy, double best_loss) {
  if (a.accuracy >= 0) return a.accuracy > best_accuracy;
  return a.loss < best_loss;
}

void check_batch_fits(const TrainConfig& c, const models::ModelSpec& spec) {
  double bytes = static_cast<double>(c.run.batch_size) * sizeof(float);
  for (const std::int64_t d : spec.input) bytes *= static_cast<double>(d);
  const double memory =
      static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE));
  if (memory > 0 && bytes > 0.5 * memory)
    EPOCH_THROW(ConfigError, "--batch-size ", c.run.batch_size, ": one batch of ", spec.name,
                " inputs needs ", std::llround(bytes / (1 << 30)),
                " GiB, more than half of this machine's ", std::llround(memory / (1 << 30)),
                " GiB");
}

ResumePoint resume_point(const TrainConfig& c, const std::filesystem::path& run_dir) {
  ResumePoint r;
  check_run_dir_allowed(run_dir.string());
  if (!c.run.resume) {
    switch (run_state(run_dir.string())) {
      case RunState::empty:
        return r;
      case RunState::foreign:
        EPOCH_THROW(ConfigError, "--out ", run_dir.string(),
                    " holds files that are not an epoch run (", describe_contents(run_dir.string()),
                    "): choose a new or empty folder");
      case RunState::started:
        EPOCH_THROW(ConfigError, run_dir.string(),
                    " holds a run that stopped before its first checkpoint: remove the folder "
                    "or choose another --out");
      case RunState::checkpointed:
        EPOCH_THROW(ConfigError, run_dir.string(),
                    " already holds a run: pass --resume to continue it or choose another --out");
    }
  }
  if (run_state(run_dir.string()) == RunState::foreign)
    EPOCH_THROW(ConfigError, "--resume ", run_dir.string(), ": not an epoch run (it holds ",
                describe_contents(run_dir.string()), ")");
  adopt_unrecorded_run(run_dir.string());
  r.checkpoint = read_last_checkpoint(run_dir.string());
  if (const std::string conflicts = resume_conflicts(stored_config(r.checkpoint), c);
      !conflicts.empty())
    EPOCH_THROW(
        ConfigError, "resuming ", run_dir.string(),
        " continues the run as it was started; these settings would change it: ", conflicts);
  r.epoch = metadata_int(r.checkpoint, "epoch", 0, std::int64_t{1} << 40);
  r.step = metadata_int(r.checkpoint, "step", 0, std::int64_t{1} << 62);
  if (r.checkpoint.metadata.count("best_test_loss") > 0) {  // older checkpoints lack them
    r.best_accuracy = metadata_number(r.checkpoint, "best_test_accuracy");
    r.best_loss = metadata_number(r.checkpoint, "best_test_loss");
  }
  if (r.checkpoint.metadata.count("epoch_step") > 0) {  // a run stopped inside an epoch
    r.epoch_step = metadata_int(r.checkpoint, "epoch_step", 1, std::int64_t{1} << 40);
    r.epoch_loss_sum = metadata_number(r.checkpoint, "epoch_loss_sum");
    r.epoch_images = metadata_int(r.checkpoint, "epoch_images", 0, std::int64_t{1} << 62);
  }
  return r;
}

Device training_device(const TrainConfig& c) {
  Device device = parse_device(c.execution.device);
  // Plain "cuda" under an MPI launcher: each rank of a host takes the next GPU (as torchrun's
  // LOCAL_RANK); "cuda:N" is taken as given.
  const dist::ProcessGroup& group = dist::ProcessGroup::world();
  if (c.execution.device == "cuda" && group.distributed() && memory::cuda_device_count() > 0)
    device = Device::cuda(group.local_rank() % memory::cuda_device_count());
  if (device.is_cuda() && device.index >= memory::cuda_device_count())
    EPOCH_THROW(ConfigError, "--device ", c.execution.device, ": no such CUDA device (",
                memory::cuda_device_count(), " visible",
                EPOCH_WITH_CUDA ? "" : "; built without CUDA", ")");
  return device;
}

std::unique_ptr<optim::LrSchedule> planned_schedule(const TrainConfig& c,
                                                    std::int64_t steps_per_epoch,
                                                    std::int64_t global_batch) {
  optim::ScheduleConfig sched = c.schedule;
  // The linear scaling rule scales by the global batch (every rank's samples of a step).
  sched.base_lr =
      optim::scaled_lr(c.optimizer.lr, c.schedule.lr_scaling, global_batch, c.schedule.base_batch);
  // The step arithmetic (positions, the schedule's fraction done) stays exact in a double.
  if (steps_per_epoch < 1 || c.run.epochs > kMaxPlannedSteps / steps_per_epoch)
    EPOCH_THROW(ConfigError, "--epochs ", c.run.epochs, " of ", steps_per_epoch,
                " steps each is more than the ", kMaxPlannedSteps, " steps a run can plan");
  sched.total_steps = c.run.max_steps > 0 ? c.run.max_steps : steps_per_epoch * c.run.epochs;
  if (c.schedule.warmup_epochs > 0.0)
    sched.warmup_steps =
        std::llround(c.schedule.warmup_epochs * static_cast<double>(steps_per_epoch));
  else
    sched.warmup_steps = c.schedule.warmup_steps >= 0
                             ? c.schedule.warmup_steps
                             : std::min<std::int64_t>(300, sched.total_steps / 10);
  return optim::make_schedule(sched);
}

namespace {
/// Where the run ran, for `epoch report` and anyone comparing runs later.
json run_environment() {
  const MachineRecord m = this_machine();
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char started[32];
  std::strftime(started, sizeof started, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return {{"started_utc", started},
          {"host", m.host},
          {"cpu", m.cpu},
          {"logical_cores", m.logical_cores},
          {"cpu_isa", m.cpu_isa},
          {"cpu_kernels", ops::cpu_kernels_name(ops::cpu_kernels())},
          {"onednn_isa", m.onednn_isa},
          {"cuda_build", EPOCH_WITH_CUDA == 1},
          {"gpu", m.gpus.empty() ? "" : m.gpus.front().name},
          {"cuda_driver", m.gpus.empty() ? "" : m.gpus.front().driver},
          {"cudnn", m.cudnn},
          {"compiler", m.compiler}};
}
}  // namespace

void write_run_config(const std::filesystem::path& run_dir, const TrainConfig& c,
                      const models::Model& model, int world) {
  json cfg = c.to_json();
  cfg["model_parameters"] = model.parameter_count();
  cfg["threads_used"] = ops::num_threads();
  cfg["world_size"] = world;  // processes (mpirun ranks); batch_size is per process
  cfg["global_batch_size"] = c.run.batch_size * world;
  cfg["epoch_version"] = EPOCH_VERSION;
  if (const models::RegisteredModel* m = models::registered_model(c.run.model))
    cfg["model_sha256"] = m->sha256;  // the model file's, as sha256sum prints it
  cfg["model_summary"] = models::format_summary(models::summarize(model));  // the layer table
  cfg["environment"] = run_environment();
  const std::string text = cfg.dump(2) + "\n";
  record_files(run_dir.string(), {"config.json"});
  write_file_atomic((run_dir / "config.json").string(),
                    std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()),
                    true);
}

void initialize_model(models::Model& model, const TrainConfig& c) {
  nn::initialize(model, c.run.seed);
  if (c.execution.perturb == Perturb::ulp) nn::jitter_ulp(model, c.execution.perturb_seed);
}

}  // namespace epoch::train
