// Flags from the settings table (config_flags.h).
#include "cli/config_flags.h"

#include <variant>

#include "cli/flag_checks.h"

namespace epoch::cli {
namespace {

CLI::Validator validator_for(const train::Bounds& b) {
  switch (b.kind) {
    case train::Bounds::Kind::positive:
      return positive();
    case train::Bounds::Kind::non_negative:
      return non_negative();
    case train::Bounds::Kind::range:
      return in_range(b.lo, b.hi);
    case train::Bounds::Kind::threads:
      return thread_count();
    case train::Bounds::Kind::seed:
      return unsigned_64();
    case train::Bounds::Kind::any:
      break;
  }
  return CLI::Validator();
}

}  // namespace

void add_config_flags(CLI::App& cmd, ConfigFlags& o,
                      const std::function<bool(const train::ConfigField&)>& wanted) {
  o.cmd = &cmd;
  for (const train::ConfigField& field : train::config_fields()) {
    if (field.flag.empty() || !wanted(field)) continue;
    CLI::Option* option = std::visit(
        [&](auto&& ref) -> CLI::Option* {
          using R = std::decay_t<decltype(ref)>;
          if constexpr (std::is_same_v<R, train::ChoiceRef>) {
            std::string& word = o.words[field.flag];
            word = ref.get();
            return cmd.add_option(field.flag, word, field.help);
          } else if constexpr (std::is_same_v<R, bool*>) {
            if (field.is_switch) return cmd.add_flag(field.flag, *ref, field.help);
            return cmd.add_option(field.flag, *ref, field.help);
          } else if constexpr (std::is_same_v<R, std::vector<float>*> ||
                               std::is_same_v<R, std::vector<std::string>*>) {
            return cmd.add_option(field.flag, *ref, field.help)->delimiter(',');
          } else {
            CLI::Option* opt = cmd.add_option(field.flag, *ref, field.help);
            if (field.bounds.kind != train::Bounds::Kind::any)
              opt->check(validator_for(field.bounds));
            return opt;
          }
        },
        field.ref(o.config));
    if (field.show_default) option->capture_default_str();
  }
}

void add_execution_flags(CLI::App& cmd, ConfigFlags& o, const std::vector<std::string>& except) {
  add_config_flags(cmd, o, [&except](const train::ConfigField& f) {
    if (!f.execution) return false;
    for (const std::string& flag : except)
      if (flag == f.flag) return false;
    return true;
  });
}

train::TrainConfig flag_values(const ConfigFlags& o) {
  train::TrainConfig f = o.config;
  for (const train::ConfigField& field : train::config_fields()) {
    const auto word = o.words.find(field.flag);
    if (word != o.words.end() && o.given(field.flag))
      train::set_choice(field, std::get<train::ChoiceRef>(field.ref(f)), word->second);
  }
  return f;
}

void apply_given_flags(const ConfigFlags& o, train::TrainConfig& c) {
  const train::TrainConfig f = flag_values(o);
  for (const train::ConfigField& field : train::config_fields())
    if (!field.flag.empty() && o.cmd->get_option_no_throw(field.flag) != nullptr &&
        o.given(field.flag))
      train::copy_field(field, f, c);
}

train::ExecutionConfig execution_from_flags(const ConfigFlags& o, train::ExecutionConfig base) {
  train::TrainConfig c;
  c.execution = base;
  apply_given_flags(o, c);
  return c.execution;
}

std::vector<std::string> given_execution_args(const ConfigFlags& o) {
  std::vector<std::string> args;
  for (const train::ConfigField& field : train::config_fields()) {
    if (!field.execution || field.flag.empty()) continue;
    const CLI::Option* option = o.cmd->get_option_no_throw(field.flag);
    if (option == nullptr || option->count() == 0) continue;
    args.push_back(field.flag);
    args.push_back(option->results().back());
  }
  return args;
}

void add_replaced_flag(CLI::App& cmd, const std::string& flag, const std::string& replacement,
                       bool takes_value) {
  const std::string why = "replaced by " + replacement + " (" + flag + " is no longer taken)";
  const auto refuse = [flag, why] { throw CLI::ValidationError(flag, why); };
  CLI::Option* option =
      takes_value
          ? cmd.add_option_function<std::string>(flag, [refuse](const std::string&) { refuse(); })
          : cmd.add_flag_callback(flag, refuse);
  option->group("");  // not in --help
}

}  // namespace epoch::cli
