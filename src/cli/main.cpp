// Entry point of `epoch`: applies epoch's OpenMP wait policy (omp_wait.h), parses the command
// line and turns every error into one line on stderr and a non-zero exit code (2: usage, 1: bad
// input or failure, 3: internal error).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <string>

#include "cli/commands.h"
#include "cli/omp_wait.h"
#include "epoch/dist/process_group.h"
#include "epoch/tensor/cpu_isa.h"
#include "epoch/tensor/error.h"
#include "epoch/tensor/text.h"
#include "epoch/tensor/warnings.h"

namespace {

// Library messages carry " [at file:line]" suffixes for developers; users see the message
// alone unless EPOCH_DEBUG is set.
std::string user_message(const char* what) {
  return std::getenv("EPOCH_DEBUG") != nullptr ? std::string(what) : epoch::without_location(what);
}

// One line on stderr and the exit code; in a job of several ranks (mpirun) the line names the
// rank and the whole job ends (MPI_Abort), so no other rank waits forever in a collective.
// Ranks that disagree on their settings all throw the same line at the same point: rank 0
// alone prints it and ends the job; the others wait for that (a few seconds at most) so their
// own abort cannot end the job before the line is out.
int fail(int code, const char* kind, const std::string& message, bool every_rank_agrees = false) {
  std::fflush(stdout);
  if (epoch::dist::launched_by_mpi()) {
    epoch::dist::ProcessGroup& group = epoch::dist::ProcessGroup::world();
    if (group.distributed()) {
      if (every_rank_agrees && group.rank() != 0) {
        ::sleep(10);
        group.abort(code);
      }
      if (every_rank_agrees) {
        std::fprintf(stderr, "epoch: %s: %s\n", kind, message.c_str());
      } else {
        std::fprintf(stderr, "epoch: %s (rank %d of %d): %s\n", kind, group.rank(), group.size(),
                     message.c_str());
      }
      group.abort(code);
    }
  }
  std::fprintf(stderr, "epoch: %s: %s\n", kind, message.c_str());
  return code;
}

}  // namespace

namespace epoch::cli {
bool stdout_is_terminal() { return isatty(STDOUT_FILENO) == 1; }
}  // namespace epoch::cli

int main(int argc, char** argv) {
  epoch::cli::apply_default_wait_policy(argv);  // may re-execute the binary: before anything else
  try {
    (void)epoch::active_cpu_isa();  // EPOCH_CPU_ISA checked once, before any kernel runs
  } catch (const epoch::Error& e) {
    std::fprintf(stderr, "epoch: error: %s\n", user_message(e.what()).c_str());
    return 2;
  }
  CLI::App app{"epoch: train, evaluate and benchmark deep-learning models on CPU and GPU"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("epoch ") + EPOCH_VERSION);
  int exit_code = 0;
  epoch::cli::add_train_command(app, exit_code);
  epoch::cli::add_eval_command(app, exit_code);
  epoch::cli::add_predict_command(app, exit_code);
  epoch::cli::add_models_command(app, exit_code);
  epoch::cli::add_info_command(app, exit_code);
  epoch::cli::add_bench_command(app, exit_code);
  epoch::cli::add_data_command(app, exit_code);
  epoch::cli::add_scale_command(app, exit_code);
  epoch::cli::add_study_command(app, exit_code);
  epoch::cli::add_report_command(app, exit_code);
  if (argc > 1 && argv[1][0] == '-') {  // an option before any command
    const std::string first = argv[1];
    if (first != "-h" && first != "--help" && first != "--help-all" && first != "--version") {
      std::string valid;
      for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
        valid += (valid.empty() ? "" : ", ") + sub->get_name();
      std::fprintf(stderr,
                   "epoch: error: unknown option '%s': epoch takes a command first (%s; see "
                   "epoch --help)\n",
                   epoch::printable(first).c_str(), valid.c_str());
      return 2;
    }
  }
  if (argc > 1 && argv[1][0] != '-') {
    std::string valid;
    bool known = false;
    for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
      known = known || sub->get_name() == argv[1];
      valid += (valid.empty() ? "" : ", ") + sub->get_name();
    }
    if (!known) {
      std::fprintf(stderr, "epoch: error: unknown command '%s' (valid: %s)\n",
                   epoch::printable(argv[1]).c_str(), valid.c_str());
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "epoch: error: %s (see epoch --help)\n", e.what());
    return 2;
  } catch (const epoch::dist::RanksDisagree& e) {
    return fail(1, "error", user_message(e.what()), true);
  } catch (const epoch::Error& e) {
    std::fflush(stdout);
    if (epoch::cli::stdout_is_terminal()) std::fputs("\n", stdout);  // end a progress bar
    return fail(1, "error", user_message(e.what()));
  } catch (const std::bad_alloc&) {
    return fail(1, "error",
                "out of memory (a smaller --batch-size, --threads or --workers needs less)");
  } catch (const std::exception& e) {
    return fail(3, "internal error", e.what());
  }
  return exit_code;
}
