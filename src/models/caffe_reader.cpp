// Caffe's NetParameter and SolverParameter, field by field, into the description. Blobs are
// tracked by name: each top names the layer that last wrote it (an in-place ReLU takes its
// bottom's name over), so layers' inputs are the layers that made their bottoms.
#include "epoch/models/caffe_reader.h"

#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "epoch/models/text_format.h"
#include "epoch/tensor/error.h"

namespace epoch::models {
namespace {

using nlohmann::json;

/// V1's enum layer types, by the names of today's.
const std::map<std::string, std::string>& v1_types() {
  static const std::map<std::string, std::string> m = {
      {"DATA", "Data"},           {"IMAGE_DATA", "ImageData"},     {"MEMORY_DATA", "MemoryData"},
      {"HDF5_DATA", "HDF5Data"},  {"DUMMY_DATA", "DummyData"},     {"CONVOLUTION", "Convolution"},
      {"POOLING", "Pooling"},     {"INNER_PRODUCT", "InnerProduct"}, {"RELU", "ReLU"},
      {"LRN", "LRN"},             {"DROPOUT", "Dropout"},          {"SOFTMAX", "Softmax"},
      {"SOFTMAX_LOSS", "SoftmaxWithLoss"}, {"ACCURACY", "Accuracy"}, {"CONCAT", "Concat"},
      {"ELTWISE", "Eltwise"},     {"FLATTEN", "Flatten"},          {"SIGMOID", "Sigmoid"},
      {"TANH", "TanH"},           {"SPLIT", "Split"},              {"SILENCE", "Silence"}};
  return m;
}

class NetReader {
 public:
  NetReader(const std::string& file, const CaffeOptions& options)
      : file_(file), options_(options) {}

  template <typename... Args>
  [[noreturn]] void fail(const Args&... args) const {
    std::ostringstream os;
    os << file_ << ": ";
    (os << ... << args);
    throw ConfigError(os.str());
  }

  ModelDescription read(const TextMessage& net) {
    d_.name = file_;
    d_.file = file_;
    d_.format = "caffe";
    const TextField* name = net.find("name");
    d_.summary = "Caffe net '" + (name != nullptr ? name->value : std::string("net")) + "'";
    d_.task = Task::classification;
    static const std::set<std::string> known = {"name", "layer", "layers", "input", "input_dim",
                                                "input_shape", "force_backward", "state"};
    for (const TextField& f : net.fields)
      if (known.count(f.name) == 0) ignored_.insert(f.name);
    net_input(net);
    const auto layers = net.all("layer");
    const auto v1 = net.all("layers");
    if (!layers.empty() && !v1.empty()) fail("the net mixes layer { } and layers { }");
    for (const TextField* f : layers.empty() ? v1 : layers) {
      if (f->message == nullptr) fail("line ", f->line, ": ", f->name, " must be a message");
      layer(*f->message, !v1.empty(), f->line);
    }
    if (d_.input.empty())
      fail("the net gives its input no shape (a Data layer without crop_size): pass "
           "--input-shape C,H,W");
    if (output_blob_.empty()) {
      if (d_.layers.empty()) fail("the net has no layers epoch trains");
      output_blob_ = last_top_;
    }
    const auto out = blobs_.find(output_blob_);
    if (out == blobs_.end() || out->second == d_.input_name)
      fail("the loss's input '", output_blob_, "' is made by no layer");
    // The loss on the last layer's output is the model's (of weight 1); the others are
    // auxiliary classifiers.
    bool output_loss = false;
    for (const auto& [layer, weight, where] : losses_) {
      if (layer != d_.layers.back().name) {
        if (weight > 0.0) d_.aux_losses.emplace_back(layer, weight);
        continue;
      }
      if (weight != 1.0)
        fail(where, " loss_weight ", weight, " on the output is not supported (1)");
      output_loss = true;
    }
    if (losses_.size() > 1 && !output_loss)
      fail("no loss layer takes the last layer's output (", d_.layers.back().name, ")");
    if (losses_.size() <= 1 && out->second != d_.layers.back().name) {
      fail("the output '", output_blob_, "' is not made by the last layer (", d_.layers.back().name,
           ")");
    }
    // A BatchNorm without a Scale after it normalizes alone: no scale and shift to learn.
    for (LayerNode& n : d_.layers)
      if (const auto bn = batch_norms_.find(n.name); bn != batch_norms_.end() && !bn->second)
        n.attrs["affine"] = false;
    if (!decay_mults_.empty()) {
      bool all = true;
      std::vector<std::string> decayed;
      for (const auto& [param, mult] : decay_mults_) {
        if (mult != 0.0 && mult != 1.0)
          warn(param + ": decay_mult " + number_text(mult) + " is taken as 1");
        if (mult != 0.0) decayed.push_back(param);
        all = all && mult != 0.0;
      }
      if (!all) d_.recipe.set("optimizer.decay_only", decayed);
    }
    if (!lr_mults_.empty()) d_.recipe.set("optimizer.lr_mult", lr_mults_);
    if (!ignored_.empty()) {
      std::string list;
      for (const std::string& f : ignored_) list += (list.empty() ? "" : ", ") + f;
      d_.warnings.push_back(file_ + ": ignored fields epoch does not use: " + list);
    }
    return d_;
  }

