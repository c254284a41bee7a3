// `epoch report DIR`: one self-contained HTML file (inline SVG and CSS, no scripts, nothing
// fetched) for a training run folder (config.json, metrics.jsonl) or a study folder
// (study.json and its runs). `epoch train` and `epoch study` write theirs at the end. Every
// string of the folder is escaped on its way into the page (report/html.h), every file read is
// a regular file within a bound, and a long run's curves are thinned to a few thousand points,
// so a page stays a few MB whatever the run's length.
#pragma once

#include <string>
#include <string_view>

namespace epoch::report {

/// The report of a run folder: loss per step and per epoch, accuracy, throughput, where each
/// step's time went, the configuration and the environment. IoError naming the file and the
/// problem (a missing config.json or metrics.jsonl, one that is a folder, a FIFO or a device, a
/// line of metrics.jsonl that is not JSON, a field of the wrong type, ...).
std::string run_report_html(const std::string& run_dir);

/// run_report_html from the texts of a run's files in memory (`run_name` stands for the
/// folder's name): the readers and the page without the file system (the fuzz target's way in).
std::string run_report_html_from_text(std::string_view config_json, std::string_view metrics_jsonl,
                                      const std::string& run_name);

/// The report of a study folder: loss curves per configuration (the mean over repeats, with
/// the band from the lowest to the highest), box plots of the compared figure, the tests and
/// the verdicts, and every run. A run whose metrics.jsonl is missing is left out of the curves
/// and named in a note; any other unreadable file is an IoError naming it.
std::string study_report_html(const std::string& study_dir);

/// study_report_html from the text of study.json, every run's metrics.jsonl being
/// `metrics_jsonl` (the fuzz target's way in).
std::string study_report_html_from_text(std::string_view study_json,
                                        std::string_view metrics_jsonl);

/// Writes DIR/report.html (atomically) for a study folder (it has study.json) or a run folder,
/// and returns its path.
std::string write_report(const std::string& dir);

}  // namespace epoch::report
