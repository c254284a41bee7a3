// Each description layer as one Keras layer (a ZeroPadding2D before a convolution with explicit
// padding, a LeakyReLU layer for a slope Keras's activation string does not carry), joined by
// Keras 3's inbound nodes, with the output's softmax or sigmoid that the task's loss applies.
#include "epoch/models/keras_writer.h"

#include <map>
#include <set>
#include <sstream>
#include <string>

#include "epoch/models/graph_model.h"
#include "epoch/tensor/error.h"

namespace epoch::models {
namespace {

using nlohmann::json;

class Writer {
 public:
  Writer(const ModelDescription& d, std::vector<std::string>* warnings)
      : d_(d), warnings_(warnings), shapes_(layer_output_shapes(d)) {}

  template <typename... Args>
  [[noreturn]] void fail(const LayerNode& n, const Args&... args) const {
    std::ostringstream os;
    os << d_.name << ": " << n.name << ": " << n.op;
    if constexpr (sizeof...(args) > 0) {
      os << " ";
      (os << ... << args);
    }
    os << " has no Keras form: the model is not written";
    throw ConfigError(os.str());
  }

  json write() {
    const std::string input = "input_layer";
    layers_.push_back({{"module", "keras.layers"},
                       {"class_name", "InputLayer"},
                       {"registered_name", nullptr},
                       {"name", input},
                       {"config", {{"name", input}, {"batch_shape", batch(d_.input)}, {"dtype", "float32"}}},
                       {"inbound_nodes", json::array()}});
    produced_[d_.input_name] = {input, d_.input};
    for (std::size_t i = 0; i < d_.layers.size(); ++i) {
      const LayerNode& n = d_.layers[i];
      std::vector<std::string> ins = n.inputs;
      if (ins.empty()) ins.push_back(i == 0 ? d_.input_name : d_.layers[i - 1].name);
      layer(n, ins, shapes_[i], i + 1 == d_.layers.size());
    }
    const std::string out = produced_.at(d_.layers.back().name).first;
    json top = {{"module", "keras.src.models.functional"},
                {"class_name", "Functional"},
                {"registered_name", "Functional"},
                {"config",
                 {{"name", "model"},
                  {"trainable", true},
                  {"layers", layers_},
                  {"input_layers", {input, 0, 0}},
                  {"output_layers", {out, 0, 0}}}}};
    top["compile_config"] = compile_config();
    return top;
  }

 private:
  json batch(const Shape& s) const {
    json out = json::array({nullptr});
    if (s.size() == 3) {
      out.push_back(s[1]);
      out.push_back(s[2]);
      out.push_back(s[0]);
    } else {
      for (std::int64_t v : s) out.push_back(v);
    }
    return out;
  }

  json tensor(const std::string& from) const {
    const auto& [name, shape] = produced_.at(from);
    return {{"class_name", "__keras_tensor__"},
            {"config", {{"shape", batch(shape)}, {"dtype", "float32"}, {"keras_history", {name, 0, 0}}}}};
  }

  /// Appends a Keras layer taking the outputs of `ins` (description names); `as` then names it.
  void emit(const std::string& name, const std::string& cls, json config,
            const std::vector<std::string>& ins, const std::string& as, const Shape& shape) {
    config["name"] = name;
    json args = json::array();
    if (ins.size() == 1) {
      args.push_back(tensor(ins[0]));
    } else {
      json list = json::array();
      for (const std::string& in : ins) list.push_back(tensor(in));
      args.push_back(list);
    }
    layers_.push_back({{"module", "keras.layers"},
                       {"class_name", cls},
                       {"registered_name", nullptr},
                       {"name", name},
                       {"config", config},
                       {"inbound_nodes", json::array({{{"args", args}, {"kwargs", json::object()}}})}});
    produced_[as] = {name, shape};
  }