 private:
  static std::string number_text(double v) {
    std::ostringstream os;
    os << v;
    return os.str();
  }

  void warn(const std::string& what) { d_.warnings.push_back(file_ + ": " + what); }

  double number(const TextField& f, const std::string& where) const {
    if (f.message != nullptr || f.quoted) fail(where, ": ", f.name, " must be a number");
    try {
      std::size_t used = 0;
      const double v = std::stod(f.value, &used);
      if (used != f.value.size() || !std::isfinite(v)) throw std::invalid_argument("");
      return v;
    } catch (const std::exception&) {
      fail(where, ": ", f.name, " '", f.value, "' is not a number");
    }
  }

  std::int64_t integer(const TextField& f, const std::string& where) const {
    const double v = number(f, where);
    if (v != std::floor(v) || std::fabs(v) > 1e15)
      fail(where, ": ", f.name, " ", f.value, " is not an integer");
    return static_cast<std::int64_t>(v);
  }

  double number_or(const TextMessage* m, const char* key, double fallback, const std::string& where) const {
    if (m == nullptr) return fallback;
    const TextField* f = m->find(key);
    return f == nullptr ? fallback : number(*f, where);
  }

  std::string word_or(const TextMessage* m, const char* key, const std::string& fallback) const {
    if (m == nullptr) return fallback;
    const TextField* f = m->find(key);
    return f == nullptr ? fallback : f->value;
  }

  const TextMessage* sub(const TextMessage& m, const char* key) const {
    const TextField* f = m.find(key);
    return f == nullptr ? nullptr : f->message.get();
  }

  /// Net-level `input` with input_dim x4 or input_shape { dim ... }.
  void net_input(const TextMessage& net) {
    const TextField* input = net.find("input");
    if (input == nullptr) return;
    Shape dims;
    for (const TextField* f : net.all("input_dim")) dims.push_back(integer(*f, "input_dim"));
    if (const TextMessage* shape = sub(net, "input_shape"))
      for (const TextField* f : shape->all("dim")) dims.push_back(integer(*f, "input_shape"));
    set_input(input->value, dims, "input");
  }

  /// (N, C, H, W) dims, or --input-shape.
  void set_input(const std::string& blob, const Shape& nchw, const std::string& where) {
    if (!d_.input.empty()) fail(where, ": a second input (epoch trains nets with one)");
    Shape s = options_.input_shape;
    if (s.empty()) {
      if (nchw.size() != 4) fail(where, ": the input's shape must have 4 dimensions (N, C, H, W)");
      s = {nchw[1], nchw[2], nchw[3]};
    }
    d_.input = s;
    d_.input_name = blob;
    blobs_[blob] = blob;
    flat_[blob] = false;
  }

