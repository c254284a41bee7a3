// The study runner (see study.h).
#include "epoch/study/study.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "epoch/dist/process_group.h"
#include "epoch/models/description.h"
#include "epoch/models/model_file.h"
#include "epoch/models/zoo.h"
#include "epoch/tensor/error.h"
#include "epoch/tensor/file_io.h"
#include "epoch/tensor/sha256.h"
#include "epoch/tensor/storage.h"
#include "epoch/train/clips.h"
#include "epoch/train/config_fields.h"
#include "epoch/train/recipe.h"
#include "epoch/train/run_dir.h"
#include "epoch/train/trainer.h"
#include "epoch/train/training_data.h"
#include "records.h"

namespace epoch::study {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::equivalent:
      return "equivalent";
    case Verdict::different:
      return "different";
    case Verdict::inconclusive:
      return "inconclusive";
  }
  return "?";
}

json summary_json(const Summary& s) {
  return {{"n", s.n},   {"mean", s.mean},     {"sd", s.sd}, {"min", s.min},
          {"q1", s.q1}, {"median", s.median}, {"q3", s.q3}, {"max", s.max}};
}

/// The run's settings under a configuration: its execution settings, the repeat's seed (and
/// a perturbation's own stream from it), and its learning rate.
train::TrainConfig configured(train::TrainConfig c, const StudyConfigSpec& spec,
                              std::uint64_t seed) {
  c.run.seed = seed;
  c.execution = spec.execution;
  if (spec.execution.perturb != train::Perturb::none)
    c.execution.perturb_seed = seed ^ 0x9e3779b97f4a7c15ULL;  // its own stream, per repeat
  if (spec.lr > 0.0) c.optimizer.lr = static_cast<float>(spec.lr);
  return c;
}

/// The shortest decimal that reads back as `v`.
std::string shortest(float v) {
  char text[32];
  const auto [end, ec] = std::to_chars(text, text + sizeof text, v, std::chars_format::general);
  return ec == std::errc() ? std::string(text, end) : std::to_string(v);
}

/// "lr=X" as a learning rate the optimizer can take: written out in full as a number, finite,
/// above 0, and neither 0 nor infinite as the float the optimizer holds (what `epoch train
/// --lr` accepts). ConfigError naming the configuration otherwise.
double parse_lr(const std::string& item, const std::string& text) {
  const std::string flag = "--configs " + item + ": ";
  const std::size_t first = !text.empty() && text[0] == '-' ? 1 : 0;
  const bool number_like =
      text.size() > first &&
      (std::isdigit(static_cast<unsigned char>(text[first])) != 0 || text[first] == '.') &&
      text.find_first_not_of("0123456789.eE+-") == std::string::npos;
  // strtod, not stod: a value beyond a double reads as 0 or HUGE_VAL, named below.
  char* end = nullptr;
  const double lr = number_like ? std::strtod(text.c_str(), &end) : 0.0;
  if (!number_like || end != text.c_str() + text.size())
    EPOCH_THROW(ConfigError, flag, "'", text,
                "' is not a number (+lr=X takes a learning rate such as 0.001)");
  const float as_float = static_cast<float>(lr);
  if (!(lr > 0.0)) EPOCH_THROW(ConfigError, flag, "the learning rate ", text, " is not above 0");
  if (!std::isfinite(as_float))
    EPOCH_THROW(ConfigError, flag, "the learning rate ", text,
                " is infinite as the optimizer's float (at most ",
                shortest(std::numeric_limits<float>::max()),
                "; `epoch train --lr` takes a positive finite float)");
  if (!(as_float > 0.0f))
    EPOCH_THROW(ConfigError, flag, "the learning rate ", text,
                " is 0 as the optimizer's float (the smallest above 0 is ",
                shortest(std::numeric_limits<float>::denorm_min()),
                "; `epoch train --lr` takes a positive finite float)");
  return lr;
}

/// The settings a configuration may give as +key=value: the execution settings with words
/// (determinism, perturb, conv-algo, cudnn), in the table's order.
std::vector<const train::ConfigField*> variant_fields() {
  std::vector<const train::ConfigField*> out;
  for (const train::ConfigField& f : train::config_fields())
    if (f.execution && !f.choices.empty()) out.push_back(&f);
  return out;
}

/// A field's name in a configuration: its flag without the dashes.
std::string variant_key(const train::ConfigField& f) { return f.flag.substr(2); }

std::string variant_word(const train::ConfigField& f, const train::ExecutionConfig& e) {
  train::TrainConfig c;
  c.execution = e;
  return std::get<train::ChoiceRef>(f.ref(c)).get();
}

