// Flags generated from the settings table (train/config_fields.h): one per field a command
// takes, with the field's help, bounds and choices. `epoch train` takes them all; eval,
// predict, bench, study and scale take the execution settings' flags (ConfigField::execution)
// with the same names, words and checks.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <map>
#include <string>

#include "epoch/train/config_fields.h"
#include "epoch/train/train_config.h"

namespace epoch::cli {

/// The values of a command's table flags as given.
struct ConfigFlags {
  CLI::App* cmd = nullptr;
  train::TrainConfig config;  // the flags' values; given() says which were given
  /// The words given to choice flags (--determinism, --optimizer, ...), by flag.
  std::map<std::string, std::string> words;
  bool given(const std::string& flag) const { return cmd->count(flag) > 0; }
};

/// Adds one flag to `cmd` per field with a flag that `wanted` accepts, bound to `o`.
void add_config_flags(CLI::App& cmd, ConfigFlags& o,
                      const std::function<bool(const train::ConfigField&)>& wanted);

/// The execution settings' flags (--device, --threads, --determinism, --perturb,
/// --perturb-seed, --conv-algo, --cudnn), less those named in `except`.
void add_execution_flags(CLI::App& cmd, ConfigFlags& o, const std::vector<std::string>& except = {});

/// The flags' values with the choice words given turned into settings (ConfigError naming the
/// flag and its choices for a word it does not take).
train::TrainConfig flag_values(const ConfigFlags& o);

/// Copies onto `c` every table setting whose flag was given.
void apply_given_flags(const ConfigFlags& o, train::TrainConfig& c);

/// `base`'s execution settings with the execution flags given on top: what eval and predict
/// run a checkpoint with, and what bench, study and scale start from.
train::ExecutionConfig execution_from_flags(const ConfigFlags& o, train::ExecutionConfig base);

/// The execution flags given, as command-line words ("--determinism", "strict", ...): what a
/// command that runs others (scale, through bench) passes on.
std::vector<std::string> given_execution_args(const ConfigFlags& o);

/// A flag an earlier version took (an option taking a value, or a switch), refused with one
/// line naming what replaced it. Hidden from --help.
void add_replaced_flag(CLI::App& cmd, const std::string& flag, const std::string& replacement,
                       bool takes_value);

}  // namespace epoch::cli
