// The video training loop (see clip_trainer.h): per epoch, the windows in their order, one
// Step each, then evaluation, the checkpoint and the epoch's record.
#include "clip_trainer.h"

#include <algorithm>
#include <deque>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>

#include "epoch/data/dataset.h"
#include "epoch/nn/layers.h"
#include "epoch/ops/backend.h"
#include "epoch/train/checkpoint.h"
#include "epoch/train/clips.h"
#include "epoch/train/metrics_log.h"
#include "epoch/train/progress.h"
#include "epoch/train/run_dir.h"
#include "epoch/train/step.h"
#include "epoch/train/stop.h"
#include "epoch/train/training_data.h"

namespace epoch::train {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

/// The losses whose mean the run reports: the last kRecentSteps steps' (loss, baseline).
constexpr std::size_t kRecentSteps = 50;
using Recent = std::deque<std::pair<double, double>>;

/// Everything one video run holds, built in this order.
struct ClipRun : RunPaths {
  ClipRun(const TrainConfig& config, Warnings& warnings_sink);

  const TrainConfig& c;
  Warnings& warnings;
  Device device;
  std::shared_ptr<models::Model> model;
  ClipData data;
  data::Preprocessing pre;
  std::int64_t frames = 0;  // per window
  bool stream = false;      // the model carries state: windows in order, one at a time
  std::vector<data::Clip> windows;
  std::int64_t batch = 1, steps_per_epoch = 0;
};

ClipRun::ClipRun(const TrainConfig& config, Warnings& warnings_sink)
    : RunPaths(config.run.out_dir),
      c(config),
      warnings(warnings_sink),
      device(training_device(c)),
      model(models::build_model(c.run.model)) {
  const models::ModelSpec& spec = model->spec();
  frames = window_frames(c, spec);
  if (frames < 2)
    EPOCH_THROW(ConfigError, "--tbptt ", frames,
                ": a window needs at least 2 frames (the first has nothing to predict it from)");
  stream = model->carries_state();
  if (stream && c.run.batch_size != 1)
    EPOCH_THROW(ConfigError, "--batch-size ", c.run.batch_size, ": model ", spec.name,
                " carries its state from one window of a sequence to the next, so it trains on "
                "one sequence at a time (--batch-size 1)");
  data = open_clip_data(c, &warnings);
  check_window_fits(data, frames,
                    c.run.tbptt > 0 ? "--tbptt " + std::to_string(frames)
                                    : "model " + spec.name + "'s windows of " +
                                          std::to_string(frames) + " frames");
  // One batch of windows is batch x frames frames.
  TrainConfig window_config = c;
  window_config.run.batch_size = c.run.batch_size * frames;
  models::ModelSpec frame_spec = spec;
  frame_spec.input.erase(frame_spec.input.begin());
  try {
    check_batch_fits(window_config, frame_spec);
  } catch (const ConfigError&) {
    if (c.run.tbptt <= 0) throw;
    // Its message names --batch-size with the frame count; the window length is the cause.
    EPOCH_THROW(ConfigError, "--tbptt ", frames, " with --batch-size ", c.run.batch_size,
                ": a batch of ", c.run.batch_size, " window(s) of ", frames, " frames of ",
                spec.name, " inputs needs more than half of this machine's memory: pass a "
                "smaller --tbptt");
  }
  pre = preprocessing_for(c, spec);
  windows = windows_of(data.train, frames);
  if (c.data.limit_train > 0 && static_cast<std::int64_t>(windows.size()) > c.data.limit_train)
    windows.resize(static_cast<std::size_t>(c.data.limit_train));
  batch = c.run.batch_size;
  const auto n = static_cast<std::int64_t>(windows.size());
  steps_per_epoch = (n + batch - 1) / batch;
}

std::map<std::string, std::string> clip_checkpoint_metadata(const ClipRun& run, std::int64_t epoch,
                                                            std::int64_t step,
                                                            const ClipEvalResult& eval,
                                                            const Recent& recent,
                                                            const ResumePoint& best) {
  json recent_json = json::array();
  for (const auto& [loss, base] : recent) recent_json.push_back({loss, base});
  return {{"model", run.c.run.model},
          {"preprocessing", run.pre.to_json()},
          {"class_names", "[]"},
          {"epoch", std::to_string(epoch)},
          {"step", std::to_string(step)},
          {"seed", std::to_string(run.c.run.seed)},
          {"determinism", determinism_name(run.c.execution.determinism)},
          {"config", run.c.to_json().dump()},
          {"test_loss", json(eval.loss).dump()},
          {"test_accuracy", "-1"},
          {"test_baseline_mse", json(eval.baseline_mse).dump()},
          {"window_frames", std::to_string(run.frames)},
          {"recent_losses", recent_json.dump()},
          {"best_test_accuracy", "-1"},
          {"best_test_loss", json(best.best_loss).dump()},
          {"world_size", "1"},
          {"epoch_version", EPOCH_VERSION}};
}

/// The last steps' (loss, baseline) a resumed run continues from.
Recent stored_recent(const SafetensorsFile& checkpoint) {
  Recent recent;
  const auto it = checkpoint.metadata.find("recent_losses");
  if (it == checkpoint.metadata.end()) return recent;
  try {
    for (const json& pair : json::parse(it->second))
      recent.emplace_back(pair.at(0).get<double>(), pair.at(1).get<double>());
  } catch (const json::exception& e) {
    EPOCH_THROW(IoError, checkpoint.source, ": invalid recent_losses: ", e.what());
  }
  while (recent.size() > kRecentSteps) recent.pop_front();
  return recent;
}

struct ClipEpochTotals {
  double loss_sum = 0.0, baseline_sum = 0.0;
  std::int64_t steps = 0, windows = 0;
  double seconds = 0.0, wait_seconds = 0.0;
  std::int64_t bad_files = 0;
  bool stopped = false;  // a stop was asked for (stop.h) and taken before the epoch's end
};

/// One epoch: the windows in this epoch's order, a Step on each batch of them.
ClipEpochTotals train_clip_epoch(ClipRun& run, Step& step, MetricsLog& metrics, Progress& progress,
                                 std::int64_t epoch, std::int64_t& global_step, Recent& recent) {
  const TrainConfig& c = run.c;
  const auto n = static_cast<std::int64_t>(run.windows.size());
  std::vector<std::int64_t> order = data::epoch_order(n, c.run.seed, epoch, !run.stream);
  const data::ClipReader reader(run.data.train, run.pre, run.frames);
  run.model->train(true);
  run.model->reset_state();
  if (!c.run.quiet) progress.start_epoch(epoch + 1, c.run.epochs, run.steps_per_epoch);
  const auto start = Clock::now();
  ClipEpochTotals t;
  double window_loss = 0.0, window_base = 0.0;
  std::int64_t window_n = 0;
  std::optional<data::Clip> previous;
  Tensor before;  // the last frame of the window before (carried state)
  const Tensor labels = Tensor::from_ints({run.batch}, std::vector<std::int32_t>(
                                                           static_cast<std::size_t>(run.batch), 0))
                            .to(run.device);
  for (std::int64_t s = 0; s < run.steps_per_epoch; ++s) {
    if (s > 0 && stop_requested()) {
      t.stopped = true;
      break;
    }
    std::vector<data::Clip> asked;
    for (std::int64_t i = s * run.batch; i < std::min(n, (s + 1) * run.batch); ++i)
      asked.push_back(run.windows[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])]);
    const auto read_start = Clock::now();
    const data::ClipBatch b = reader.read(asked, c.data.on_bad_image, &run.warnings);
    t.wait_seconds += since(read_start);
    t.bad_files += static_cast<std::int64_t>(b.bad_files.size());
    if (b.clips.empty()) {
      previous.reset();  // a window left out breaks the sequence: the next starts afresh
      continue;
    }
    const bool carried =
        run.stream && previous && continues(*previous, b.clips.front(), run.frames);
    if (run.stream && !carried) run.model->reset_state();
    const double base = previous_frame_mse(b.x, carried ? &before : nullptr);
    if (run.stream) {
      previous = b.clips.back();
      before = last_frames(b.x);
    }
    const Tensor x = b.x.to(run.device);
    const Tensor y = b.clips.size() == static_cast<std::size_t>(run.batch)
                         ? labels
                         : labels.narrow0(0, static_cast<std::int64_t>(b.clips.size()));
    const std::int64_t position = epoch * run.steps_per_epoch + s;
    const double loss = step.run(x, y, position, static_cast<std::uint64_t>(global_step)).item();
    ++global_step;
    if (!std::isfinite(loss))
      EPOCH_THROW(NumericalError, "loss became ", loss, " at epoch ", epoch + 1, " step ", s + 1,
                  " (lr ", step.optimizer().lr(), "); the last good checkpoint is ",
                  fs::exists(run.last_ckpt) ? run.last_ckpt.string() : std::string("(none yet)"));
    recent.emplace_back(loss, base);
    if (recent.size() > kRecentSteps) recent.pop_front();
    t.loss_sum += loss;
    t.baseline_sum += base;
    t.windows += static_cast<std::int64_t>(b.clips.size());
    t.steps += 1;
    window_loss += loss;
    window_base += base;
    ++window_n;
    if (!c.run.quiet)
      progress.update(s + 1, t.windows * run.frames, window_loss / static_cast<double>(window_n));
    if (c.run.log_every > 0 && global_step % c.run.log_every == 0) {
      metrics.write({{"kind", "step"},
                     {"epoch", epoch + 1},
                     {"step", global_step},
                     {"loss", window_loss / static_cast<double>(window_n)},
                     {"baseline_mse", window_base / static_cast<double>(window_n)},
                     {"lr", step.optimizer().lr()}});
      window_loss = window_base = 0.0;
      window_n = 0;
    }
  }
  if (t.steps == 0)
    EPOCH_THROW(IoError, run.data.train.root, ": every training window of epoch ", epoch + 1,
                " had a bad frame (see the warnings)");
  run.model->reset_state();
  t.seconds = since(start);
  return t;
}

