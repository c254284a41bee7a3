// The subcommands of `epoch`: each registers itself on the app and runs when selected,
// returning the process exit code through `exit_code`.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace epoch::cli {

void add_train_command(CLI::App& app, int& exit_code);
void add_eval_command(CLI::App& app, int& exit_code);
void add_predict_command(CLI::App& app, int& exit_code);
void add_models_command(CLI::App& app, int& exit_code);
void add_info_command(CLI::App& app, int& exit_code);
void add_bench_command(CLI::App& app, int& exit_code);
void add_data_command(CLI::App& app, int& exit_code);
void add_scale_command(CLI::App& app, int& exit_code);
void add_study_command(CLI::App& app, int& exit_code);
void add_report_command(CLI::App& app, int& exit_code);

/// Writes DIR/report.html (epoch report) at the end of a training or a study; a failure is a
/// warning on stderr (what was trained stays), and the result the empty string.
std::string write_report_or_warn(const std::string& dir);

/// True when stdout is a terminal (progress bars redraw in place only there).
bool stdout_is_terminal();

}  // namespace epoch::cli
