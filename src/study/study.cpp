// The study runner (see study.h).
#include "epoch/study/study.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "epoch/tensor/error.h"
#include "epoch/tensor/file_io.h"
#include "epoch/tensor/storage.h"
#include "epoch/train/recipe.h"

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

/// The run's settings under a configuration: device, threads, kernels, perturbation.
train::TrainConfig configured(train::TrainConfig c, const StudyConfigSpec& spec,
                              std::uint64_t seed) {
  c.run.seed = seed;
  c.run.device = spec.device;
  c.run.threads = spec.threads;
  c.run.determinism = train::Determinism::reproducible;
  c.run.cpu_kernels = spec.reference ? "reference" : "auto";
  c.run.cudnn = spec.cudnn;
  if (spec.perturb != "none") {
    c.run.perturb = spec.perturb;
    c.run.perturb_seed = seed ^ 0x9e3779b97f4a7c15ULL;  // its own stream, per repeat
  }
  if (spec.lr > 0.0) c.optimizer.lr = static_cast<float>(spec.lr);
  return c;
}

/// "lr=X" as a learning rate: a finite number above 0 written out in full; 0 when it is not
/// one.
double parse_lr(const std::string& text) {
  if (text.empty()) return 0.0;
  try {
    std::size_t used = 0;
    const double lr = std::stod(text, &used);
    if (used != text.size() || !std::isfinite(lr) || lr <= 0.0 ||
        lr > std::numeric_limits<float>::max())
      return 0.0;
    return lr;
  } catch (const std::exception&) {
    return 0.0;
  }
}

/// Applies one "+variant" of a configuration's name to it; ConfigError for one it does not
/// allow.
void apply_variant(StudyConfigSpec& s, const std::string& variant) {
  const std::string& item = s.name;
  const bool cpu = s.device == "cpu";
  if (variant.rfind("lr=", 0) == 0) {
    if (s.lr > 0.0) EPOCH_THROW(ConfigError, "--configs: '", item, "' sets lr twice");
    s.lr = parse_lr(variant.substr(3));
    if (s.lr <= 0.0)
      EPOCH_THROW(ConfigError, "--configs: '", item, "': '+", variant,
                  "' is not a learning rate above 0");
  } else if (cpu && variant == "reference") {
    if (s.reference) EPOCH_THROW(ConfigError, "--configs: '", item, "' says reference twice");
    s.reference = true;
  } else if (cpu && (variant == "perturb" || variant == "perturb-order")) {
    if (s.perturb != "none")
      EPOCH_THROW(ConfigError, "--configs: '", item, "' asks for more than one perturbation");
    s.perturb = variant == "perturb" ? "ulp" : "order";
  } else {
    EPOCH_THROW(ConfigError, "--configs: '", item, "': unknown variant '+", variant, "' (",
                cpu ? "reference, perturb, perturb-order or lr=X" : "lr=X", ")");
  }
}

}  // namespace

