// `epoch study combine`: finished studies made on several machines pooled into one, so that the
// same configuration can be compared across machines (cpu:4 on one, cuda on another), paired by
// seed as within a study: every machine trains the same seeds from the same initial weights.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "epoch/study/study.h"

namespace epoch::study {

/// Pools the finished studies in `dirs` (at least two) into `out_dir`: every run's protocol
/// fingerprint must be the first's (ConfigError naming the run, its file, the field and both
/// values otherwise), and so must the relative margin and alpha; each study's configurations
/// are labelled by its machine ("i5-4590/cpu:4"; two machines of one name are told apart by
/// their ISA, else by their folder); every pair of labelled configurations is compared on the
/// seeds both ran. out_dir gets study.json and, for the report's curves, each run's
/// config.json, metrics.jsonl and study-run.json under <machine>/<config>/seed-<seed>/ (no
/// checkpoints). ConfigError for an out_dir that is not empty; IoError naming the folder for
/// one that holds no finished study (or a combination). One line per source and comparison to
/// `out` (null: none).
StudyResult combine_studies(const std::vector<std::string>& dirs, const std::string& out_dir,
                            std::FILE* out);

}  // namespace epoch::study