  std::string input_of(const std::string& blob, const std::string& layer) const {
    const auto it = blobs_.find(blob);
    if (it == blobs_.end()) fail(layer, ": bottom '", blob, "' is made by no earlier layer");
    return it->second;
  }

  bool in_train_phase(const TextMessage& l, const std::string& name) const {
    for (const TextField* f : l.all("include")) {
      const std::string phase = f->message ? word_or(f->message.get(), "phase", "") : "";
      if (phase == "TEST") return false;
      if (f->message && (f->message->find("stage") || f->message->find("min_level")))
        fail(name, ": include rules by stage or level are not supported");
    }
    for (const TextField* f : l.all("exclude"))
      if (f->message && word_or(f->message.get(), "phase", "") == "TRAIN") return false;
    return true;
  }

  json filler(const TextMessage* f, const std::string& where) {
    if (f == nullptr) return json{{"kind", "constant"}, {"value", 0.0}};  // Caffe's default
    const std::string type = word_or(f, "type", "constant");
    if (f->find("sparse") != nullptr) fail(where, ": a sparse gaussian filler is not supported");
    const std::string norm = word_or(f, "variance_norm", "FAN_IN");
    const char* fan = norm == "FAN_IN" ? "in" : norm == "FAN_OUT" ? "out" : "average";
    if (type == "constant") return json{{"kind", "constant"}, {"value", number_or(f, "value", 0.0, where)}};
    if (type == "gaussian")
      return json{{"kind", "normal"}, {"mean", number_or(f, "mean", 0.0, where)},
                  {"std", number_or(f, "std", 1.0, where)}};
    if (type == "uniform")
      return json{{"kind", "uniform"}, {"lo", number_or(f, "min", 0.0, where)},
                  {"hi", number_or(f, "max", 1.0, where)}};
    if (type == "xavier")
      return json{{"kind", "variance_scaling"}, {"scale", 1.0}, {"fan", fan}, {"distribution", "uniform"}};
    if (type == "msra")
      return json{{"kind", "variance_scaling"}, {"scale", 2.0}, {"fan", fan}, {"distribution", "normal"}};
    fail(where, ": filler type '", type, "' is not supported");
  }

  /// The per-parameter multipliers: param { lr_mult decay_mult } (V1: blobs_lr, weight_decay).
  void multipliers(const TextMessage& l, const std::string& name, bool v1, bool bias) {
    const char* blobs[2] = {"weight", "bias"};
    std::vector<std::pair<double, double>> mults;  // (lr, decay)
    if (v1) {
      const auto lrs = l.all("blobs_lr"), decays = l.all("weight_decay");
      for (std::size_t i = 0; i < std::max(lrs.size(), decays.size()); ++i)
        mults.emplace_back(i < lrs.size() ? number(*lrs[i], name) : 1.0,
                           i < decays.size() ? number(*decays[i], name) : 1.0);
    } else {
      for (const TextField* p : l.all("param"))
        mults.emplace_back(number_or(p->message.get(), "lr_mult", 1.0, name),
                           number_or(p->message.get(), "decay_mult", 1.0, name));
    }
    for (std::size_t i = 0; i < (bias ? 2u : 1u); ++i) {
      const std::string param = name + "." + blobs[i];
      const auto [lr, decay] = i < mults.size() ? mults[i] : std::pair<double, double>{1.0, 1.0};
      if (!(lr >= 0.0 && lr <= 1e6)) fail(name, ": lr_mult ", lr, " is outside [0, 1e6]");
      if (lr != 1.0) lr_mults_.push_back(param + "=" + number_text(lr));
      decay_mults_.emplace_back(param, decay);
    }
  }

  void add(const std::string& name, const std::string& op, std::vector<std::string> inputs,
           json attrs, const std::string& type) {
    for (const LayerNode& n : d_.layers)
      if (n.name == name) fail(name, ": two layers have this name");
    LayerNode n;
    n.name = name;
    n.op = op;
    n.inputs = std::move(inputs);
    attrs["source"] = type;
    n.attrs = std::move(attrs);
    d_.layers.push_back(std::move(n));
  }