  json initializer(const LayerNode& n, const char* key, const char* fallback) const {
    if (!n.attrs.contains(key)) return {{"module", "keras.initializers"}, {"class_name", fallback}, {"config", json::object()}, {"registered_name", nullptr}};
    const json& i = n.attrs[key];
    const std::string kind = i.value("kind", "");
    json c;
    std::string cls;
    if (kind == "constant") {
      cls = "Constant";
      c = {{"value", i.value("value", 0.0)}};
    } else if (kind == "uniform") {
      cls = "RandomUniform";
      c = {{"minval", i.value("lo", -0.05)}, {"maxval", i.value("hi", 0.05)}, {"seed", nullptr}};
    } else if (kind == "normal" || kind == "truncated_normal") {
      cls = kind == "normal" ? "RandomNormal" : "TruncatedNormal";
      c = {{"mean", i.value("mean", 0.0)}, {"stddev", i.value("std", 0.05)}, {"seed", nullptr}};
    } else {
      cls = "VarianceScaling";
      const std::string fan = i.value("fan", "in"), dist = i.value("distribution", "truncated_normal");
      c = {{"scale", i.value("scale", 1.0)},
           {"mode", fan == "in" ? "fan_in" : fan == "out" ? "fan_out" : "fan_avg"},
           {"distribution", dist == "normal" ? "untruncated_normal" : dist},
           {"seed", nullptr}};
    }
    return {{"module", "keras.initializers"}, {"class_name", cls}, {"config", c}, {"registered_name", nullptr}};
  }

  /// The recipe's setting `key`, if any.
  const Recipe::Value* setting(const std::string& key) const {
    const Recipe::Value* v = nullptr;
    for (const auto& [k, value] : d_.recipe.settings)
      if (k == key) v = &value;
    return v;
  }

  /// The weight decays that L2 regularizers gave (a coupled decay limited to named parameters,
  /// as the Keras reader writes it): the L2 factor wd / 2 of the parameter at `path`, else 0.
  double l2_of(const std::string& path) const {
    const Recipe::Value* name = setting("optimizer.name");
    const Recipe::Value* wd = setting("optimizer.weight_decay");
    const Recipe::Value* only = setting("optimizer.decay_only");
    if (name == nullptr || wd == nullptr || only == nullptr) return 0.0;
    const std::string* n = std::get_if<std::string>(name);
    const double* w = std::get_if<double>(wd);
    const auto* prefixes = std::get_if<std::vector<std::string>>(only);
    if (n == nullptr || w == nullptr || prefixes == nullptr || *w <= 0.0) return 0.0;
    if (*n != "sgd" && *n != "adam" && *n != "rmsprop") return 0.0;  // decoupled or layer-wise
    for (const std::string& p : *prefixes)
      if (path.starts_with(p)) return *w / 2.0;
    return 0.0;
  }
  bool l2_written() const {
    for (const LayerNode& n : d_.layers)
      if (l2_of(n.name + ".weight") > 0 || l2_of(n.name + ".bias") > 0) return true;
    return false;
  }
  static json l2_json(double l2) {
    return {{"module", "keras.regularizers"},
            {"class_name", "L2"},
            {"config", {{"l2", l2}}},
            {"registered_name", nullptr}};
  }

  /// The Keras activation string of a conv2d's or dense's own activation; a leaky ReLU of
  /// another slope, or a hard sigmoid of another slope, is refused.
  std::string activation(const LayerNode& n, const std::string& f) const {
    if (f == "leaky_relu" && n.attrs.value("alpha", 0.3) != 0.2)
      fail(n, "leaky_relu of slope ", n.attrs.value("alpha", 0.3), " as a layer's own activation");
    if (f == "elu" && n.attrs.value("alpha", 1.0) != 1.0)
      fail(n, "elu of alpha ", n.attrs.value("alpha", 1.0), " as a layer's own activation");
    if (f == "hard_sigmoid" && std::abs(n.attrs.value("slope", 0.2) - 1.0 / 6.0) > 1e-9)
      fail(n, "hard_sigmoid of slope ", n.attrs.value("slope", 0.2), " (Keras 3's is 1/6)");
    return f;
  }