/// The spellings of earlier versions, as the settings they meant.
std::string modern_variant(const std::string& variant) {
  if (variant == "reference") return "determinism=reference";
  if (variant == "perturb") return "perturb=ulp";
  if (variant == "perturb-order") return "perturb=order";
  return variant;
}

/// Applies one "+variant" of a configuration's name to it; ConfigError for one it does not
/// allow. `given` collects the settings given so far (each may be given once).
void apply_variant(StudyConfigSpec& s, const std::string& given_variant,
                   std::vector<std::string>& given) {
  const std::string flag = "--configs " + s.name + ": ";
  const bool cpu = s.execution.device == "cpu";
  const std::string variant = modern_variant(given_variant);
  const std::size_t eq = variant.find('=');
  const std::string key = variant.substr(0, eq);
  std::vector<std::string> keys;
  const train::ConfigField* field = nullptr;
  for (const train::ConfigField* f : variant_fields()) {
    keys.push_back(variant_key(*f));
    if (key == variant_key(*f) || key == f->key) field = f;
  }
  keys.push_back("lr");
  if (eq == std::string::npos || (field == nullptr && key != "lr"))
    EPOCH_THROW(ConfigError, flag, "unknown setting '+", given_variant, "' (+key=value with key ",
                words_listed(keys),
                "; the older +reference, +perturb and +perturb-order are still read)");
  const std::string name = field != nullptr ? variant_key(*field) : key;
  if (std::find(given.begin(), given.end(), name) != given.end())
    EPOCH_THROW(ConfigError, flag, "sets ", name, " twice");
  given.push_back(name);
  if (field == nullptr) {
    s.lr = parse_lr(s.name, variant.substr(eq + 1));
    return;
  }
  train::TrainConfig c;
  c.execution = s.execution;
  try {
    train::set_choice(*field, std::get<train::ChoiceRef>(field->ref(c)), variant.substr(eq + 1));
  } catch (const ConfigError& e) {
    EPOCH_THROW(ConfigError, flag, e.what());
  }
  const train::ExecutionConfig& e = c.execution;
  if (cpu && name == "cudnn") EPOCH_THROW(ConfigError, flag, "cudnn is a CUDA setting (cpu:N has none)");
  if (!cpu && (e.determinism == train::Determinism::strict ||
               e.determinism == train::Determinism::reference ||
               e.perturb != train::Perturb::none ||
               e.conv_algorithm != ops::ConvAlgorithm::automatic))
    EPOCH_THROW(ConfigError, flag, "+", given_variant,
                " sets the CPU's kernels; on CUDA a configuration sets cudnn, lr and "
                "determinism fast or reproducible");
  s.execution = e;
}

/// One configuration of --configs.
StudyConfigSpec parse_one(const std::string& item) {
  StudyConfigSpec s;
  s.name = item;
  const std::size_t plus = item.find('+');
  const std::string base = item.substr(0, plus);
  std::vector<std::string> given;
  if (base == "cuda" || base == "cuda-nocudnn") {
    s.execution.device = "cuda";
    s.execution.threads = 1;
    s.execution.cudnn = base == "cuda";
    if (base == "cuda-nocudnn") given.push_back("cudnn");
  } else {
    // cpu:N with N in digits only (no sign, no space): 1 to 256, leading zeros allowed.
    const std::string digits = base.rfind("cpu:", 0) == 0 ? base.substr(4) : "";
    int threads = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), threads);
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos ||
        ec != std::errc() || threads < 1 || threads > 256)
      EPOCH_THROW(ConfigError, "--configs ", item,
                  ": not cpu:N (N from 1 to 256 threads) or cuda, each followed by any "
                  "+key=value (+determinism=reference, +perturb=ulp, +lr=0.001, ...)");
    s.execution.threads = threads;
  }
  for (std::size_t at = plus; at != std::string::npos;) {
    const std::size_t next = item.find('+', at + 1);
    apply_variant(s, item.substr(at + 1, next == std::string::npos ? next : next - at - 1), given);
    at = next;
  }
  return s;
}

}  // namespace

std::string canonical_config(const StudyConfigSpec& spec, float protocol_lr) {
  const train::ExecutionConfig& e = spec.execution;
  std::string name = e.device == "cuda" ? "cuda" : "cpu:" + std::to_string(e.threads);
  const train::ExecutionConfig defaults;
  for (const train::ConfigField* f : variant_fields()) {
    const std::string word = variant_word(*f, e);
    if (word != variant_word(*f, defaults)) name += "+" + variant_key(*f) + "=" + word;
  }
  const float lr = static_cast<float>(spec.lr);
  if (spec.lr > 0.0 && !(protocol_lr > 0.0f && lr == protocol_lr)) name += "+lr=" + shortest(lr);
  return name;
}