json clip_epoch_record(const ClipRun& run, std::int64_t epoch, std::int64_t global_step,
                       const ClipEpochTotals& t, const ClipEvalResult& eval, double elapsed_s) {
  const auto steps = static_cast<double>(t.steps);
  return {{"kind", "epoch"},
          {"epoch", epoch + 1},
          {"step", global_step},
          {"train_loss", t.loss_sum / steps},
          {"train_baseline_mse", t.baseline_sum / steps},
          {"test_loss", eval.loss},
          {"test_baseline_mse", eval.baseline_mse},
          {"test_accuracy", nullptr},
          {"frames_per_s", static_cast<double>(t.windows * run.frames) / t.seconds},
          {"images_per_s", static_cast<double>(t.windows) / t.seconds},
          {"epoch_s", t.seconds},
          {"peak_rss_mib", peak_rss_mib()},
          {"data_wait_s", t.wait_seconds},
          {"elapsed_s", elapsed_s}};
}

std::string clip_epoch_line(const ClipRun& run, std::int64_t epoch, const ClipEpochTotals& t,
                            const ClipEvalResult& eval) {
  const auto steps = static_cast<double>(t.steps);
  char line[320];
  std::snprintf(line, sizeof line,
                "epoch %lld: train loss %.5f (previous frame %.5f) | %s loss %.5f (previous "
                "frame %.5f) | %.1f frames/s",
                static_cast<long long>(epoch + 1), t.loss_sum / steps, t.baseline_sum / steps,
                run.data.val_name.c_str(), eval.loss, eval.baseline_mse,
                static_cast<double>(t.windows * run.frames) / t.seconds);
  return line;
}

}  // namespace