  /// The activation the output gives in Keras: the task's softmax or sigmoid.
  std::string output_activation(const std::string& own) const {
    if (d_.task == Task::classification && own == "linear") return "softmax";
    if (d_.task == Task::binary && own == "linear") return "sigmoid";
    return own;
  }

  void layer(const LayerNode& n, const std::vector<std::string>& ins, const Shape& shape, bool last) {
    const json& a = n.attrs;
    const auto pair = [&](const char* key, json fallback) {
      json v = a.value(key, fallback);
      return v.is_number() ? json::array({v, v}) : v;
    };
    const std::string& op = n.op;
    if (op == "conv2d" || op == "dense") {
      std::string act = activation(n, a.value("activation", "linear"));
      if (last) act = output_activation(act);
      json c = {{"activation", act},
                {"use_bias", a.value("bias", true)},
                {"kernel_initializer", initializer(n, "weight_init", "GlorotUniform")},
                {"bias_initializer", initializer(n, "bias_init", "Zeros")}};
      if (const double l2 = l2_of(n.name + ".weight"); l2 > 0) c["kernel_regularizer"] = l2_json(l2);
      if (const double l2 = l2_of(n.name + ".bias"); l2 > 0 && a.value("bias", true))
        c["bias_regularizer"] = l2_json(l2);
      std::vector<std::string> from = ins;
      if (op == "conv2d") {
        json padding = a.value("padding", json("valid"));
        if (padding.is_array()) {
          if (padding != json::array({0, 0, 0, 0})) {
            const Shape& in = produced_.at(ins[0]).second;
            const Shape padded = {in[0], in[1] + padding[0].get<std::int64_t>() + padding[1].get<std::int64_t>(),
                                  in[2] + padding[2].get<std::int64_t>() + padding[3].get<std::int64_t>()};
            emit(n.name + "_pad", "ZeroPadding2D",
                 {{"padding", {{padding[0], padding[1]}, {padding[2], padding[3]}}},
                  {"data_format", "channels_last"}},
                 ins, n.name + "_pad", padded);
            from = {n.name + "_pad"};
          }
          padding = "valid";
        }
        c.update({{"kernel_size", pair("kernel", nullptr)},
                  {"strides", pair("strides", 1)},
                  {"dilation_rate", pair("dilation", 1)},
                  {"padding", padding},
                  {"data_format", "channels_last"}});
        if (a.contains("depth_multiplier")) {  // Keras's own fans: its initializer as it is
          c["depth_multiplier"] = a.at("depth_multiplier");
          c["depthwise_initializer"] = c["kernel_initializer"];
          c.erase("kernel_initializer");
          if (c.contains("kernel_regularizer")) {
            c["depthwise_regularizer"] = c["kernel_regularizer"];
            c.erase("kernel_regularizer");
          }
          emit(n.name, "DepthwiseConv2D", c, from, n.name, shape);
        } else {
          c.update({{"filters", a.at("filters")}, {"groups", a.value("groups", 1)}});
          emit(n.name, "Conv2D", c, from, n.name, shape);
        }
      } else {
        c["units"] = a.at("units");
        emit(n.name, "Dense", c, from, n.name, shape);
      }
    } else if (op == "max_pool" || op == "avg_pool") {
      if (a.value("ceil", false)) fail(n, "with Caffe's rounding up of its size");
      json padding = a.value("padding", json("valid"));
      if (padding.is_array()) {
        if (padding != json::array({0, 0, 0, 0})) fail(n, "with explicit padding");
        padding = "valid";
      }
      emit(n.name, op == "max_pool" ? "MaxPooling2D" : "AveragePooling2D",
           {{"pool_size", pair("size", nullptr)},
            {"strides", pair("strides", a.at("size"))},
            {"padding", padding},
            {"data_format", "channels_last"}},
           ins, n.name, shape);
    } else if (op == "global_avg_pool" || op == "global_max_pool") {
      emit(n.name, op == "global_avg_pool" ? "GlobalAveragePooling2D" : "GlobalMaxPooling2D",
           {{"data_format", "channels_last"}, {"keepdims", false}}, ins, n.name, shape);
    } else if (op == "zero_pad") {
      const json& p = a.at("pad");
      emit(n.name, "ZeroPadding2D",
           {{"padding", {{p[0], p[1]}, {p[2], p[3]}}}, {"data_format", "channels_last"}}, ins, n.name,
           shape);
    } else if (op == "flatten") {
      emit(n.name, "Flatten", {{"data_format", "channels_last"}}, ins, n.name, shape);
    } else if (op == "dropout") {
      emit(n.name, "Dropout", {{"rate", a.at("rate")}}, ins, n.name, shape);
    } else if (op == "batch_norm") {
      if (a.value("caffe_factor", false)) fail(n, "with Caffe's third blob");
      if (a.value("running_variance", "unbiased") != "biased" && warnings_ != nullptr)
        warnings_->push_back(d_.name + ": " + n.name +
                             ": Keras's BatchNormalization averages the biased batch variance "
                             "where this one averages the unbiased: its moving variance will "
                             "differ by a factor (m-1)/m of m values per channel");
      emit(n.name, "BatchNormalization",
           {{"axis", -1}, {"momentum", 1.0 - a.value("momentum", 0.1)}, {"epsilon", a.value("epsilon", 1e-5)}},
           ins, n.name, shape);
    } else if (op == "activation") {
      std::string f = a.at("function");
      if (last) f = output_activation(f);
      if (f == "leaky_relu")
        emit(n.name, "LeakyReLU", {{"negative_slope", a.value("alpha", 0.3)}}, ins, n.name, shape);
      else if (f == "elu")
        emit(n.name, "ELU", {{"alpha", a.value("alpha", 1.0)}}, ins, n.name, shape);
      else
        emit(n.name, "Activation", {{"activation", activation(n, f)}}, ins, n.name, shape);
    } else if (op == "rescaling") {
      emit(n.name, "Rescaling", {{"scale", a.at("scale")}, {"offset", a.value("offset", 0.0)}}, ins,
           n.name, shape);
    } else if (op == "add") {
      emit(n.name, "Add", json::object(), ins, n.name, shape);
    } else if (op == "concat") {
      emit(n.name, "Concatenate", {{"axis", -1}}, ins, n.name, shape);
    } else {
      fail(n);
    }
    if (last && (op == "add" || op == "concat" || op == "flatten" || op == "dropout" || op == "batch_norm") &&
        d_.task != Task::reconstruction) {
      const std::string f = d_.task == Task::classification ? "softmax" : "sigmoid";
      emit(n.name + "_" + f, "Activation", {{"activation", f}}, {n.name}, n.name, shape);
    }
  }