std::vector<StudyConfigSpec> parse_study_configs(const std::string& list, float protocol_lr) {
  std::vector<StudyConfigSpec> out;
  std::map<std::string, std::string> seen;  // canonical form -> the spelling that gave it
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = std::min(list.find(',', start), list.size());
    const std::string item = list.substr(start, comma - start);
    start = comma + 1;
    if (item.empty()) EPOCH_THROW(ConfigError, "--configs '", list, "': an empty entry");
    const StudyConfigSpec s = parse_one(item);
    const std::string canonical = canonical_config(s, protocol_lr);
    if (const auto it = seen.find(canonical); it != seen.end()) {
      if (it->second == item) EPOCH_THROW(ConfigError, "--configs ", item, ": given twice");
      // "+lr=" in either spelling but not in the value: the protocol's own rate was given.
      const bool own_rate = (item.find("+lr=") != std::string::npos ||
                             it->second.find("+lr=") != std::string::npos) &&
                            canonical.find("+lr=") == std::string::npos;
      EPOCH_THROW(ConfigError, "--configs ", item, ": the same configuration as ", it->second,
                  " (both are ", canonical,
                  own_rate ? ", the protocol's own learning rate being " + shortest(protocol_lr)
                           : std::string(),
                  "), so the study would compare it with itself");
    }
    seen.emplace(canonical, item);
    out.push_back(s);
  }
  return out;
}

std::string skip_reason(const StudyConfigSpec& spec) {
  if (spec.execution.device == "cuda") {
    if (!EPOCH_WITH_CUDA) return "built without CUDA";
    if (memory::cuda_device_count() == 0) return "no CUDA device on this machine";
    if (spec.execution.cudnn && !EPOCH_WITH_CUDNN) return "built without cuDNN";
  }
  return "";
}

train::TrainConfig protocol_config(const StudyConfig& study) {
  if (study.protocol != "autoencoder" && !study.model.empty())
    EPOCH_THROW(ConfigError, "--model ", study.model, ": --protocol ", study.protocol,
                " trains its own model; --model goes with --protocol autoencoder");
  train::TrainConfig files;
  files.run.input_shape = study.input_shape;
  train::use_model_file_options(files);  // before a model file is first read
  if (study.protocol == "autoencoder") {
    train::TrainConfig c = train::recipe_for(study.model.empty() ? "autoencoder" : study.model);
    c.run.input_shape = study.input_shape;
    c.data.source = study.data;  // empty: Debian's Fashion-MNIST
    c.run.epochs = study.epochs > 0 ? study.epochs : 1;
    c.run.batch_size = 128;
    c.run.log_every = 5;  // the curves of `epoch report` (logging leaves the bits alone)
    c.data.limit_train = study.limit_train;
    c.data.limit_test = study.limit_test;
    c.run.quiet = true;
    return c;
  }
  if (study.protocol == "prednet-study") {
    if (study.data.empty())
      EPOCH_THROW(ConfigError,
                  "--protocol prednet-study trains on a folder of sequences: pass --data DIR "
                  "(`epoch data synth --kind video --out DIR --sequences 10 --frames 500`)");
    train::TrainConfig c = train::recipe_for("prednet-study");
    c.data.source = study.data;
    c.run.epochs = study.epochs > 0 ? study.epochs : 1;
    c.run.batch_size = 1;
    c.run.log_every = 1;
    c.data.limit_train = study.limit_train > 0 ? study.limit_train : 250;
    c.data.limit_test = study.limit_test > 0 ? study.limit_test : 25;
    c.run.quiet = true;
    return c;
  }
  EPOCH_THROW(ConfigError, "--protocol ", study.protocol,
              ": expected autoencoder or prednet-study");
}

std::string ConfigComparison::bits() const {
  return identical_bits == seeds ? "identical" : identical_bits == 0 ? "different" : "partly";
}

std::string ConfigComparison::words() const {
  if (seeds > 0 && identical_bits == seeds)
    return "identical bits in all " + std::to_string(seeds) +
           " seeds (the same final weights, so the same result)";
  const std::string differ =
      identical_bits == 0 ? "different bits"
                          : "different bits in " + std::to_string(seeds - identical_bits) +
                                " of " + std::to_string(seeds) + " seeds";
  return differ + ", " + stats.words;
}

