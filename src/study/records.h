// What a study keeps on disk and how its runs are compared: the run records (study-run.json),
// the JSON files, and every pair of configurations compared seed by seed. Shared by a study
// (study.cpp) and a combination of studies (combine.cpp).
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "epoch/study/study.h"

namespace epoch::study::records {

inline constexpr const char* kPlanFile = "study-plan.json";
inline constexpr const char* kRunRecordFile = "study-run.json";
inline constexpr const char* kStudyFile = "study.json";

nlohmann::json read_json(const std::filesystem::path& path);
void write_json_file(const std::filesystem::path& path, const nlohmann::json& j);

/// A finished run's record: the run, the configuration's canonical spelling, its steps, the
/// protocol's fingerprint and the machine that ran it.
nlohmann::json run_record(const StudyRun& run, const std::string& canonical, std::int64_t steps,
                          const nlohmann::json& fingerprint, const train::MachineRecord& machine);

/// A run record read back, with what it holds beside the run; IoError naming the file and the
/// key for one that is not a run record.
struct RunRecord {
  StudyRun run;
  nlohmann::json fingerprint;  // null in a record written before fingerprints
  train::MachineRecord machine;
  bool has_machine = false;
};
RunRecord read_run_record(const std::filesystem::path& path);

/// The first key where two flat fingerprints differ (a key only one holds included), "" when
/// they are the same.
std::string first_difference(const nlohmann::json& a, const nlohmann::json& b);

/// Every pair of `configs` (in order) compared on the seeds both ran, paired by seed; one line
/// per pair to `out` (null: none).
std::vector<ConfigComparison> compare_pairs(const std::vector<std::string>& configs,
                                            const std::vector<StudyRun>& runs, double margin,
                                            double alpha, std::uint64_t seed, std::FILE* out);

/// The mean figure of every run times `relative` (a tiny margin where that is 0).
double absolute_margin(const std::vector<StudyRun>& runs, double relative);

}  // namespace epoch::study::records
