// Finished studies of several machines pooled into one (see combine.h).
#include "epoch/study/combine.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "epoch/tensor/error.h"
#include "epoch/train/run_dir.h"
#include "records.h"

namespace epoch::study {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

/// One source study: its folder, settings and runs.
struct Source {
  std::string dir;
  std::string label;  // the machine's, made unique among the sources
  double relative_margin = 0.0, alpha = 0.05;
  std::uint64_t seed = 0;
  std::string figure;
  std::vector<std::string> configs;
  std::vector<records::RunRecord> runs;
  train::MachineRecord machine;
};

Source read_source(const std::string& dir) {
  const fs::path root = dir;
  std::error_code ec;
  if (!fs::exists(root / records::kStudyFile, ec))
    EPOCH_THROW(IoError, dir, ": no finished study (no ", records::kStudyFile, "; ",
                fs::exists(root / records::kPlanFile, ec)
                    ? "finish it with `epoch study --resume --out " + dir + "`"
                    : std::string("`epoch study --out DIR` makes one"),
                ")");
  const json study = records::read_json(root / records::kStudyFile);
  if (study.is_object() && study.contains("sources"))
    EPOCH_THROW(IoError, dir, ": a combination of studies itself; combine the studies it was "
                "made of");
  const json plan = records::read_json(root / records::kPlanFile);
  Source s;
  s.dir = dir;
  try {
    s.relative_margin = plan.at("margin").get<double>();
    s.alpha = plan.at("alpha").get<double>();
    s.seed = plan.at("seed").get<std::uint64_t>();
    s.figure = study.at("figure").get<std::string>();
    for (const json& c : study.at("configs")) s.configs.push_back(c.get<std::string>());
    for (const json& r : study.at("runs")) {
      const std::string config = r.at("config").get<std::string>();
      const std::uint64_t seed = r.at("seed").get<std::uint64_t>();
      // The run's folder under the study's (the study.json of another machine names its paths).
      const fs::path record =
          root / config / ("seed-" + std::to_string(seed)) / records::kRunRecordFile;
      s.runs.push_back(records::read_run_record(record));
      const records::RunRecord& rr = s.runs.back();
      if (rr.fingerprint.is_null() || !rr.has_machine)
        EPOCH_THROW(IoError, record.string(),
                    ": written by an earlier epoch, without the protocol's fingerprint and the "
                    "machine: run the study again to combine it");
      if (rr.run.config != config || rr.run.seed != seed)
        EPOCH_THROW(IoError, record.string(), ": records ", rr.run.config, " seed ",
                    rr.run.seed, ", not ", config, " seed ", seed);
    }
  } catch (const json::exception& e) {
    EPOCH_THROW(IoError, dir, ": not a study's files (", e.what(), ")");
  }
  if (s.runs.empty()) EPOCH_THROW(IoError, dir, ": its study holds no runs");
  s.machine = s.runs.front().machine;
  s.label = s.runs.front().run.machine.empty()
                ? train::short_device_name(s.machine.cpu)
                : s.runs.front().run.machine;
  return s;
}

/// The sources' labels made unique: a name that several share gets each one's ISA (epoch's,
/// else oneDNN's) when those differ, else its folder's name.
void unique_labels(std::vector<Source>& sources) {
  const auto suffix_by = [&](auto&& part) {
    std::map<std::string, std::vector<Source*>> by_label;
    for (Source& s : sources) by_label[s.label].push_back(&s);
    for (auto& [label, group] : by_label) {
      if (group.size() < 2) continue;
      std::set<std::string> parts;
      for (const Source* s : group) parts.insert(part(*s));
      if (parts.size() < group.size()) continue;  // not told apart by this
      for (Source* s : group) s->label = label + "@" + part(*s);
    }
  };
  suffix_by([](const Source& s) { return s.machine.cpu_isa; });
  suffix_by([](const Source& s) { return s.machine.onednn_isa; });
  suffix_by([](const Source& s) { return fs::path(s.dir).lexically_normal().filename().string(); });
  std::set<std::string> seen;
  for (const Source& s : sources)
    if (!seen.insert(s.label).second)
      EPOCH_THROW(ConfigError, "study combine: two studies of machine ", s.label,
                  " cannot be told apart (the same folder given twice?)");
}

/// ConfigError unless `b` was made under the same protocol and analysis as `a`.
void check_same_protocol(const Source& a, const Source& b) {
  const auto differ = [&](const std::string& what, const std::string& va, const std::string& vb) {
    EPOCH_THROW(ConfigError, "study combine: ", b.dir, " has another ", what, " than ", a.dir,
                " (", vb, " there, ", va, " in ", a.dir, "): only studies of one protocol combine");
  };
  if (a.relative_margin != b.relative_margin)
    differ("--margin", std::to_string(a.relative_margin), std::to_string(b.relative_margin));
  if (a.alpha != b.alpha) differ("alpha", std::to_string(a.alpha), std::to_string(b.alpha));
  const json& reference = a.runs.front().fingerprint;
  for (const records::RunRecord& r : b.runs) {
    const std::string key = records::first_difference(reference, r.fingerprint);
    if (key.empty()) continue;
    const auto value = [&](const json& f) {
      return f.contains(key) ? f.at(key).dump() : std::string("nothing");
    };
    EPOCH_THROW(ConfigError, "study combine: ", b.dir, "'s run ", r.run.config, " seed ",
                r.run.seed, " was trained under another protocol than ", a.dir, "'s: ", key,
                " is ", value(r.fingerprint), " there and ", value(reference), " in ", a.dir,
                " (", fs::path(r.run.run_dir) / records::kRunRecordFile,
                "); only runs of one protocol combine");
  }
}

/// Copies what the report reads of a run (not its checkpoints) into `to`.
void copy_run_files(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::create_directories(to, ec);
  if (ec) EPOCH_THROW(IoError, to.string(), ": cannot create: ", ec.message());
  for (const char* name : {"config.json", "metrics.jsonl", records::kRunRecordFile}) {
    if (!fs::exists(from / name, ec)) continue;
    fs::copy_file(from / name, to / name, fs::copy_options::overwrite_existing, ec);
    if (ec)
      EPOCH_THROW(IoError, (from / name).string(), ": cannot copy to ", to.string(), ": ",
                  ec.message());
  }
}

}  // namespace