std::vector<StudyConfigSpec> parse_study_configs(const std::string& list) {
  std::vector<StudyConfigSpec> out;
  std::set<std::string> seen;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = std::min(list.find(',', start), list.size());
    const std::string item = list.substr(start, comma - start);
    start = comma + 1;
    if (item.empty()) EPOCH_THROW(ConfigError, "--configs '", list, "': an empty entry");
    if (!seen.insert(item).second)
      EPOCH_THROW(ConfigError, "--configs: '", item, "' is given twice");
    StudyConfigSpec s;
    s.name = item;
    const std::size_t plus = item.find('+');
    const std::string base = item.substr(0, plus);
    if (base == "cuda" || base == "cuda-nocudnn") {
      s.device = "cuda";
      s.cudnn = base == "cuda";
    } else {
      int threads = 0;
      std::size_t used = 0;
      try {
        if (base.rfind("cpu:", 0) == 0) threads = std::stoi(base.substr(4), &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (base.rfind("cpu:", 0) != 0 || used == 0 || used != base.size() - 4 || threads < 1 ||
          threads > 256)
        EPOCH_THROW(ConfigError, "--configs: '", item,
                    "' is not cpu:N, cpu:N+reference, cpu:N+perturb, cpu:N+perturb-order, cuda "
                    "or cuda-nocudnn (each may add +lr=X)");
      s.threads = threads;
    }
    for (std::size_t at = plus; at != std::string::npos;) {
      const std::size_t next = item.find('+', at + 1);
      apply_variant(s, item.substr(at + 1, next == std::string::npos ? next : next - at - 1));
      at = next;
    }
    out.push_back(s);
  }
  return out;
}

std::string skip_reason(const StudyConfigSpec& spec) {
  if (spec.device == "cuda") {
    if (!EPOCH_WITH_CUDA) return "built without CUDA";
    if (memory::cuda_device_count() == 0) return "no CUDA device on this machine";
    if (spec.cudnn && !EPOCH_WITH_CUDNN) return "built without cuDNN";
  }
  return "";
}

train::TrainConfig protocol_config(const StudyConfig& study) {
  if (study.protocol == "autoencoder") {
    train::TrainConfig c = train::recipe_for("autoencoder");
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

json StudyResult::to_json() const {
  json j;
  j["figure"] = figure_name;
  j["margin"] = margin;
  j["configs"] = json::array();
  for (const StudyConfigSpec& s : ran) j["configs"].push_back(s.name);
  j["skipped"] = json::array();
  for (const auto& [name, why] : skipped)
    j["skipped"].push_back({{"config", name}, {"reason", why}});
  j["runs"] = json::array();
  for (const StudyRun& r : runs)
    j["runs"].push_back({{"config", r.config},
                         {"repeat", r.repeat},
                         {"seed", r.seed},
                         {"figure", r.figure},
                         {"wall_s", r.wall_s},
                         {"run_dir", r.run_dir}});
  j["comparisons"] = json::array();
  for (const auto& [names, c] : comparisons)
    j["comparisons"].push_back(
        {{"a", names.first},
         {"b", names.second},
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
         {"words", c.words}});
  return j;
}

StudyResult run_study(const StudyConfig& study, std::FILE* out) {
  if (study.repeats < 2)
    EPOCH_THROW(ConfigError, "--repeats ", study.repeats, ": a comparison needs at least 2");
  if (!(study.margin > 0.0 && study.margin < 1.0))
    EPOCH_THROW(ConfigError, "--margin ", study.margin, ": expected a fraction in (0, 1)");
  if (study.out_dir.empty()) EPOCH_THROW(ConfigError, "--out DIR is needed");
  const train::TrainConfig base = protocol_config(study);
  StudyResult result;
  result.figure_name =
      study.protocol == "autoencoder" ? "final test loss" : "mean of the last 50 training losses";
  for (const StudyConfigSpec& s : parse_study_configs(study.configs)) {
    const std::string why = skip_reason(s);
    if (why.empty())
      result.ran.push_back(s);
    else
      result.skipped.emplace_back(s.name, why);
  }
  for (const auto& [name, why] : result.skipped)
    if (out != nullptr) std::fprintf(out, "study: %s skipped: %s\n", name.c_str(), why.c_str());
  if (result.ran.size() < 2)
    EPOCH_THROW(ConfigError, "--configs: fewer than two of them can run on this machine");
  std::error_code ec;
  fs::create_directories(study.out_dir, ec);
  if (ec) EPOCH_THROW(IoError, study.out_dir, ": cannot create: ", ec.message());
  // Seed by seed, every configuration: a drift of the machine over the study touches all alike.
  for (std::int64_t r = 0; r < study.repeats; ++r) {
    const std::uint64_t seed = study.seed + static_cast<std::uint64_t>(r);
    for (const StudyConfigSpec& s : result.ran) {
      train::TrainConfig c = configured(base, s, seed);
      c.run.out_dir =
          (fs::path(study.out_dir) / s.name / ("seed-" + std::to_string(seed))).string();
      const train::TrainResult t = train::train(c, stderr);
      StudyRun run;
      run.config = s.name;
      run.repeat = r;
      run.seed = seed;
      run.figure = study.protocol == "autoencoder" ? t.test_loss : t.recent_loss;
      run.wall_s = t.wall_s;
      run.run_dir = t.run_dir;
      result.runs.push_back(run);
      if (out != nullptr)
        std::fprintf(out, "study: %s seed %llu: %s %.6g (%.1f s)\n", s.name.c_str(),
                     static_cast<unsigned long long>(seed), result.figure_name.c_str(), run.figure,
                     run.wall_s);
    }
  }
  double total = 0.0;
  for (const StudyRun& r : result.runs) total += r.figure;
  result.margin = study.margin * std::fabs(total / static_cast<double>(result.runs.size()));
  const auto figures_of = [&](const std::string& name) {
    std::vector<double> v;
    for (const StudyRun& r : result.runs)
      if (r.config == name) v.push_back(r.figure);
    return v;
  };
  for (std::size_t i = 0; i < result.ran.size(); ++i)
    for (std::size_t j = i + 1; j < result.ran.size(); ++j) {
      const std::string& a = result.ran[i].name;
      const std::string& b = result.ran[j].name;
      // A margin of 0 (every figure 0) would make any difference infinitely large: use a tiny one.
      const double margin = result.margin > 0 ? result.margin : 1e-12;
      // Paired: run k of each configuration trained from the same seed.
      const Comparison c = compare(figures_of(a), figures_of(b), margin, a, b, study.alpha,
                                   study.seed + i * 1000 + j, 10000, true);
      if (out != nullptr)
        std::fprintf(out, "study: %s vs %s: %s\n", a.c_str(), b.c_str(), c.words.c_str());
      result.comparisons.push_back({{a, b}, c});
    }
  const std::string text = result.to_json().dump(2) + "\n";
  write_file_atomic((fs::path(study.out_dir) / "study.json").string(),
                    std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()),
                    true);
  return result;
}

}  // namespace epoch::study