  void layer(const TextMessage& l, bool v1, int line) {
    const TextField* name_f = l.find("name");
    const std::string name = name_f != nullptr ? name_f->value : "line " + std::to_string(line);
    const TextField* type_f = l.find("type");
    if (type_f == nullptr) fail(name, ": the layer has no type");
    std::string type = type_f->value;
    if (v1) {
      const auto it = v1_types().find(type);
      if (it == v1_types().end()) fail(name, ": ", type, " is not a layer epoch supports");
      type = it->second;
    }
    if (!in_train_phase(l, name)) return;
    std::vector<std::string> bottoms, tops;
    for (const TextField* f : l.all("bottom")) bottoms.push_back(f->value);
    for (const TextField* f : l.all("top")) tops.push_back(f->value);
    const std::string where = name + ": " + type;
    const auto one_bottom = [&]() {
      if (bottoms.size() != 1) fail(where, " takes one bottom, not ", bottoms.size());
      return bottoms[0];
    };
    const auto produce = [&](const std::string& node, bool flat) {
      for (const std::string& t : tops) {
        blobs_[t] = node;
        flat_[t] = flat;
        last_top_ = t;
      }
    };
    const auto pair_of = [&](const TextMessage* p, const char* single, const char* h,
                             const char* w, std::int64_t fallback) {
      std::vector<std::int64_t> v;
      if (p != nullptr)
        for (const TextField* f : p->all(single)) v.push_back(integer(*f, where));
      std::int64_t a = v.empty() ? fallback : v[0], b = v.size() > 1 ? v[1] : a;
      if (p != nullptr && p->find(h) != nullptr) a = integer(*p->find(h), where);
      if (p != nullptr && p->find(w) != nullptr) b = integer(*p->find(w), where);
      return json::array({a, b});
    };
    static const std::set<std::string> known = {
        "name", "type", "bottom", "top", "include", "exclude", "param", "blobs_lr",
        "weight_decay", "loss_weight", "phase", "propagate_down", "blob_share_mode"};
    for (const TextField& f : l.fields)
      if (known.count(f.name) == 0 && !(f.name.size() > 6 && f.name.ends_with("_param")))
        ignored_.insert(f.name);
    if (type == "Data" || type == "ImageData" || type == "MemoryData" || type == "HDF5Data" ||
        type == "DummyData" || type == "Input" || type == "WindowData") {
      if (tops.empty()) fail(where, " has no top");
      Shape nchw;
      if (type == "Input") {
        const TextMessage* p = sub(l, "input_param");
        const TextMessage* shape = p != nullptr ? sub(*p, "shape") : nullptr;
        if (shape != nullptr)
          for (const TextField* f : shape->all("dim")) nchw.push_back(integer(*f, where));
      }
      const TextMessage* t = sub(l, "transform_param");
      if (t != nullptr && nchw.empty() && t->find("crop_size") != nullptr) {
        const std::int64_t crop = integer(*t->find("crop_size"), where);
        nchw = {1, options_.channels, crop, crop};
      }
      if (type == "MemoryData" && nchw.empty()) {
        const TextMessage* p = sub(l, "memory_data_param");
        if (p != nullptr)
          nchw = {1, static_cast<std::int64_t>(number_or(p, "channels", 0, where)),
                  static_cast<std::int64_t>(number_or(p, "height", 0, where)),
                  static_cast<std::int64_t>(number_or(p, "width", 0, where))};
      }
      if (nchw.empty() && options_.input_shape.empty())
        fail(where, " carries no shape: pass --input-shape C,H,W");
      set_input(tops[0], nchw, where);
      if (t != nullptr) {
        // Caffe: (x - mean) * scale, on 0-255 pixels.
        const double scale = number_or(t, "scale", 1.0, where);
        d_.recipe.set("rescale", scale);
        std::vector<double> means;
        for (const TextField* f : t->all("mean_value")) means.push_back(number(*f, where) * scale);
        if (!means.empty()) {
          if (means.size() == 1) means.assign(static_cast<std::size_t>(d_.input[0]), means[0]);
          d_.recipe.set("mean", means).set("std", std::vector<double>(means.size(), 1.0));
        }
        if (t->find("mean_file") != nullptr)
          warn(name + ": mean_file is not read (a binaryproto); give the means with --mean");
        if (word_or(t, "mirror", "false") == "true") d_.recipe.set("augment.horizontal_flip", true);
        if (t->find("crop_size") != nullptr)
          warn(name + ": crop_size's random crops are not taken; images are resized and "
                      "centre-cropped to the input");
      } else {
        d_.recipe.set("rescale", 1.0);
      }
      for (const char* param : {"data_param", "image_data_param", "memory_data_param"})
        if (const TextMessage* p = sub(l, param); p != nullptr && p->find("batch_size") != nullptr)
          d_.recipe.set("batch_size", integer(*p->find("batch_size"), where));
      return;
    }
    if (type == "SoftmaxWithLoss" || type == "SoftmaxLoss") {
      if (bottoms.empty()) fail(where, " has no bottom");
      double weight = 1.0;
      if (const TextField* w = l.find("loss_weight")) weight = number(*w, where);
      if (!(weight >= 0.0 && weight <= 1e6)) fail(where, " loss_weight ", weight, " is outside [0, 1e6]");
      losses_.emplace_back(input_of(bottoms[0], where), weight, where);
      output_blob_ = bottoms[0];
      return;
    }
    if (type == "Accuracy" || type == "Silence") return;
    if (type == "Split") {
      const std::string from = input_of(one_bottom(), where);
      for (const std::string& t : tops) {
        blobs_[t] = from;
        flat_[t] = flat_[one_bottom()];
      }
      return;
    }
    if (tops.size() != 1) fail(where, " must have one top, not ", tops.size());
    if (type == "Convolution") {
      const std::string in = input_of(one_bottom(), where);
      const TextMessage* p = sub(l, "convolution_param");
      if (p == nullptr || p->find("num_output") == nullptr) fail(where, " needs num_output");
      const bool bias = word_or(p, "bias_term", "true") == "true";
      json pad = pair_of(p, "pad", "pad_h", "pad_w", 0);
      if (word_or(p, "engine", "DEFAULT") != "DEFAULT") ignored_.insert("convolution_param.engine");
      if (p->find("axis") != nullptr) fail(where, " axis is not supported");
      json attrs = {{"filters", integer(*p->find("num_output"), where)},
                    {"kernel", pair_of(p, "kernel_size", "kernel_h", "kernel_w", -1)},
                    {"strides", pair_of(p, "stride", "stride_h", "stride_w", 1)},
                    {"dilation", pair_of(p, "dilation", "dilation_h", "dilation_w", 1)},
                    {"groups", static_cast<std::int64_t>(number_or(p, "group", 1, where))},
                    {"padding", json::array({pad[0], pad[0], pad[1], pad[1]})},
                    {"bias", bias},
                    {"weight_init", filler(sub(*p, "weight_filler"), where)}};
      if (bias) attrs["bias_init"] = filler(sub(*p, "bias_filler"), where);
      multipliers(l, name, v1, bias);
      add(name, "conv2d", {in}, attrs, type);
      produce(name, false);
    } else if (type == "InnerProduct") {
      const std::string bottom = one_bottom();
      std::string in = input_of(bottom, where);
      const TextMessage* p = sub(l, "inner_product_param");
      if (p == nullptr || p->find("num_output") == nullptr) fail(where, " needs num_output");
      if (number_or(p, "axis", 1, where) != 1) fail(where, " axis other than 1 is not supported");
      if (word_or(p, "transpose", "false") == "true") fail(where, " transpose is not supported");
      if (!flat_[bottom]) {  // Caffe flattens (C, H, W) in that order
        add(name + "_flatten", "flatten", {in}, {{"order", "chw"}}, type);
        in = name + "_flatten";
      }
      const bool bias = word_or(p, "bias_term", "true") == "true";
      json attrs = {{"units", integer(*p->find("num_output"), where)},
                    {"bias", bias},
                    {"weight_init", filler(sub(*p, "weight_filler"), where)}};
      if (bias) attrs["bias_init"] = filler(sub(*p, "bias_filler"), where);
      multipliers(l, name, v1, bias);
      add(name, "dense", {in}, attrs, type);
      produce(name, true);
    } else if (type == "Pooling") {
      const std::string in = input_of(one_bottom(), where);
      const TextMessage* p = sub(l, "pooling_param");
      const std::string pool = word_or(p, "pool", "MAX");
      if (pool != "MAX" && pool != "AVE") fail(where, " pool ", pool, " is not supported");
      if (word_or(p, "global_pooling", "false") == "true") {
        add(name, pool == "MAX" ? "global_max_pool" : "global_avg_pool", {in}, json::object(), type);
        produce(name, true);
        return;
      }
      json pad = pair_of(p, "pad", "pad_h", "pad_w", 0);
      add(name, pool == "MAX" ? "max_pool" : "avg_pool", {in},
          {{"size", pair_of(p, "kernel_size", "kernel_h", "kernel_w", -1)},
           {"strides", pair_of(p, "stride", "stride_h", "stride_w", 1)},
           {"padding", json::array({pad[0], pad[0], pad[1], pad[1]})},
           {"ceil", true}},
          type);
      produce(name, false);
    } else if (type == "ReLU" || type == "Sigmoid" || type == "TanH" || type == "Softmax") {
      const std::string bottom = one_bottom();
      const std::string in = input_of(bottom, where);
      json attrs;
      if (type == "ReLU") {
        const double slope = number_or(sub(l, "relu_param"), "negative_slope", 0.0, where);
        attrs = slope == 0.0 ? json{{"function", "relu"}}
                             : json{{"function", "leaky_relu"}, {"alpha", slope}};
      } else {
        attrs = {{"function", type == "Sigmoid" ? "sigmoid" : type == "TanH" ? "tanh" : "softmax"}};
      }
      add(name, "activation", {in}, attrs, type);
      produce(name, flat_[bottom]);
    } else if (type == "Dropout") {
      const std::string bottom = one_bottom();
      add(name, "dropout", {input_of(bottom, where)},
          {{"rate", number_or(sub(l, "dropout_param"), "dropout_ratio", 0.5, where)}}, type);
      produce(name, flat_[bottom]);
    } else if (type == "LRN") {
      const TextMessage* p = sub(l, "lrn_param");
      const std::string region = word_or(p, "norm_region", "ACROSS_CHANNELS");
      if (region != "ACROSS_CHANNELS" && region != "WITHIN_CHANNEL")
        fail(where, " norm_region ", region, " is not supported");
      json attrs = {{"size", static_cast<std::int64_t>(number_or(p, "local_size", 5, where))},
                    {"alpha", number_or(p, "alpha", 1.0, where)},
                    {"beta", number_or(p, "beta", 0.75, where)},
                    {"k", number_or(p, "k", 1.0, where)}};
      if (region == "WITHIN_CHANNEL") attrs["region"] = "within_channel";
      add(name, "lrn", {input_of(one_bottom(), where)}, attrs, type);
      produce(name, false);
    } else if (type == "BatchNorm") {
      const std::string bottom = one_bottom();
      const TextMessage* p = sub(l, "batch_norm_param");
      const double fraction = number_or(p, "moving_average_fraction", 0.999, where);
      if (!(fraction >= 0.0 && fraction < 1.0))
        fail(where, " moving_average_fraction ", fraction, " is outside [0, 1)");
      if (p != nullptr && p->find("use_global_stats") != nullptr)
        ignored_.insert("batch_norm_param.use_global_stats");
      add(name, "batch_norm", {input_of(bottom, where)},
          {{"momentum", 1.0 - fraction},
           {"epsilon", number_or(p, "eps", 1e-5, where)},
           {"caffe_factor", true}},
          type);
      batch_norms_[name] = false;
      produce(name, flat_[bottom]);
    } else if (type == "Scale") {
      const std::string bottom = one_bottom();
      const std::string in = input_of(bottom, where);
      const auto bn = batch_norms_.find(in);
      const TextMessage* p = sub(l, "scale_param");
      if (bn == batch_norms_.end() || bn->second || d_.layers.back().name != in)
        fail(where, " is supported only right after a BatchNorm (as its scale and shift)");
      if (word_or(p, "bias_term", "false") != "true")
        fail(where, " without bias_term: true after a BatchNorm is not supported");
      bn->second = true;
      produce(in, flat_[bottom]);
    } else if (type == "Eltwise") {
      const TextMessage* p = sub(l, "eltwise_param");
      if (word_or(p, "operation", "SUM") != "SUM")
        fail(where, " operation ", word_or(p, "operation", ""), " is not supported (SUM)");
      if (p != nullptr)
        for (const TextField* c : p->all("coeff"))
          if (number(*c, where) != 1.0) fail(where, " coeff other than 1 is not supported");
      std::vector<std::string> ins;
      for (const std::string& b : bottoms) ins.push_back(input_of(b, where));
      add(name, "add", ins, json::object(), type);
      produce(name, flat_[bottoms.at(0)]);
    } else if (type == "Concat") {
      const TextMessage* p = sub(l, "concat_param");
      if (number_or(p, "axis", 1, where) != 1 || number_or(p, "concat_dim", 1, where) != 1)
        fail(where, " along another axis than the channels is not supported");
      std::vector<std::string> ins;
      for (const std::string& b : bottoms) ins.push_back(input_of(b, where));
      add(name, "concat", ins, json::object(), type);
      produce(name, flat_[bottoms.at(0)]);
    } else if (type == "Flatten") {
      add(name, "flatten", {input_of(one_bottom(), where)}, {{"order", "chw"}}, type);
      produce(name, true);
    } else {
      fail(name, ": ", type, " is not a layer epoch supports");
    }
  }

