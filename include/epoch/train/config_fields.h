// Every setting of a training run described once: its dotted JSON key (config.json and the
// checkpoint's "config"), its `epoch train` flag and help, its bounds or choices, and whether a
// resumed run may change it. TrainConfig's JSON, the resume comparison and the command-line
// flags are all generated from this one table, so a new setting is one entry.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "epoch/train/train_config.h"

namespace epoch::train {

/// A setting held as an enum (or a word from a fixed list): read and written by name.
struct ChoiceRef {
  std::function<std::string()> get;
  std::function<void(const std::string&)> set;
};

/// A reference to one setting inside a TrainConfig.
using FieldRef =
    std::variant<bool*, int*, std::int64_t*, std::uint64_t*, float*, double*, std::string*,
                 std::vector<float>*, std::vector<std::string>*, ChoiceRef>;

/// What values a numeric setting takes (checked by from_json and by the flags alike).
struct Bounds {
  enum class Kind { any, positive, non_negative, range, threads, seed };
  Kind kind = Kind::any;
  double lo = 0.0, hi = 0.0;  // range: [lo, hi]
  static Bounds positive() { return {Kind::positive}; }
  static Bounds non_negative() { return {Kind::non_negative}; }
  static Bounds range(double lo, double hi) { return {Kind::range, lo, hi}; }
  static Bounds threads() { return {Kind::threads}; }
  static Bounds seed() { return {Kind::seed}; }
};

struct ConfigField {
  std::string key;   // dotted JSON key: "epochs", "optimizer.lr"
  std::string flag;  // "--epochs"; empty when no flag sets the field alone
  std::string help;
  FieldRef (*ref)(TrainConfig&) = nullptr;
  Bounds bounds;
  std::vector<std::string> choices;  // the words of a ChoiceRef field
  bool stored = true;                // part of the run (config.json, checkpoints); else how it runs
  bool resume_may_change = false;    // a resumed run may give another value
  bool show_default = false;         // the flag's help shows the default
  bool is_switch = false;            // the flag takes no value (given: true)
  bool ranks_may_differ = false;     // data-parallel ranks may hold other values (threads, ...)
  bool execution = false;            // an ExecutionConfig setting: every command takes its flag
};

/// The table, in the order `epoch train --help` lists the flags.
const std::vector<ConfigField>& config_fields();
/// The field with this key (InvalidArgument when there is none).
const ConfigField& config_field(const std::string& key);

/// The stored fields as nested JSON ({"optimizer": {"lr": ...}, ...}).
nlohmann::json config_to_json(const TrainConfig& config);
/// A configuration from config_to_json's JSON: fields it lacks (runs written by older versions)
/// keep their defaults; ConfigError naming the key for a wrong type, a value out of bounds, an
/// unknown choice or an unknown key.
TrainConfig config_from_json(const nlohmann::json& j);

/// The fields every data-parallel rank must hold alike (all but those marked
/// ranks_may_differ), as (flag or key, value as JSON text) pairs in the table's order.
std::vector<std::pair<std::string, std::string>> fields_ranks_share(const TrainConfig& config);

/// One field's value as JSON (for messages and comparisons).
nlohmann::json field_value(const ConfigField& field, const TrainConfig& config);
/// Sets a choice field from a word (ConfigError naming the flag, or the key, and the choices
/// for another word).
void set_choice(const ConfigField& field, const ChoiceRef& ref, const std::string& word);
/// Sets the field `key` (a dotted key, as config.json's) from a JSON value, checked as
/// config_from_json checks it; "optimizer.name" also resets the optimizer's settings to that
/// optimizer's defaults. InvalidArgument for an unknown key.
void apply_setting(TrainConfig& config, const std::string& key, const nlohmann::json& value);
/// Copies one field's value from `from` to `to`.
void copy_field(const ConfigField& field, const TrainConfig& from, TrainConfig& to);

}  // namespace epoch::train
