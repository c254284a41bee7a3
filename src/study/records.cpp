// A study's records and its paired comparisons (see records.h).
#include "records.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <span>

#include "epoch/tensor/error.h"
#include "epoch/tensor/file_io.h"

namespace epoch::study::records {

namespace fs = std::filesystem;
using json = nlohmann::json;

json read_json(const fs::path& path) {
  const std::string text = read_text_file(path.string(), kMaxJsonFileBytes);
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    EPOCH_THROW(IoError, path.string(), ": not valid JSON: ", e.what());
  }
}

void write_json_file(const fs::path& path, const json& j) {
  const std::string text = j.dump(2) + "\n";
  write_file_atomic(path.string(),
                    std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()),
                    true);
}

json run_record(const StudyRun& run, const std::string& canonical, std::int64_t steps,
                const json& fingerprint, const train::MachineRecord& machine) {
  return {{"config", run.config},         {"canonical", canonical},
          {"repeat", run.repeat},         {"seed", run.seed},
          {"figure", run.figure},         {"wall_s", run.wall_s},
          {"steps", steps},               {"weights_sha256", run.weights_sha256},
          {"machine_label", run.machine}, {"protocol", fingerprint},
          {"machine", machine.to_json()}};
}

RunRecord read_run_record(const fs::path& path) {
  const json j = read_json(path);
  RunRecord r;
  try {
    r.run.config = j.at("config").get<std::string>();
    r.run.repeat = j.at("repeat").get<std::int64_t>();
    r.run.seed = j.at("seed").get<std::uint64_t>();
    r.run.figure = j.at("figure").is_number() ? j.at("figure").get<double>() : std::nan("");
    r.run.wall_s = j.at("wall_s").get<double>();
    r.run.weights_sha256 = j.value("weights_sha256", "");
    r.run.machine = j.value("machine_label", "");
    if (j.contains("protocol") && j.at("protocol").is_object()) r.fingerprint = j.at("protocol");
  } catch (const json::exception& e) {
    EPOCH_THROW(IoError, path.string(), ": not a study run's record (", e.what(), ")");
  }
  if (j.contains("machine")) {
    r.machine = train::machine_from_json(j.at("machine"), path.string());
    r.has_machine = true;
  }
  r.run.run_dir = path.parent_path().string();
  return r;
}

std::string first_difference(const json& a, const json& b) {
  for (const auto& [key, value] : a.items())
    if (!b.contains(key) || b.at(key) != value) return key;
  for (const auto& [key, value] : b.items())
    if (!a.contains(key)) return key;
  return "";
}

double absolute_margin(const std::vector<StudyRun>& runs, double relative) {
  double total = 0.0;
  for (const StudyRun& r : runs) total += r.figure;
  return runs.empty() ? 0.0 : relative * std::fabs(total / static_cast<double>(runs.size()));
}

std::vector<ConfigComparison> compare_pairs(const std::vector<std::string>& configs,
                                            const std::vector<StudyRun>& runs, double margin,
                                            double alpha, std::uint64_t seed, std::FILE* out) {
  // Each configuration's runs by seed.
  std::map<std::string, std::map<std::uint64_t, const StudyRun*>> by_seed;
  for (const StudyRun& r : runs) by_seed[r.config][r.seed] = &r;
  std::vector<ConfigComparison> result;
  for (std::size_t i = 0; i < configs.size(); ++i)
    for (std::size_t j = i + 1; j < configs.size(); ++j) {
      ConfigComparison c;
      c.a = configs[i];
      c.b = configs[j];
      std::vector<double> a, b;
      for (const auto& [s, run_a] : by_seed[c.a]) {
        const auto other = by_seed[c.b].find(s);
        if (other == by_seed[c.b].end()) continue;
        a.push_back(run_a->figure);
        b.push_back(other->second->figure);
        c.identical_bits +=
            !run_a->weights_sha256.empty() && run_a->weights_sha256 == other->second->weights_sha256;
      }
      c.seeds = static_cast<std::int64_t>(a.size());
      if (c.seeds < 2)
        EPOCH_THROW(ConfigError, c.a, " and ", c.b, " share ", c.seeds,
                    " seed(s): a paired comparison needs at least 2 (the studies must train "
                    "the same seeds: --seed and --repeats)");
      // A margin of 0 (every figure 0) would make any difference infinitely large: use a tiny one.
      c.stats = compare(a, b, margin > 0 ? margin : 1e-12, c.a, c.b, alpha,
                        seed + i * 1000 + j, 10000, true);
      if (out != nullptr)
        std::fprintf(out, "study: %s vs %s: %s\n", c.a.c_str(), c.b.c_str(), c.words().c_str());
      result.push_back(std::move(c));
    }
  return result;
}

}  // namespace epoch::study::records
