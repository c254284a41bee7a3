// Preprocessing: the u8 -> f32 input transform a model was trained with, its JSON form (kept in
// checkpoint metadata) and the single function that applies it to a sample.
#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "epoch/data/dataset.h"

namespace epoch::data {
namespace {

using Json = nlohmann::json;

std::vector<float> float_array(const Json& j, const char* field) {
  if (!j.contains(field)) return {};
  const Json& a = j[field];
  if (!a.is_array())
    EPOCH_THROW(ConfigError, "preprocessing JSON: \"", field, "\" is not an array");
  std::vector<float> out;
  for (const Json& v : a) {
    if (!v.is_number())
      EPOCH_THROW(ConfigError, "preprocessing JSON: \"", field, "\" holds a non-number ", v.dump());
    out.push_back(v.get<float>());
  }
  return out;
}

std::int64_t int_field(const Json& j, const char* field) {
  if (!j.contains(field) || !j[field].is_number_integer())
    EPOCH_THROW(ConfigError, "preprocessing JSON: \"", field, "\" missing or not an integer");
  return j[field].get<std::int64_t>();
}

}  // namespace

void Preprocessing::validate() const {
  EPOCH_CHECK(channels > 0 && height > 0 && width > 0, "preprocessing: input size (", channels,
              ", ", height, ", ", width, ") must be positive");
  EPOCH_CHECK(std::isfinite(rescale), "preprocessing: rescale ", rescale, " is not finite");
  const auto c = static_cast<std::size_t>(channels);
  EPOCH_CHECK(mean.empty() || mean.size() == c, "preprocessing: ", mean.size(), " means for ",
              channels, " channels");
  EPOCH_CHECK(std.empty() || std.size() == c, "preprocessing: ", std.size(), " stds for ", channels,
              " channels");
  for (float m : mean) EPOCH_CHECK(std::isfinite(m), "preprocessing: mean ", m, " is not finite");
  for (float s : std)
    EPOCH_CHECK(std::isfinite(s) && s != 0.0f, "preprocessing: std ", s,
                " must be finite, non-zero");
}

const char* resize_name(Resize r) {
  switch (r) {
    case Resize::stretch:
      return "stretch";
    case Resize::center_crop:
      return "center_crop";
    case Resize::resize_center_crop:
      return "resize_center_crop";
  }
  return "stretch";
}

Resize parse_resize(const std::string& name) {
  for (Resize r : {Resize::stretch, Resize::center_crop, Resize::resize_center_crop})
    if (name == resize_name(r)) return r;
  EPOCH_THROW(ConfigError, "resize \"", name,
              "\": expected stretch, center_crop or resize_center_crop");
}

std::string Preprocessing::to_json() const {
  Json j;
  j["rescale"] = rescale;
  j["mean"] = mean;
  j["std"] = std;
  j["channels"] = channels;
  j["height"] = height;
  j["width"] = width;
  j["resize"] = resize_name(resize);
  j["standardize"] = standardize;
  return j.dump();
}

Preprocessing Preprocessing::from_json(const std::string& text) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::exception& e) {
    EPOCH_THROW(ConfigError, "preprocessing JSON is malformed: ", e.what());
  }
  if (!j.is_object()) EPOCH_THROW(ConfigError, "preprocessing JSON is not an object: ", text);
  Preprocessing p;
  if (!j.contains("rescale") || !j["rescale"].is_number())
    EPOCH_THROW(ConfigError, "preprocessing JSON: \"rescale\" missing or not a number");
  p.rescale = j["rescale"].get<float>();
  p.mean = float_array(j, "mean");
  p.std = float_array(j, "std");
  p.channels = int_field(j, "channels");
  p.height = int_field(j, "height");
  p.width = int_field(j, "width");
  if (j.contains("resize")) {
    if (!j["resize"].is_string())
      EPOCH_THROW(ConfigError, "preprocessing JSON: \"resize\" is not a string");
    p.resize = parse_resize(j["resize"].get<std::string>());
  }
  if (j.contains("standardize")) {
    if (!j["standardize"].is_boolean())
      EPOCH_THROW(ConfigError, "preprocessing JSON: \"standardize\" is not a boolean");
    p.standardize = j["standardize"].get<bool>();
  }
  try {
    p.validate();
  } catch (const InvalidArgument& e) {
    EPOCH_THROW(ConfigError, "preprocessing JSON: ", e.what());
  }
  return p;
}

