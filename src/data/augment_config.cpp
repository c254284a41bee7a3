// AugmentConfig, the configuration of per-sample augmentation: which options are on, their
// validation, JSON form and one-line description.
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "epoch/data/augment.h"
#include "epoch/tensor/error.h"

namespace epoch::data {

const char* fill_mode_name(FillMode m) { return m == FillMode::constant ? "constant" : "nearest"; }

FillMode parse_fill_mode(const std::string& name) {
  if (name == "nearest") return FillMode::nearest;
  if (name == "constant") return FillMode::constant;
  EPOCH_THROW(ConfigError, "fill_mode \"", name, "\": expected nearest or constant");
}
namespace {

using Json = nlohmann::json;

std::string number(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

}  // namespace

bool AugmentConfig::geometric() const {
  return rotation_deg != 0 || width_shift != 0 || height_shift != 0 || shear != 0 || zoom != 0 ||
         horizontal_flip || vertical_flip || crop_padding >= 0 || random_resized_crop;
}

bool AugmentConfig::enabled() const {
  return geometric() || brightness != 0 || contrast_min != 1 || contrast_max != 1;
}

void AugmentConfig::validate() const {
  const auto range = [](const char* field, float v, float hi) {
    if (!(std::isfinite(v) && v >= 0 && v <= hi))
      EPOCH_THROW(ConfigError, "augment: ", field, " ", v, " must be in [0, ", hi, "]");
  };
  range("rotation_deg", rotation_deg, 360);
  range("width_shift", width_shift, 1e6f);
  range("height_shift", height_shift, 1e6f);
  range("shear", shear, 1e6f);
  range("brightness", brightness, 1e6f);
  if (!(std::isfinite(zoom) && zoom >= 0 && zoom < 1))
    EPOCH_THROW(ConfigError, "augment: zoom ", zoom, " must be in [0, 1)");
  if (crop_padding < -1 || crop_padding > 1'000'000)
    EPOCH_THROW(ConfigError, "augment: crop_padding ", crop_padding,
                " must be -1 (off) or a padding in [0, 1000000]");
  if (crop_padding >= 0 && random_resized_crop)
    EPOCH_THROW(ConfigError, "augment: crop_padding and random_resized_crop are exclusive");
  if (!(std::isfinite(rrc_scale_min) && std::isfinite(rrc_scale_max) && rrc_scale_min > 0 &&
        rrc_scale_min <= rrc_scale_max && rrc_scale_max <= 1))
    EPOCH_THROW(ConfigError, "augment: rrc_scale_min ", rrc_scale_min, " / rrc_scale_max ",
                rrc_scale_max, " must satisfy 0 < min <= max <= 1");
  if (!(std::isfinite(rrc_ratio_min) && std::isfinite(rrc_ratio_max) && rrc_ratio_min > 0 &&
        rrc_ratio_min <= rrc_ratio_max))
    EPOCH_THROW(ConfigError, "augment: rrc_ratio_min ", rrc_ratio_min, " / rrc_ratio_max ",
                rrc_ratio_max, " must satisfy 0 < min <= max");
  if (fill_mode != FillMode::nearest && fill_mode != FillMode::constant)
    EPOCH_THROW(ConfigError, "augment: fill_mode ", static_cast<int>(fill_mode),
                " is not nearest or constant");
  if (!(std::isfinite(contrast_min) && std::isfinite(contrast_max) && contrast_min >= 0 &&
        contrast_min <= contrast_max))
    EPOCH_THROW(ConfigError, "augment: contrast_min ", contrast_min, " / contrast_max ",
                contrast_max, " must satisfy 0 <= min <= max");
}

nlohmann::json AugmentConfig::to_json() const {
  Json j;
  j["rotation_deg"] = rotation_deg;
  j["width_shift"] = width_shift;
  j["height_shift"] = height_shift;
  j["shear"] = shear;
  j["zoom"] = zoom;
  j["horizontal_flip"] = horizontal_flip;
  j["vertical_flip"] = vertical_flip;
  j["crop_padding"] = crop_padding;
  j["random_resized_crop"] = random_resized_crop;
  j["rrc_scale_min"] = rrc_scale_min;
  j["rrc_scale_max"] = rrc_scale_max;
  j["rrc_ratio_min"] = rrc_ratio_min;
  j["rrc_ratio_max"] = rrc_ratio_max;
  j["fill_mode"] = fill_mode_name(fill_mode);
  j["brightness"] = brightness;
  j["contrast_min"] = contrast_min;
  j["contrast_max"] = contrast_max;
  return j;
}

AugmentConfig AugmentConfig::from_json(const nlohmann::json& j) {
  if (!j.is_object()) EPOCH_THROW(ConfigError, "augment config is not a JSON object: ", j.dump());
  AugmentConfig cfg;
  const std::pair<const char*, float*> floats[] = {{"rotation_deg", &cfg.rotation_deg},
                                                   {"width_shift", &cfg.width_shift},
                                                   {"height_shift", &cfg.height_shift},
                                                   {"shear", &cfg.shear},
                                                   {"zoom", &cfg.zoom},
                                                   {"rrc_scale_min", &cfg.rrc_scale_min},
                                                   {"rrc_scale_max", &cfg.rrc_scale_max},
                                                   {"rrc_ratio_min", &cfg.rrc_ratio_min},
                                                   {"rrc_ratio_max", &cfg.rrc_ratio_max},
                                                   {"brightness", &cfg.brightness},
                                                   {"contrast_min", &cfg.contrast_min},
                                                   {"contrast_max", &cfg.contrast_max}};
  const std::pair<const char*, bool*> bools[] = {{"horizontal_flip", &cfg.horizontal_flip},
                                                 {"vertical_flip", &cfg.vertical_flip},
                                                 {"random_resized_crop", &cfg.random_resized_crop}};
  for (const auto& [key, value] : j.items()) {
    bool known = false;
    for (const auto& [name, field] : floats) {
      if (key != name) continue;
      if (!value.is_number())
        EPOCH_THROW(ConfigError, "augment config: \"", key, "\" is not a number: ", value.dump());
      *field = value.get<float>();
      known = true;
    }
    for (const auto& [name, field] : bools) {
      if (key != name) continue;
      if (!value.is_boolean())
        EPOCH_THROW(ConfigError, "augment config: \"", key, "\" is not a boolean: ", value.dump());
      *field = value.get<bool>();
      known = true;
    }
    if (key == "crop_padding") {
      if (!value.is_number_integer())
        EPOCH_THROW(ConfigError,
                    "augment config: \"crop_padding\" is not an integer: ", value.dump());
      cfg.crop_padding = value.get<std::int64_t>();
      known = true;
    } else if (key == "fill_mode") {
      if (!value.is_string())
        EPOCH_THROW(ConfigError, "augment config: \"fill_mode\" is not a string: ", value.dump());
      cfg.fill_mode = parse_fill_mode(value.get<std::string>());
      known = true;
    }
    if (!known) EPOCH_THROW(ConfigError, "augment config: unknown field \"", key, "\"");
  }
  cfg.validate();
  return cfg;
}

std::string AugmentConfig::describe() const {
  std::vector<std::string> parts;
  if (crop_padding >= 0) parts.push_back("random crop (padding " + number(crop_padding) + ")");
  if (random_resized_crop)
    parts.push_back("random resized crop (scale " + number(rrc_scale_min) + "-" +
                    number(rrc_scale_max) + ", ratio " + number(rrc_ratio_min) + "-" +
                    number(rrc_ratio_max) + ")");
  if (rotation_deg != 0) parts.push_back("rotation " + number(rotation_deg) + " deg");
  if (width_shift != 0) parts.push_back("width shift " + number(width_shift));
  if (height_shift != 0) parts.push_back("height shift " + number(height_shift));
  if (shear != 0) parts.push_back("shear " + number(shear));
  if (zoom != 0) parts.push_back("zoom " + number(zoom));
  if (horizontal_flip) parts.push_back("horizontal flip");
  if (vertical_flip) parts.push_back("vertical flip");
  if (geometric() && fill_mode != FillMode::nearest)
    parts.push_back(std::string("fill ") + fill_mode_name(fill_mode));
  if (brightness != 0) parts.push_back("brightness " + number(brightness));
  if (contrast_min != 1 || contrast_max != 1)
    parts.push_back("contrast " + number(contrast_min) + "-" + number(contrast_max));
  if (parts.empty()) return "none";
  std::string out = parts[0];
  for (std::size_t i = 1; i < parts.size(); ++i) out += ", " + parts[i];
  return out;
}

}  // namespace epoch::data