json protocol_fingerprint(const StudyConfig& study, const train::TrainConfig& base) {
  // Settings of how a run computes or where it writes: they leave the trained weights alone.
  static const char* const kHow[] = {"seed",       "workers",           "prefetch",  "cache_mib",
                                     "bucket_mib", "check_ranks_every", "log_every",
                                     "keep_checkpoints"};
  // Paths: the same data or model may lie elsewhere on another machine; their digests stand in.
  static const char* const kPaths[] = {"data", "val_data", "model", "solver"};
  json f = json::object();
  f["protocol"] = study.protocol;
  for (const train::ConfigField& field : train::config_fields()) {
    if (!field.stored || field.execution) continue;
    const std::string_view key = field.key;
    const auto listed = [&](const auto& list) {
      return std::find(std::begin(list), std::end(list), key) != std::end(list);
    };
    if (listed(kHow) || listed(kPaths)) continue;
    f[field.key] = train::field_value(field, base);
  }
  const std::string& model = base.run.model;
  const models::RegisteredModel* file = models::registered_model(model);
  std::string description;
  try {
    json d = models::description_to_json(models::describe_model(model));
    d.erase("name");  // the file as given: another path on another machine
    d.erase("summary");
    description = d.dump();
  } catch (const ConfigError&) {
    description = "built-in block " + model;  // PredNet: its code is its description
  }
  f["model"] = file != nullptr && !file->sha256.empty() ? "file" : model;
  f["model_sha256"] = sha256_hex(description);
  f["data_sha256"] = train::data_digest(base.data.source);
  if (!base.data.val_data.empty()) f["val_data_sha256"] = train::data_digest(base.data.val_data);
  return f;
}

json StudyResult::to_json() const {
  json j;
  j["protocol"] = protocol;
  j["fingerprint"] = fingerprint;
  j["figure"] = figure_name;
  j["margin"] = margin;
  j["alpha"] = alpha;
  j["machines"] = json::array();
  for (const auto& [label, m] : machines) {
    json entry = m.to_json();
    entry["label"] = label;
    j["machines"].push_back(entry);
  }
  if (!sources.empty()) j["sources"] = sources;
  j["configs"] = json::array();
  for (const StudyConfigSpec& s : ran) j["configs"].push_back(s.name);
  j["skipped"] = json::array();
  for (const auto& [name, why] : skipped)
    j["skipped"].push_back({{"config", name}, {"reason", why}});
  j["runs"] = json::array();
  for (const StudyRun& r : runs)
    j["runs"].push_back({{"config", r.config},
                         {"machine", r.machine},
                         {"repeat", r.repeat},
                         {"seed", r.seed},
                         {"figure", r.figure},
                         {"wall_s", r.wall_s},
                         {"weights_sha256", r.weights_sha256},
                         {"run_dir", r.run_dir}});
  j["comparisons"] = json::array();
  for (const ConfigComparison& cc : comparisons) {
    const Comparison& c = cc.stats;
    j["comparisons"].push_back(
        {{"a", cc.a},
         {"b", cc.b},
         {"seeds", cc.seeds},
         {"identical_bits", cc.identical_bits},
         {"bits", cc.bits()},
         {"a_summary", summary_json(c.a)},
         {"b_summary", summary_json(c.b)},
         {"difference", c.welch.difference},
         {"welch",
          {{"t", c.welch.t},
           {"df", c.welch.df},
           {"p", c.welch.p},
           {"ci", {c.welch.ci_low, c.welch.ci_high}}}},
         {"bootstrap_ci", {c.bootstrap.low, c.bootstrap.high}},
         {"tost", {{"margin", c.tost.margin}, {"p", c.tost.p}, {"equivalent", c.tost.equivalent}}},
         {"paired",
          {{"difference", c.paired_test.difference},
           {"t", c.paired_test.t},
           {"p", c.paired_test.p},
           {"ci", {c.paired_test.ci_low, c.paired_test.ci_high}},
           {"tost_p", c.paired_tost.p},
           {"equivalent", c.paired_tost.equivalent}}},
         {"mann_whitney",
          {{"u", c.mann_whitney.u}, {"p", c.mann_whitney.p}, {"exact", c.mann_whitney.exact}}},
         {"verdict", verdict_name(c.verdict)},
         {"repeats_needed", c.repeats_needed},
         {"words", cc.words()}});
  }
  return j;
}

