// `epoch report DIR`: one self-contained HTML file (inline SVG and CSS, no scripts, nothing
// fetched) for a training run folder (config.json, metrics.jsonl) or a study folder
// (study.json and its runs). `epoch train` and `epoch study` write theirs at the end.
#pragma once

#include <string>

namespace epoch::report {

/// The report of a run folder: loss per step and per epoch, accuracy, throughput, where each
/// step's time went, the configuration and the environment. IoError naming the file and the
/// problem (a missing config.json, a line of metrics.jsonl that is not JSON, ...).
std::string run_report_html(const std::string& run_dir);

/// The report of a study folder: loss curves per configuration (the mean over repeats, with
/// the band from the lowest to the highest), box plots of the compared figure, the tests and
/// the verdicts, and every run.
std::string study_report_html(const std::string& study_dir);

/// Writes DIR/report.html (atomically) for a study folder (it has study.json) or a run folder,
/// and returns its path.
std::string write_report(const std::string& dir);

}  // namespace epoch::report
