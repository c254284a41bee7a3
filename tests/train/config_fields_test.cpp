// The settings table: every stored field survives config.json and back with a value other
// than its default, nothing is saved that the table does not describe, and bad stored values
// are refused naming the key.
#include "epoch/train/config_fields.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

namespace epoch::train {
namespace {

using json = nlohmann::json;

/// A value of the field's type that differs from `v` (and fits the field's bounds).
json another_value(const ConfigField& f, const json& v) {
  if (!f.choices.empty()) {
    for (const std::string& c : f.choices)
      if (c != v.get<std::string>()) return c;
  }
  if (v.is_boolean()) return !v.get<bool>();
  if (v.is_string()) return v.get<std::string>() + "-x";
  if (v.is_array()) {
    if (f.key == "optimizer.decay_only") return json{"fc1.weight"};
    if (f.key == "optimizer.lr_mult") return json{"fc1.bias=2"};
    return json{0.25, 0.5};
  }
  if (v.is_number_unsigned()) return v.get<std::uint64_t>() + 7;
  if (v.is_number_integer()) {
    const std::int64_t i = v.get<std::int64_t>();
    if (f.bounds.kind == Bounds::Kind::range && i + 1 > f.bounds.hi) return i - 1;
    return i + 1;
  }
  const double d = v.get<double>();
  const double mid = (f.bounds.lo + f.bounds.hi) / 2;
  const double other = f.bounds.kind != Bounds::Kind::range ? d + 0.375
                       : mid == d                           ? f.bounds.lo
                                                            : mid;
  return static_cast<double>(static_cast<float>(other));  // exact in the float fields too
}

TEST(ConfigFields, EveryStoredFieldRoundTripsWithAValueOtherThanItsDefault) {
  int checked = 0;
  for (const ConfigField& f : config_fields()) {
    if (!f.stored) continue;
    SCOPED_TRACE(f.key);
    TrainConfig c;
    const json before = field_value(f, c);
    const json changed = another_value(f, before);
    ASSERT_NE(changed, before);
    TrainConfig source;
    TrainConfig with;  // the same configuration with only this field changed
    json j = source.to_json();
    const std::size_t dot = f.key.find('.');
    if (dot == std::string::npos)
      j[f.key] = changed;
    else
      j[f.key.substr(0, dot)][f.key.substr(dot + 1)] = changed;
    with = TrainConfig::from_json(j);
    EXPECT_EQ(field_value(f, with), changed);
    EXPECT_EQ(TrainConfig::from_json(with.to_json()).to_json(), with.to_json());
    // Every other field keeps its value.
    for (const ConfigField& g : config_fields()) {
      if (g.stored && g.key != f.key) {
        EXPECT_EQ(field_value(g, with), field_value(g, source)) << g.key;
      }
    }
    ++checked;
  }
  EXPECT_GE(checked, 50);
}

// The settings that once were never saved (a resumed run could differ from the original).
TEST(ConfigFields, RmspropCenteredAndWarmUpStartFactorAreStored) {
  TrainConfig c;
  c.optimizer = optim::optimizer_defaults("rmsprop");
  c.optimizer.centered = true;
  c.schedule.warmup_start_factor = 0.25f;
  const TrainConfig back = TrainConfig::from_json(c.to_json());
  EXPECT_TRUE(back.optimizer.centered);
  EXPECT_EQ(back.schedule.warmup_start_factor, 0.25f);
}

TEST(ConfigFields, TheJsonHoldsExactlyTheStoredFields) {
  std::set<std::string> described, written;
  for (const ConfigField& f : config_fields())
    if (f.stored) described.insert(f.key);
  const json j = TrainConfig().to_json();
  for (const auto& [key, value] : j.items()) {
    if (value.is_object())
      for (const auto& [name, inner] : value.items()) written.insert(key + "." + name);
    else
      written.insert(key);
  }
  EXPECT_EQ(written, described);
}

TEST(ConfigFields, KeysAndFlagsAreUnique) {
  std::set<std::string> keys, flags;
  for (const ConfigField& f : config_fields()) {
    EXPECT_TRUE(keys.insert(f.key).second) << f.key;
    if (!f.flag.empty()) {
      EXPECT_TRUE(flags.insert(f.flag).second) << f.flag;
      EXPECT_FALSE(f.help.empty()) << f.flag;
    }
  }
}

TEST(ConfigFields, OlderRunsWithoutNewerFieldsKeepTheDefaults) {
  json j = TrainConfig().to_json();
  j["optimizer"].erase("centered");
  j["schedule"].erase("warmup_start_factor");
  j.erase("keep_checkpoints");
  const TrainConfig c = TrainConfig::from_json(j);
  EXPECT_FALSE(c.optimizer.centered);
  EXPECT_EQ(c.run.keep_checkpoints, 3);
}

TEST(ConfigFields, BadStoredValuesAreRefusedNamingTheKey) {
  const auto refused = [](json j, const std::string& needle) {
    try {
      (void)TrainConfig::from_json(j);
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      return;
    }
    ADD_FAILURE() << "accepted " << j.dump();
  };
  json base = TrainConfig().to_json();
  json j = base;
  j["epochs"] = "three";
  refused(j, "epochs");
  j = base;
  j["epochs"] = 0;
  refused(j, "epochs");
  j = base;
  j["optimizer"]["lr"] = -1.0;
  refused(j, "optimizer.lr");
  j = base;
  j["determinism"] = "sloppy";
  refused(j, "sloppy");
  j = base;
  j["schedule"]["nmae"] = "cosine";
  refused(j, "schedule.nmae");
  j = base;
  j["threads"] = 5000;
  refused(j, "threads");
  j = base;
  j["seed"] = -3;
  refused(j, "seed");
  refused(json::array(), "not a JSON object");
}

TEST(ConfigFields, ResumeMayChangeComesFromTheTable) {
  EXPECT_TRUE(resume_may_change("epochs"));
  EXPECT_TRUE(resume_may_change("threads"));
  EXPECT_TRUE(resume_may_change("conv_algorithm"));
  EXPECT_FALSE(resume_may_change("optimizer.lr"));
  EXPECT_FALSE(resume_may_change("seed"));
}

}  // namespace
}  // namespace epoch::train