namespace {

using records::kPlanFile;
using records::kRunRecordFile;
using records::read_json;
using records::write_json_file;
constexpr const char* kPlanKind = "epoch study plan";

/// `text` as one shell word: as it is when it needs no quoting, else in single quotes.
std::string shell_word(const std::string& text) {
  if (!text.empty() &&
      text.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:=+-"
                             ",@%") == std::string::npos)
    return text;
  std::string quoted = "'";
  for (const char ch : text) quoted += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return quoted + "'";
}

std::string resume_command(const std::string& out_dir) {
  return "`epoch study --resume --out " + shell_word(out_dir) + "`";
}

/// The settings a study is stored with, and the flag that sets each.
struct PlanField {
  const char* key;
  const char* flag;
};
constexpr PlanField kPlanFields[] = {
    {"protocol", "--protocol"}, {"configs", "--configs"},         {"repeats", "--repeats"},
    {"seed", "--seed"},         {"margin", "--margin"},           {"alpha", "alpha"},
    {"epochs", "--epochs"},     {"limit_train", "--limit-train"}, {"limit_test", "--limit-test"},
    {"data", "--data"},         {"model", "--model"},             {"input_shape", "--input-shape"},
    {"machine", "--machine"}};

/// The model file's SHA-256 ("" for a zoo model or none).
std::string model_sha256(const StudyConfig& study) {
  if (study.model.empty()) return "";
  const models::RegisteredModel* m = models::registered_model(study.model);
  return m != nullptr ? m->sha256 : "";
}

json plan_json(const StudyConfig& study) {
  return {{"kind", kPlanKind},
          {"protocol", study.protocol},
          {"configs", study.configs},
          {"repeats", study.repeats},
          {"seed", study.seed},
          {"margin", study.margin},
          {"alpha", study.alpha},
          {"epochs", study.epochs},
          {"limit_train", study.limit_train},
          {"limit_test", study.limit_test},
          {"data", study.data},
          {"model", study.model},
          {"input_shape", study.input_shape},
          {"machine", study.machine},
          {"model_sha256", model_sha256(study)}};
}

/// The updates a run makes before its figure is taken can move it only when there is one:
/// the autoencoder's figure follows every update (a partial batch is a step, so even
/// --limit-train 1 makes one, and runs of under 10 steps have no warm-up to start at rate 0);
/// prednet-study's is the mean of the last 50 losses, each taken before its own step's update,
/// so it needs two steps. This checks prednet-study's before anything trains, from its windows.
void check_figure_can_move(const StudyConfig& study, const train::TrainConfig& base) {
  if (study.protocol != "prednet-study") return;
  const train::ClipData data = train::open_clip_data(base);
  const std::int64_t frames = train::window_frames(base, models::find_model(base.run.model));
  const auto windows = static_cast<std::int64_t>(train::windows_of(data.train, frames).size());
  const std::int64_t used = std::min(windows, base.data.limit_train);
  const std::int64_t steps =
      (used + base.run.batch_size - 1) / base.run.batch_size * base.run.epochs;
  if (steps >= 2) return;
  const std::string why =
      ": prednet-study would make " + std::to_string(steps) +
      " step(s) in all, so its figure (the mean of the last 50 training losses, each taken "
      "before its step's update) would be the loss before any update, the same under every "
      "configuration and learning rate";
  if (used < windows)
    EPOCH_THROW(ConfigError, "--limit-train ", base.data.limit_train, " with --epochs ",
                base.run.epochs, why, "; pass --limit-train 2 or more (or --epochs 2)");
  EPOCH_THROW(ConfigError, "--data ", study.data, ": its training sequences hold ", windows,
              " window(s) of ", frames, " frames", why,
              "; use longer or more sequences (or --epochs 2)");
}

/// The same check on what a run did (a window skipped as bad, ...).
std::int64_t updates_needed(const std::string& protocol) {
  return protocol == "prednet-study" ? 2 : 1;
}

/// ConfigError naming the first stored setting that `study` gives otherwise.
void check_same_plan(const StudyConfig& study, const json& stored, const fs::path& plan_path) {
  const json given = plan_json(study);
  for (const PlanField& f : kPlanFields) {
    // (plans written before --model hold neither it nor --input-shape, nor --machine: empty)
    const std::string_view key = f.key;
    if (!stored.contains(f.key) && key != "model" && key != "input_shape" && key != "machine")
      EPOCH_THROW(IoError, plan_path.string(), ": no \"", f.key, "\" (not a study plan)");
    const json was = stored.value(f.key, json(""));
    if (was != given[f.key])
      EPOCH_THROW(ConfigError, "--resume: ", f.flag, " ", given[f.key].dump(),
                  " differs from the interrupted study's ", was.dump(), " (",
                  plan_path.string(), "); a resumed study continues as it started: leave ", f.flag,
                  " out");
  }
  const std::string was = stored.value("model_sha256", ""), now = given["model_sha256"];
  if (was != now)
    EPOCH_THROW(ConfigError, "--resume: the model file ", study.model,
                " is not the one the interrupted study started with (SHA-256 ", was, ", now ",
                now.empty() ? "none" : now,
                "): restore it, or start a new study with another --out");
}

