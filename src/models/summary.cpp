// A model's layer table (see summary.h).
#include "epoch/models/summary.h"

#include <algorithm>
#include <cstdio>

#include "epoch/models/graph_model.h"
#include "epoch/models/model_file.h"

namespace epoch::models {
namespace {

std::int64_t count(const nn::NamedTensors& tensors) {
  std::int64_t n = 0;
  for (const auto& [name, t] : tensors) n += t.numel();
  return n;
}

LayerSummary row(const std::string& name, const nn::Module& m, const Shape& input) {
  LayerSummary r;
  r.name = name;
  r.type = m.describe();
  r.output = m.output_shape(input);
  r.parameters = count(m.parameters());
  r.non_trainable = count(m.buffers());
  r.flops = m.flops(input);
  return r;
}

/// "1,234,567".
std::string thousands(std::int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

std::string batch_shape(const Shape& s, bool channels_last) {
  std::string out = "(None";
  for (std::int64_t d : source_shape(s, channels_last)) out += ", " + std::to_string(d);
  return out + ")";
}

}  // namespace

Shape source_shape(const Shape& shape, bool channels_last) {
  if (!channels_last || shape.size() != 3) return shape;
  return {shape[1], shape[2], shape[0]};
}

ModelSummary summarize(const Model& model) {
  ModelSummary s;
  s.name = model.spec().name;
  s.input = model.spec().input;
  if (const RegisteredModel* m = registered_only(s.name)) {
    s.channels_last = m->description.channels_last;
    s.format = m->description.format;
    s.sha256 = m->sha256;
    if (m->description.input.size() == 1) s.input = m->description.input;
  }
  if (const auto* graph = dynamic_cast<const GraphModel*>(&model)) {
    for (const auto& [link, shape] : graph->link_inputs(model.spec().input))
      s.layers.push_back(row(link->first, *link->second, shape));
  } else if (dynamic_cast<const LayerStack*>(&model) != nullptr) {
    Shape shape = s.input;
    for (const auto& [name, child] : model.children()) {
      s.layers.push_back(row(name, *child, shape));
      shape = s.layers.back().output;
    }
  } else {
    s.layers.push_back(row(s.name, model, s.input));
  }
  s.output = model.output_shape(model.spec().input);
  for (const LayerSummary& l : s.layers) {
    s.trainable += l.parameters;
    s.non_trainable += l.non_trainable;
    s.flops += l.flops;
  }
  return s;
}

std::string format_summary(const ModelSummary& s) {
  std::vector<std::string> left, shapes, params;
  std::size_t w_left = std::string("Layer (type)").size(), w_shape = std::string("Output Shape").size(),
              w_param = std::string("Param #").size();
  for (const LayerSummary& l : s.layers) {
    left.push_back(l.name + " (" + l.type + ")");
    shapes.push_back(batch_shape(l.output, s.channels_last));
    params.push_back(thousands(l.parameters + l.non_trainable));
    w_left = std::max(w_left, left.back().size());
    w_shape = std::max(w_shape, shapes.back().size());
    w_param = std::max(w_param, params.back().size());
  }
  const std::size_t width = w_left + 2 + w_shape + 2 + w_param;
  std::string out = "Model: \"" + s.name + "\" (input " + batch_shape(s.input, s.channels_last) + ")\n";
  const auto line = [&](const std::string& a, const std::string& b, const std::string& c) {
    char buf[1024];
    std::snprintf(buf, sizeof buf, "%-*s  %-*s  %*s\n", static_cast<int>(w_left), a.c_str(),
                  static_cast<int>(w_shape), b.c_str(), static_cast<int>(w_param), c.c_str());
    return std::string(buf);
  };
  out += std::string(width, '_') + "\n";
  out += line("Layer (type)", "Output Shape", "Param #");
  out += std::string(width, '=') + "\n";
  for (std::size_t i = 0; i < s.layers.size(); ++i) out += line(left[i], shapes[i], params[i]);
  out += std::string(width, '=') + "\n";
  char mb[64];
  std::snprintf(mb, sizeof mb, "%.2f MB", static_cast<double>(s.total()) * 4.0 / (1024.0 * 1024.0));
  out += "Total params: " + thousands(s.total()) + " (" + mb + ")\n";
  out += "Trainable params: " + thousands(s.trainable) + "\n";
  out += "Non-trainable params: " + thousands(s.non_trainable) + "\n";
  out += "Forward FLOPs per sample: " + thousands(s.flops) + "\n";
  return out;
}

}  // namespace epoch::models