Preprocessing Preprocessing::for_dataset(const ImageDataset& dataset, bool normalize) {
  EPOCH_CHECK(
      dataset.images.defined() && dataset.images.ndim() == 4 && dataset.images.dtype() == DType::u8,
      "Preprocessing::for_dataset: images must be (N, C, H, W) u8");
  Preprocessing p;
  p.channels = dataset.channels();
  p.height = dataset.height();
  p.width = dataset.width();
  if (!normalize || dataset.size() == 0) return p;
  const Tensor images = dataset.images.to(Device::cpu()).contiguous();
  const std::uint8_t* px = images.data<std::uint8_t>();  // (N, C, H, W)
  const std::int64_t n = dataset.size(), plane = p.height * p.width;
  for (std::int64_t c = 0; c < p.channels; ++c) {
    // Integer sums are exact, so the reduction order (and thread count) cannot matter.
    std::uint64_t sum = 0, sum_sq = 0;
#pragma omp parallel for reduction(+ : sum, sum_sq) schedule(static)
    for (std::int64_t i = 0; i < n; ++i) {
      const std::uint8_t* src = px + (i * p.channels + c) * plane;
      std::uint64_t s = 0, ss = 0;
      for (std::int64_t k = 0; k < plane; ++k) {
        s += src[k];
        ss += std::uint64_t{src[k]} * src[k];
      }
      sum += s;
      sum_sq += ss;
    }
    const double count = static_cast<double>(n * plane);
    const double mean = static_cast<double>(sum) / count;
    const double var = std::max(0.0, static_cast<double>(sum_sq) / count - mean * mean);
    const double sd = std::sqrt(var);
    p.mean.push_back(static_cast<float>(mean * p.rescale));
    p.std.push_back(sd > 0.0 ? static_cast<float>(sd * p.rescale) : 1.0f);
  }
  return p;
}

void finish_sample(const Preprocessing& p, float* x) {
  const std::int64_t plane = p.height * p.width, n = p.channels * plane;
  if (p.standardize) {
    // Eight interleaved double partial sums in a fixed pattern (vectorizable, and the same
    // result on every thread count and worker), then combined in a fixed order.
    constexpr int kLanes = 8;
    double part[kLanes] = {}, part_sq[kLanes] = {};
    const std::int64_t body = n - n % kLanes;
    for (std::int64_t k = 0; k < body; k += kLanes)
      for (int l = 0; l < kLanes; ++l) part[l] += x[k + l];
    for (std::int64_t k = body; k < n; ++k) part[k - body] += x[k];
    double sum = 0.0;
    for (int l = 0; l < kLanes; ++l) sum += part[l];
    const double mean = sum / static_cast<double>(n);
    for (std::int64_t k = 0; k < body; k += kLanes)
      for (int l = 0; l < kLanes; ++l) {
        const double d = x[k + l] - mean;
        part_sq[l] += d * d;
      }
    for (std::int64_t k = body; k < n; ++k) {
      const double d = x[k] - mean;
      part_sq[k - body] += d * d;
    }
    double sum_sq = 0.0;
    for (int l = 0; l < kLanes; ++l) sum_sq += part_sq[l];
    const double sd = std::max(std::sqrt(sum_sq / static_cast<double>(n)),
                               1.0 / std::sqrt(static_cast<double>(n)));
    const float m = static_cast<float>(mean), inv = static_cast<float>(1.0 / sd);
    for (std::int64_t k = 0; k < n; ++k) x[k] = (x[k] - m) * inv;
  }
  if (p.mean.empty() && p.std.empty()) return;
  for (std::int64_t c = 0; c < p.channels; ++c) {
    const float m = p.mean.empty() ? 0.0f : p.mean[static_cast<std::size_t>(c)];
    const float s = p.std.empty() ? 1.0f : p.std[static_cast<std::size_t>(c)];
    float* v = x + c * plane;  // (H, W)
    for (std::int64_t k = 0; k < plane; ++k) v[k] = (v[k] - m) / s;
  }
}

void preprocess_sample(const Preprocessing& p, const std::uint8_t* src, float* dst) {
  // Locals, so the compiler knows the stores into dst cannot change them (and vectorizes).
  const std::int64_t plane = p.height * p.width;
  const float rescale = p.rescale;
  if (p.standardize) {
    for (std::int64_t k = 0; k < p.channels * plane; ++k)
      dst[k] = static_cast<float>(src[k]) * rescale;
    finish_sample(p, dst);
    return;
  }
  for (std::int64_t c = 0; c < p.channels; ++c) {
    const float m = p.mean.empty() ? 0.0f : p.mean[static_cast<std::size_t>(c)];
    const float s = p.std.empty() ? 1.0f : p.std[static_cast<std::size_t>(c)];
    const std::uint8_t* in = src + c * plane;  // (H, W)
    float* out = dst + c * plane;              // (H, W)
    for (std::int64_t k = 0; k < plane; ++k) out[k] = (static_cast<float>(in[k]) * rescale - m) / s;
  }
}

}  // namespace epoch::data