TrainResult train_clips(const TrainConfig& c, const ResumePoint& resumed, std::FILE* progress_out,
                        Warnings& warnings, Clock::time_point wall_start) {
  ResumePoint best = resumed;
  ClipRun run(c, warnings);
  initialize_model(*run.model, c);
  run.model->to(run.device);
  Step step(*run.model, c.optimizer, planned_schedule(c, run.steps_per_epoch, run.batch),
            c.run.seed);
  Recent recent;
  if (c.run.resume) {
    load_model_state(resumed.checkpoint, *run.model);
    load_optimizer_state(resumed.checkpoint, step.optimizer());
    recent = stored_recent(resumed.checkpoint);
  }
  if (resumed.epoch >= c.run.epochs)
    EPOCH_THROW(ConfigError, run.dir.string(), " already completed ", resumed.epoch,
                " epochs; pass a larger --epochs to continue");
  std::error_code ec;
  fs::create_directories(run.ckpt_dir, ec);
  if (ec) EPOCH_THROW(IoError, run.ckpt_dir.string(), ": cannot create: ", ec.message());
  write_run_config(run.dir, c, *run.model, 1);
  if (c.run.resume) truncate_metrics_after(run.dir.string(), resumed.step);
  MetricsLog metrics((run.dir / "metrics.jsonl").string());
  Progress progress(progress_out, c.run.progress_interactive);
  progress.set_unit("frames");
  const std::int64_t eval_batch =
      c.run.eval_batch_size > 0 ? c.run.eval_batch_size : c.run.batch_size;

  TrainResult result;
  result.run_dir = run.dir.string();
  result.eval_name = run.data.val_name;
  result.frames_per_sample = run.frames;
  result.world_size = 1;
  result.global_batch_size = run.batch;
  if (run.data.train_baseline_mse) result.dataset_baseline_mse = *run.data.train_baseline_mse;
  std::int64_t global_step = resumed.step, windows_this_run = 0;
  double train_seconds = 0.0, wait_seconds = 0.0;
  std::int64_t bad_train_files = 0, bad_eval_files = 0;
  const std::int64_t end_epoch =
      c.run.stop_after_epochs > 0 ? std::min(c.run.epochs, resumed.epoch + c.run.stop_after_epochs)
                                  : c.run.epochs;
  ClipEvalResult eval;
  std::int64_t completed = resumed.epoch;
  for (std::int64_t epoch = resumed.epoch; epoch < end_epoch; ++epoch) {
    if (stop_requested() && epoch > resumed.epoch) {  // between epochs: nothing lost
      result.stopped = result.stop_saved = true;
      break;
    }
    const ClipEpochTotals t =
        train_clip_epoch(run, step, metrics, progress, epoch, global_step, recent);
    if (t.stopped) {
      // The windows' carried state is not checkpointed: the epoch's steps are dropped, and a
      // resumed run starts the epoch again from its last checkpoint.
      result.stopped = true;
      result.stopped_in_epoch = epoch + 1;
      result.stopped_epoch_step = t.steps;
      if (fs::exists(run.last_ckpt)) result.checkpoint = run.last_ckpt.string();
      if (!c.run.quiet)
        progress.end_epoch("epoch " + std::to_string(epoch + 1) + ": stopped after step " +
                           std::to_string(t.steps) + " of " +
                           std::to_string(run.steps_per_epoch) + "; this epoch is not saved");
      break;
    }
    train_seconds += t.seconds;
    wait_seconds += t.wait_seconds;
    windows_this_run += t.windows;
    bad_train_files += t.bad_files;
    result.train_loss = t.loss_sum / static_cast<double>(t.steps);
    if (const std::string bad = first_non_finite_tensor(*run.model, &step.optimizer());
        !bad.empty())
      EPOCH_THROW(NumericalError, "training diverged in epoch ", epoch + 1, ": tensor '", bad,
                  "' holds NaN or infinite values (lr ", step.optimizer().lr(),
                  "); nothing of this epoch was saved");
    eval = evaluate_clips(*run.model, run.data.val, run.pre, run.frames, eval_batch,
                          c.data.on_bad_image, &warnings, c.data.limit_test);
    bad_eval_files += eval.bad_files;
    if (eval.windows == 0)
      EPOCH_THROW(IoError, run.data.val.root, ": every ", run.data.val_name,
                  " window had a bad frame (see the warnings), so there is nothing to report");
    EvalResult as_eval;
    as_eval.loss = eval.loss;
    const bool best_now = better_than(as_eval, best.best_accuracy, best.best_loss);
    if (best_now) best.best_loss = eval.loss;
    write_epoch_checkpoints(
        run, *run.model, step.optimizer(),
        clip_checkpoint_metadata(run, epoch + 1, global_step, eval, recent, best), epoch + 1,
        best_now, c.run.keep_checkpoints);
    result.checkpoint = run.last_ckpt.string();
    metrics.write(clip_epoch_record(run, epoch, global_step, t, eval, since(wall_start)));
    if (!c.run.quiet) progress.end_epoch(clip_epoch_line(run, epoch, t, eval));
    completed = epoch + 1;
  }
  warnings.summarize();
  result.epochs = completed;
  result.steps = global_step;
  result.evaluated = eval.windows > 0;
  result.test_loss = eval.loss;
  result.test_accuracy = -1.0;
  result.test_baseline_mse = eval.baseline_mse;
  result.images_per_s =
      train_seconds > 0 ? static_cast<double>(windows_this_run) / train_seconds : 0.0;
  result.frames_per_s = result.images_per_s * static_cast<double>(run.frames);
  result.data_wait_fraction = train_seconds > 0 ? wait_seconds / train_seconds : 0.0;
  result.skipped_images = bad_train_files + bad_eval_files;
  result.recent_steps = static_cast<std::int64_t>(recent.size());
  for (const auto& [loss, base] : recent) {
    result.recent_loss += loss;
    result.recent_baseline_mse += base;
  }
  if (!recent.empty()) {
    result.recent_loss /= static_cast<double>(recent.size());
    result.recent_baseline_mse /= static_cast<double>(recent.size());
  }
  result.wall_s = since(wall_start);
  return result;
}

}  // namespace epoch::train
