// `epoch report DIR`: the HTML report of a run or study folder (report/report.h).
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "epoch/report/report.h"
#include "epoch/tensor/error.h"
#include "epoch/tensor/warnings.h"

namespace epoch::cli {

std::string write_report_or_warn(const std::string& dir) {
  try {
    return report::write_report(dir);
  } catch (const Error& e) {
    std::fprintf(stderr, "epoch: warning: no report written: %s\n",
                 without_location(e.what()).c_str());
    return "";
  }
}

void add_report_command(CLI::App& app, int& exit_code) {
  auto dir = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "report", "Write DIR/report.html: one self-contained page of a run or a study folder");
  cmd->add_option("dir", *dir, "A run folder (runs/NAME) or a study folder (epoch study --out)")
      ->required();
  cmd->callback([dir, &exit_code] {
    std::printf("%s\n", report::write_report(*dir).c_str());
    exit_code = 0;
  });
}

}  // namespace epoch::cli