StudyResult combine_studies(const std::vector<std::string>& dirs, const std::string& out_dir,
                            std::FILE* out) {
  if (dirs.size() < 2)
    EPOCH_THROW(ConfigError, "study combine: give at least two study folders (", dirs.size(),
                " given)");
  if (out_dir.empty()) EPOCH_THROW(ConfigError, "study combine: --out DIR is needed");
  std::vector<Source> sources;
  for (const std::string& d : dirs) {
    if (fs::path(d).lexically_normal() == fs::path(out_dir).lexically_normal())
      EPOCH_THROW(ConfigError, "study combine: --out ", out_dir, " is one of the studies");
    sources.push_back(read_source(d));
  }
  for (std::size_t i = 1; i < sources.size(); ++i) check_same_protocol(sources[0], sources[i]);
  unique_labels(sources);

  const fs::path dir = out_dir;
  const train::RunDirLock lock(dir.string());
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().filename() != ".lock")
      EPOCH_THROW(ConfigError, "study combine: --out ", dir.string(), " is not empty (it holds ",
                  it->path().filename().string(), "): choose another --out");

  StudyResult result;
  result.protocol = sources[0].runs.front().fingerprint.value("protocol", "");
  result.fingerprint = sources[0].runs.front().fingerprint;
  result.figure_name = sources[0].figure;
  result.alpha = sources[0].alpha;
  std::vector<std::string> names;
  for (const Source& s : sources) {
    result.sources.push_back(s.dir);
    result.machines.emplace_back(s.label, s.machine);
    for (const std::string& c : s.configs) {
      StudyConfigSpec spec;
      spec.name = s.label + "/" + c;
      result.ran.push_back(spec);
      names.push_back(spec.name);
    }
    for (const records::RunRecord& r : s.runs) {
      StudyRun run = r.run;
      run.machine = s.label;
      run.config = s.label + "/" + r.run.config;
      const fs::path to = dir / s.label / r.run.config / ("seed-" + std::to_string(run.seed));
      copy_run_files(r.run.run_dir, to);
      run.run_dir = to.string();
      result.runs.push_back(run);
    }
    if (out != nullptr)
      std::fprintf(out, "study combine: %s: %zu runs of %zu configurations from %s (%s, %s)\n",
                   s.label.c_str(), s.runs.size(), s.configs.size(), s.dir.c_str(),
                   s.machine.cpu.c_str(), s.machine.cpu_isa.c_str());
  }
  result.margin = records::absolute_margin(result.runs, sources[0].relative_margin);
  result.comparisons = records::compare_pairs(names, result.runs, result.margin, result.alpha,
                                              sources[0].seed, out);
  records::write_json_file(dir / records::kStudyFile, result.to_json());
  return result;
}

}  // namespace epoch::study