  std::string file_;
  CaffeOptions options_;
  ModelDescription d_;
  std::map<std::string, std::string> blobs_;  // blob -> the layer that last wrote it
  std::map<std::string, bool> flat_;          // blob -> a vector per sample
  std::map<std::string, bool> batch_norms_;   // BatchNorm -> its Scale seen
  std::vector<std::pair<std::string, double>> decay_mults_;
  std::vector<std::string> lr_mults_;  // "conv1.bias=2"
  std::set<std::string> ignored_;
  std::string output_blob_, last_top_;
  std::vector<std::tuple<std::string, double, std::string>> losses_;  // (layer, weight, where)
};

}  // namespace

ModelDescription read_caffe_net(std::string_view text, const std::string& file,
                                const CaffeOptions& options) {
  const TextMessage net = parse_text_format(text, file);
  if (net.find("layer") == nullptr && net.find("layers") == nullptr)
    EPOCH_THROW(ConfigError, file, ": no layer { } or layers { }: not a Caffe net");
  return NetReader(file, options).read(net);
}

void read_caffe_solver(std::string_view text, const std::string& file, Recipe& recipe,
                       std::vector<std::string>& warnings) {
  const TextMessage s = parse_text_format(text, file);
  const auto value = [&](const char* key) -> const TextField* { return s.find(key); };
  const auto num = [&](const char* key, double fallback) {
    const TextField* f = value(key);
    if (f == nullptr) return fallback;
    try {
      std::size_t used = 0;
      const double v = std::stod(f->value, &used);
      if (used == f->value.size() && std::isfinite(v)) return v;
    } catch (const std::exception&) {
    }
    EPOCH_THROW(ConfigError, file, ":", f->line, ": ", key, " '", f->value, "' is not a number");
  };
  const auto refuse = [&](const std::string& what) {
    EPOCH_THROW(ConfigError, file, ": ", what, " is not supported");
  };
  std::string type = value("type") != nullptr ? value("type")->value : "SGD";
  if (value("solver_type") != nullptr) type = value("solver_type")->value;  // the V1 enum
  for (char& c : type) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const double lr = num("base_lr", 0.01);
  const bool lars = value("local_lr_auto") != nullptr && value("local_lr_auto")->value == "true";
  if (type == "SGD" || type == "NESTEROV") {
    recipe.set("optimizer.name", lars ? "lars" : "sgd")
        .set("optimizer.lr", lr)
        .set("optimizer.momentum", num("momentum", 0.0));
    if (type == "NESTEROV") recipe.set("optimizer.nesterov", true);
    if (lars) recipe.set("optimizer.trust_coefficient", num("local_gw_ratio", 0.001));
  } else if (type == "ADAM") {
    recipe.set("optimizer.name", "adam")
        .set("optimizer.lr", lr)
        .set("optimizer.beta1", num("momentum", 0.9))
        .set("optimizer.beta2", num("momentum2", 0.999))
        .set("optimizer.eps", num("delta", 1e-8));
  } else if (type == "RMSPROP") {
    recipe.set("optimizer.name", "rmsprop")
        .set("optimizer.lr", lr)
        .set("optimizer.alpha", num("rms_decay", 0.99))
        .set("optimizer.eps", num("delta", 1e-8));
  } else {
    refuse("solver type " + type);
  }
  recipe.set("optimizer.weight_decay", num("weight_decay", 0.0));
  if (value("regularization_type") != nullptr && value("regularization_type")->value != "L2")
    refuse("regularization_type " + value("regularization_type")->value);
  const std::string policy = value("lr_policy") != nullptr ? value("lr_policy")->value : "fixed";
  recipe.set("schedule.warmup_steps", static_cast<std::int64_t>(num("warmup_iter", 0)));
  if (value("warmup_start_lr") != nullptr && lr > 0)
    recipe.set("schedule.warmup_start_factor", num("warmup_start_lr", 0) / lr);
  if (policy == "fixed") {
    recipe.set("schedule.name", "constant");
  } else if (policy == "step") {
    recipe.set("schedule.name", "step")
        .set("schedule.step_size", static_cast<std::int64_t>(num("stepsize", 1)))
        .set("schedule.gamma", num("gamma", 0.1));
  } else if (policy == "poly") {
    recipe.set("schedule.name", "poly").set("schedule.power", num("power", 1.0));
  } else {
    refuse("lr_policy " + policy);
  }
  if (value("random_seed") != nullptr && num("random_seed", -1) >= 0)
    recipe.set("seed", static_cast<std::int64_t>(num("random_seed", 0)));
  if (num("iter_size", 1) != 1) refuse("iter_size other than 1");
  if (value("clip_gradients") != nullptr && num("clip_gradients", -1) > 0) refuse("clip_gradients");
  if (value("max_iter") != nullptr) {
    const double max_iter = num("max_iter", 0);
    if (max_iter < 1 || max_iter > 9e15 || max_iter != std::floor(max_iter))
      EPOCH_THROW(ConfigError, file, ":", value("max_iter")->line, ": max_iter '",
                  value("max_iter")->value, "' is not a positive whole number of steps");
    recipe.set("max_steps", static_cast<std::int64_t>(max_iter));
  }
  static const std::set<std::string> used = {
      "type", "solver_type", "base_lr", "local_lr_auto", "local_gw_ratio", "momentum",
      "momentum2", "delta", "rms_decay", "weight_decay", "regularization_type", "lr_policy",
      "warmup_iter", "warmup_start_lr", "stepsize", "gamma", "power", "random_seed", "iter_size",
      "clip_gradients", "max_iter",
      // Caffe's own running of a net: what epoch decides by itself or by flags.
      "net", "train_net", "test_net", "test_iter", "test_interval", "test_initialization",
      "display", "average_loss", "snapshot", "snapshot_prefix", "snapshot_format",
      "snapshot_after_train", "solver_mode", "device_id", "debug_info"};
  std::set<std::string> unknown;
  for (const TextField& f : s.fields)
    if (used.count(f.name) == 0) unknown.insert(f.name);
  if (!unknown.empty()) {
    std::string list;
    for (const std::string& u : unknown) list += (list.empty() ? "" : ", ") + u;
    warnings.push_back(file + ": ignored fields epoch does not use: " + list);
  }
}

}  // namespace epoch::models