/// What out_dir may hold for a new study: nothing (a lock file aside). ConfigError saying what
/// it holds instead.
void check_fresh(const fs::path& dir) {
  std::error_code ec;
  if (fs::exists(dir / kPlanFile, ec)) {
    if (fs::exists(dir / "study.json", ec))
      EPOCH_THROW(ConfigError, "--out ", dir.string(),
                  " already holds a finished study (study.json): choose another --out (",
                  resume_command(dir.string()), " redoes its comparisons)");
    EPOCH_THROW(ConfigError, "--out ", dir.string(),
                " holds a study that did not finish: continue it with ",
                resume_command(dir.string()),
                " (its finished runs are kept), or choose another --out");
  }
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().filename() != ".lock")
      EPOCH_THROW(ConfigError, "--out ", dir.string(), " is not empty (it holds ",
                  it->path().filename().string(),
                  ") and holds no study to resume: choose another --out");
  if (ec) EPOCH_THROW(IoError, dir.string(), ": cannot list: ", ec.message());
}

/// A finished run's record (study-run.json), when its folder holds one; IoError naming it when
/// it is not this run's.
std::optional<StudyRun> kept_run(const fs::path& run_dir, const std::string& config,
                                 std::int64_t repeat, std::uint64_t seed) {
  const fs::path path = run_dir / kRunRecordFile;
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  StudyRun run;
  try {
    run = records::read_run_record(path).run;
  } catch (const IoError& e) {
    EPOCH_THROW(IoError, e.what(), "; remove its folder to train the run again");
  }
  if (run.config != config || run.repeat != repeat || run.seed != seed ||
      !std::isfinite(run.figure))
    EPOCH_THROW(IoError, path.string(), ": records ", run.config, " seed ", run.seed, " (figure ",
                run.figure, "), not ", config, " seed ", seed,
                "; remove its folder to train the run again");
  run.run_dir = run_dir.string();
  return run;
}

/// The label of this machine's configurations in a combined study: --machine, else the short
/// name of its CPU, of its GPU when every configuration ran on CUDA, or of both; "x<N>" after
/// it for N ranks of mpirun.
std::string machine_label(const StudyConfig& study, const std::vector<StudyConfigSpec>& ran,
                          const train::MachineRecord& m) {
  if (!study.machine.empty()) return study.machine;
  bool cpu = false, cuda = false;
  for (const StudyConfigSpec& s : ran) (s.execution.device == "cuda" ? cuda : cpu) = true;
  const std::string cpu_name = train::short_device_name(m.cpu);
  const std::string gpu_name = m.gpus.empty() ? "" : train::short_device_name(m.gpus[0].name);
  const std::string name = !cuda || gpu_name.empty() ? cpu_name
                           : cpu                     ? cpu_name + "+" + gpu_name
                                                     : gpu_name;
  return m.ranks > 1 ? name + "x" + std::to_string(m.ranks) : name;  // mpirun -np N
}

/// Runs `f` on rank 0 alone (what a study writes, and the checks of its folder) and tells every
/// rank whether it went through: rank 0 rethrows its error, the others throw one saying so.
template <typename F>
void on_lead(dist::ProcessGroup& group, F&& f) {
  std::uint8_t ok = 1;
  std::exception_ptr error;
  if (group.rank() == 0) {
    try {
      f();
    } catch (...) {
      ok = 0;
      error = std::current_exception();
    }
  }
  if (group.distributed()) group.broadcast(&ok, 1, 0, "the study's progress");
  if (ok != 0) return;
  if (error) std::rethrow_exception(error);
  EPOCH_THROW(Error, "the study stopped on rank 0 (its message says why)");
}