  json compile_config() const {
    std::map<std::string, Recipe::Value> r;
    for (const auto& [key, value] : d_.recipe.settings) r[key] = value;
    const auto number = [&](const char* key, double fallback) {
      const auto it = r.find(key);
      if (it == r.end()) return fallback;
      if (const double* v = std::get_if<double>(&it->second)) return *v;
      if (const std::int64_t* v = std::get_if<std::int64_t>(&it->second)) return static_cast<double>(*v);
      return fallback;
    };
    const auto word = [&](const char* key, const std::string& fallback) {
      const auto it = r.find(key);
      const std::string* v = it == r.end() ? nullptr : std::get_if<std::string>(&it->second);
      return v != nullptr ? *v : fallback;
    };
    const auto flag = [&](const char* key) {
      const auto it = r.find(key);
      const bool* v = it == r.end() ? nullptr : std::get_if<bool>(&it->second);
      return v != nullptr && *v;
    };
    const std::string name = word("optimizer.name", "adam");
    json opt;
    if (name == "sgd") {
      opt = {{"class_name", "SGD"},
             {"config", {{"learning_rate", number("optimizer.lr", 0.01)},
                         {"momentum", number("optimizer.momentum", 0.0)},
                         {"nesterov", flag("optimizer.nesterov")}}}};
    } else if (name == "rmsprop") {
      opt = {{"class_name", "RMSprop"},
             {"config", {{"learning_rate", number("optimizer.lr", 0.001)}, {"rho", number("optimizer.alpha", 0.9)},
                         {"epsilon", number("optimizer.eps", 1e-7)}}}};
    } else {
      opt = {{"class_name", name == "adamw" ? "AdamW" : "Adam"},
             {"config", {{"learning_rate", number("optimizer.lr", 0.001)}, {"beta_1", number("optimizer.beta1", 0.9)},
                         {"beta_2", number("optimizer.beta2", 0.999)}, {"epsilon", number("optimizer.eps", 1e-7)}}}};
    }
    opt["module"] = "keras.optimizers";
    opt["registered_name"] = nullptr;
    // What the recipe says that this compile_config does not carry (schedules, decay, ...).
    static const std::set<std::string> written = {
        "optimizer.name", "optimizer.lr", "optimizer.momentum", "optimizer.alpha",
        "optimizer.eps", "optimizer.beta1", "optimizer.beta2", "optimizer.keras_epsilon"};
    // A leading Rescaling is written as the layer it was; L2 as the layers' kernel_regularizer.
    bool rescaling = false;
    for (const LayerNode& n : d_.layers) rescaling |= n.op == "rescaling";
    const bool l2 = l2_written();
    std::string left;
    for (const auto& [key, value] : r) {
      const bool keras_default = (key == "schedule.name" && word(key.c_str(), "") == "constant") ||
                                 (key == "schedule.warmup_steps" && number(key.c_str(), 0) == 0) ||
                                 key == "optimizer.nesterov" || key == "batch_size" || key == "seed";
      const bool as_l2 = (key == "optimizer.weight_decay" || key == "optimizer.decay_only") && l2;
      if (rescaling && (key == "rescale" || key == "mean" || key == "std")) continue;
      if (written.count(key) == 0 && !keras_default && !as_l2)
        left += (left.empty() ? "" : ", ") + key;
    }
    bool keras_eps = false;
    if (const auto it = r.find("optimizer.keras_epsilon"); it != r.end())
      if (const bool* b = std::get_if<bool>(&it->second)) keras_eps = *b;
    if (name != "sgd" && !keras_eps)
      left += std::string(left.empty() ? "" : ", ") + "optimizer.eps where PyTorch adds it";
    if (!left.empty() && warnings_ != nullptr)
      warnings_->push_back(d_.name + ": Keras's compile_config leaves out the recipe's " + left);
    const char* loss = d_.task == Task::classification ? "sparse_categorical_crossentropy"
                       : d_.task == Task::binary       ? "binary_crossentropy"
                                                       : "mean_squared_error";
    return {{"optimizer", opt}, {"loss", loss}};
  }

  const ModelDescription& d_;
  std::vector<std::string>* warnings_;
  std::vector<Shape> shapes_;
  json layers_ = json::array();
  std::map<std::string, std::pair<std::string, Shape>> produced_;  // description name -> (Keras layer, shape)
};

}  // namespace

nlohmann::json write_keras_json(const ModelDescription& description,
                                std::vector<std::string>* warnings) {
  if (description.task == Task::frame_prediction)
    EPOCH_THROW(ConfigError, description.name, ": a frame-prediction model has no Keras form");
  if (!description.aux_losses.empty())
    EPOCH_THROW(ConfigError, description.name, ": auxiliary classifiers (",
                description.aux_losses.front().first,
                ") have no Keras form here (one output): the model is not written");
  return Writer(description, warnings).write();
}

}  // namespace epoch::models