/// Rethrows a run's failure as the same type of error, its message led by `context`.
[[noreturn]] void rethrow_with(const std::exception& e, const std::string& context) {
  const std::string message = context + e.what();
  if (dynamic_cast<const NumericalError*>(&e) != nullptr) throw NumericalError(message);
  if (dynamic_cast<const ConfigError*>(&e) != nullptr) throw ConfigError(message);
  if (dynamic_cast<const IoError*>(&e) != nullptr) throw IoError(message);
  if (dynamic_cast<const BackendUnavailable*>(&e) != nullptr) throw BackendUnavailable(message);
  if (dynamic_cast<const BackendError*>(&e) != nullptr) throw BackendError(message);
  if (dynamic_cast<const InvalidArgument*>(&e) != nullptr) throw InvalidArgument(message);
  if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr) throw Error(context + "out of memory");
  throw Error(message);
}

}  // namespace

StudyConfig stored_study(const std::string& dir) {
  const fs::path path = fs::path(dir) / kPlanFile;
  std::error_code ec;
  if (!fs::exists(path, ec))
    EPOCH_THROW(IoError, dir, ": no study to resume (no ", kPlanFile,
                ", which a study writes before its first run)");
  const json j = read_json(path);
  StudyConfig study;
  try {
    if (j.at("kind") != kPlanKind) EPOCH_THROW(IoError, path.string(), ": not a study plan");
    study.protocol = j.at("protocol").get<std::string>();
    study.configs = j.at("configs").get<std::string>();
    study.repeats = j.at("repeats").get<std::int64_t>();
    study.seed = j.at("seed").get<std::uint64_t>();
    study.margin = j.at("margin").get<double>();
    study.alpha = j.at("alpha").get<double>();
    study.epochs = j.at("epochs").get<std::int64_t>();
    study.limit_train = j.at("limit_train").get<std::int64_t>();
    study.limit_test = j.at("limit_test").get<std::int64_t>();
    study.data = j.at("data").get<std::string>();
    study.model = j.value("model", "");  // plans written before --model had none
    study.input_shape = j.value("input_shape", "");
    study.machine = j.value("machine", "");  // plans written before --machine had none
  } catch (const json::exception& e) {
    EPOCH_THROW(IoError, path.string(), ": not a study plan: ", e.what());
  }
  study.out_dir = dir;
  study.resume = true;
  return study;
}

StudyResult run_study(const StudyConfig& study, std::FILE* out) {
  // Everything that can be checked is, before anything trains.
  if (study.repeats < 2)
    EPOCH_THROW(ConfigError, "--repeats ", study.repeats, ": a comparison needs at least 2");
  if (!(study.margin > 0.0 && study.margin < 1.0))
    EPOCH_THROW(ConfigError, "--margin ", study.margin, ": expected a fraction in (0, 1)");
  if (study.out_dir.empty()) EPOCH_THROW(ConfigError, "--out DIR is needed");
  if (study.machine.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                      "0123456789._+@-") != std::string::npos ||
      (!study.machine.empty() && study.machine.find_first_not_of('.') == std::string::npos))
    EPOCH_THROW(ConfigError, "--machine ", study.machine,
                ": one word of letters, digits and . _ + @ - (it names a folder of a combined "
                "study)");
  train::TrainConfig base = protocol_config(study);
  // Under mpirun the ranks train each run together, data-parallel: a rank takes its share of
  // the protocol's batch, so the global batch (and the protocol) stays the protocol's own.
  dist::ProcessGroup& group = dist::ProcessGroup::world();
  const bool lead = group.rank() == 0;
  if (!lead) out = nullptr;
  const std::int64_t world = group.size();
  if (base.run.batch_size % world != 0)
    EPOCH_THROW(ConfigError, "--protocol ", study.protocol, " trains batches of ",
                base.run.batch_size, ", which ", world,
                " ranks cannot share evenly: run it on a number of ranks that divides it");
  StudyResult result;
  result.figure_name = study.protocol == "autoencoder"
                           ? "final test loss (per sample, summed in double)"
                           : "mean of the last 50 training losses";
  result.protocol = study.protocol;
  result.alpha = study.alpha;
  for (const StudyConfigSpec& s : parse_study_configs(study.configs, base.optimizer.lr)) {
    const std::string why = skip_reason(s);
    if (why.empty())
      result.ran.push_back(s);
    else
      result.skipped.emplace_back(s.name, why);
  }
  if (result.ran.size() < 2)
    EPOCH_THROW(ConfigError, "--configs: fewer than two of them can run on this machine");
  check_figure_can_move(study, base);
  result.fingerprint = protocol_fingerprint(study, base);  // with the global batch
  base.run.batch_size /= world;
  const train::MachineRecord machine = train::this_machine();
  const std::string label = machine_label(study, result.ran, machine);
  result.machines.emplace_back(label, machine);

  // The study folder: one process at a time, and either new or the interrupted study resumed.
  // Rank 0 alone keeps it; every rank learns what it decided.
  const fs::path dir = study.out_dir;
  std::optional<train::RunDirLock> lock;
  const fs::path plan_path = dir / kPlanFile;
  on_lead(group, [&] {
    if (study.resume) (void)stored_study(dir.string());  // IoError when there is none to resume
    lock.emplace(dir.string());
    if (study.resume) {
      check_same_plan(study, read_json(plan_path), plan_path);
    } else {
      check_fresh(dir);
      write_json_file(plan_path, plan_json(study));
    }
  });
  for (const auto& [name, why] : result.skipped)
    if (out != nullptr) std::fprintf(out, "study: %s skipped: %s\n", name.c_str(), why.c_str());

  // Seed by seed, every configuration: a drift of the machine over the study touches all alike.
  for (std::int64_t r = 0; r < study.repeats; ++r) {
    const std::uint64_t seed = study.seed + static_cast<std::uint64_t>(r);
    for (const StudyConfigSpec& s : result.ran) {
      const fs::path run_dir = dir / s.name / ("seed-" + std::to_string(seed));
      if (study.resume) {
        std::optional<StudyRun> kept;
        on_lead(group, [&] {
          kept = kept_run(run_dir, s.name, r, seed);
          if (kept) return;
          // A run that did not finish is trained again from scratch.
          std::error_code ec;
          fs::remove_all(run_dir, ec);
          if (ec)
            EPOCH_THROW(IoError, run_dir.string(),
                        ": cannot remove the unfinished run: ", ec.message());
        });
        std::uint8_t keep = kept ? 1 : 0;
        if (group.distributed()) group.broadcast(&keep, 1, 0, "whether a run is kept");
        if (keep != 0) {
          if (kept) {
            kept->machine = label;
            result.runs.push_back(*kept);
          }
          if (out != nullptr)
            std::fprintf(out, "study: %s seed %llu: %s %.9g (kept)\n", s.name.c_str(),
                         static_cast<unsigned long long>(seed), result.figure_name.c_str(),
                         kept->figure);
          continue;
        }
      }
      const std::string kept = result.runs.empty() ? "no run had finished; "
                                                   : "the " + std::to_string(result.runs.size()) +
                                                         " finished run(s) are kept and ";
      const std::string context = "--configs " + s.name + ", seed " + std::to_string(seed) +
                                  " (run folder " + run_dir.string() + ") failed; " + kept +
                                  resume_command(dir.string()) + " trains the rest: ";
      train::TrainConfig c = configured(base, s, seed);
      c.run.out_dir = run_dir.string();
      train::TrainResult t;
      try {
        train::TrainOptions options;
        options.progress = stderr;
        options.weights_digest = true;
        t = train::train(c, options);
      } catch (const std::exception& e) {
        rethrow_with(e, context);
      }
      StudyRun run;
      run.config = s.name;
      run.machine = label;
      run.repeat = r;
      run.seed = seed;
      run.figure = study.protocol == "autoencoder" ? t.test_loss_f64 : t.recent_loss;
      run.wall_s = t.wall_s;
      run.run_dir = run_dir.string();
      run.weights_sha256 = t.weights_sha256;
      if (t.steps < updates_needed(study.protocol))
        EPOCH_THROW(ConfigError, context, "it made ", t.steps,
                    " step(s), so no update came before its figure was taken (see the warnings "
                    "for windows left out)");
      if (!std::isfinite(run.figure))
        EPOCH_THROW(NumericalError, context, "its ", result.figure_name, " is ", run.figure);
      on_lead(group, [&] {
        write_json_file(run_dir / kRunRecordFile,
                        records::run_record(run, canonical_config(s), t.steps,
                                            result.fingerprint, machine));
      });
      result.runs.push_back(run);
      if (out != nullptr)
        std::fprintf(out, "study: %s seed %llu: %s %.9g (%.1f s)\n", s.name.c_str(),
                     static_cast<unsigned long long>(seed), result.figure_name.c_str(), run.figure,
                     run.wall_s);
    }
  }
  if (!lead) return result;  // rank 0 compares, from every run's record
  result.margin = records::absolute_margin(result.runs, study.margin);
  std::vector<std::string> names;
  for (const StudyConfigSpec& s : result.ran) names.push_back(s.name);
  // Paired: the runs of one seed trained from the same initial weights and data order.
  result.comparisons =
      records::compare_pairs(names, result.runs, result.margin, study.alpha, study.seed, out);
  write_json_file(dir / records::kStudyFile, result.to_json());
  return result;
}

}  // namespace epoch::study
