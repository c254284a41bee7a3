// Keras's JSON, layer by layer, into epoch's description. Keras 3 writes each layer with
// "module" and "registered_name", InputLayer's "batch_shape" and inbound nodes as
// {"args": [keras tensors]}; Keras 2 writes "batch_input_shape" and inbound nodes as lists of
// [layer, node, tensor, kwargs]. Shapes are channels-last: (None, H, W, C) becomes (C, H, W).
#include "epoch/models/keras_reader.h"

#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "epoch/data/zip_member.h"
#include "epoch/models/graph_model.h"
#include "epoch/tensor/error.h"

namespace epoch::models {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxLayers = 100000;

class Reader {
 public:
  Reader(const std::string& file, int version) : file_(file), version_(version) {}

  template <typename... Args>
  [[noreturn]] void fail(const Args&... args) const {
    std::ostringstream os;
    os << file_ << ": ";
    (os << ... << args);
    throw ConfigError(os.str());
  }

  int version() const { return version_; }

  /// One Keras layer (class_name, config) as description nodes appended to `out`; `input`
  /// names its input (empty: the layer before). InputLayer is handled by the caller.
  void layer(const json& l, std::vector<std::string> inputs, ModelDescription& out) {
    const std::string cls = l.value("class_name", "");
    const json& c = l.contains("config") && l["config"].is_object() ? l["config"] : empty_;
    const std::string name = layer_name(l);
    const auto refuse = [&](const auto&... args) { fail(name, ": ", cls, " ", args...); };
    // A mixed-precision (or float64) policy: epoch computes in float32; said once per policy.
    const json dtype = c.value("dtype", json());
    const std::string policy =
        dtype.is_string() ? dtype.get<std::string>()
        : dtype.is_object() && dtype.contains("config") && dtype["config"].is_object()
            ? dtype["config"].value("name", "")
            : "";
    if (!policy.empty() && policy != "float32" && policies_.insert(policy).second)
      out.warnings.push_back(file_ + ": " + name + ": dtype policy " + policy +
                             " (and any other layer's): epoch computes in float32");
    const auto node = [&](const std::string& op, json attrs) {
      LayerNode n;
      n.name = name;
      n.op = op;
      n.inputs = inputs;
      attrs["source"] = cls;
      n.attrs = std::move(attrs);
      out.layers.push_back(std::move(n));
    };
    const auto channels_last = [&] {
      const json f = c.value("data_format", json());
      if (!f.is_null() && f != "channels_last")
        refuse("data_format ", f.get<std::string>(), " is not supported");
    };
    const auto pair = [&](const char* key, json fallback) -> json {
      json v = c.value(key, fallback);
      if (v.is_null()) return fallback;
      if (v.is_number_integer()) return json::array({v, v});
      if (!v.is_array() || v.size() != 2) refuse(key, " ", json_excerpt(v), " is not two integers");
      return v;
    };
    const auto no = [&](const char* key) {
      if (c.contains(key) && !c[key].is_null() && c[key] != false)
        refuse(key, " ", json_excerpt(c[key]), " is not supported");
    };
    json inits = json::object();  // a conv2d's or dense's weight_init and bias_init
    const auto weights = [&](const char* kernel_key) {
      if (json w = initializer(c, kernel_key, "GlorotUniform", refuse); !w.is_null())
        inits["weight_init"] = w;
      if (json b = initializer(c, "bias_initializer", "Zeros", refuse); !b.is_null())
        inits["bias_init"] = b;
      regularizer(c, "kernel_regularizer", name + ".weight", refuse);
      regularizer(c, "bias_regularizer", name + ".bias", refuse);
      no("activity_regularizer");
      no("kernel_constraint");
      no("bias_constraint");
    };
    if (cls == "Conv2D") {
      channels_last();
      weights("kernel_initializer");
      const std::string padding = c.value("padding", "valid");
      if (padding != "valid" && padding != "same") refuse("padding ", padding, " is not supported");
      const std::string act = activation(c, refuse);
      json attrs = {{"filters", c.at("filters")},
                      {"kernel", pair("kernel_size", json())},
                      {"strides", pair("strides", {1, 1})},
                      {"dilation", pair("dilation_rate", {1, 1})},
                      {"groups", c.value("groups", 1)},
                      {"padding", padding},
                      {"bias", c.value("use_bias", true)},
                      {"activation", act}};
      attrs.update(last_activation_params_);
      if (!c.value("use_bias", true)) inits.erase("bias_init");  // Keras ignores it then
      attrs.update(inits);
      node("conv2d", attrs);
    } else if (cls == "DepthwiseConv2D" || cls == "SeparableConv2D") {
      // A depthwise convolution (depth_multiplier filters per channel); SeparableConv2D then a
      // 1x1 convolution (the pointwise), its bias and activation the layer's.
      channels_last();
      const std::string padding = c.value("padding", "valid");
      if (padding != "valid" && padding != "same") refuse("padding ", padding, " is not supported");
      const bool separable = cls == "SeparableConv2D";
      no("activity_regularizer");
      for (const char* key : {"depthwise_constraint", "pointwise_constraint", "bias_constraint"})
        no(key);
      const std::string depthwise_name = separable ? name + "_depthwise" : name;
      json dw = {{"depth_multiplier", c.value("depth_multiplier", 1)},
                 {"kernel", pair("kernel_size", json())},
                 {"strides", pair("strides", {1, 1})},
                 {"dilation", pair("dilation_rate", {1, 1})},
                 {"padding", padding}};
      if (json w = initializer(c, "depthwise_initializer", "GlorotUniform", refuse); !w.is_null())
        dw["weight_init"] = w;
      regularizer(c, "depthwise_regularizer", depthwise_name + ".weight", refuse);
      json bias_init = initializer(c, "bias_initializer", "Zeros", refuse);
      const bool bias = c.value("use_bias", true);
      const std::string act = activation(c, refuse);
      if (!separable) {
        dw.update({{"bias", bias}, {"activation", act}});
        dw.update(last_activation_params_);
        if (bias && !bias_init.is_null()) dw["bias_init"] = bias_init;
        regularizer(c, "bias_regularizer", name + ".bias", refuse);
        node("conv2d", dw);
      } else {
        dw.update({{"bias", false}, {"source", cls}});
        LayerNode d;
        d.name = depthwise_name;
        d.op = "conv2d";
        d.inputs = inputs;
        d.attrs = dw;
        out.layers.push_back(std::move(d));
        json pw = {{"filters", c.at("filters")},
                   {"kernel", {1, 1}},
                   {"bias", bias},
                   {"activation", act}};
        pw.update(last_activation_params_);
        if (json w = initializer(c, "pointwise_initializer", "GlorotUniform", refuse); !w.is_null())
          pw["weight_init"] = w;
        if (bias && !bias_init.is_null()) pw["bias_init"] = bias_init;
        regularizer(c, "pointwise_regularizer", name + ".weight", refuse);
        regularizer(c, "bias_regularizer", name + ".bias", refuse);
        inputs = {depthwise_name};
        node("conv2d", pw);
      }
    } else if (cls == "Dense") {
      weights("kernel_initializer");
      no("lora_rank");
      const std::string act = activation(c, refuse);
      json attrs = {{"units", c.at("units")}, {"bias", c.value("use_bias", true)}, {"activation", act}};
      attrs.update(last_activation_params_);
      if (!c.value("use_bias", true)) inits.erase("bias_init");
      attrs.update(inits);
      node("dense", attrs);
    } else if (cls == "MaxPooling2D" || cls == "AveragePooling2D") {
      channels_last();
      const json size = pair("pool_size", {2, 2});
      const std::string padding = c.value("padding", "valid");
      if (padding != "valid" && padding != "same") refuse("padding ", padding, " is not supported");
      node(cls == "MaxPooling2D" ? "max_pool" : "avg_pool",
           {{"size", size}, {"strides", pair("strides", size)}, {"padding", padding}});
    } else if (cls == "GlobalAveragePooling2D" || cls == "GlobalMaxPooling2D") {
      channels_last();
      no("keepdims");
      node(cls == "GlobalAveragePooling2D" ? "global_avg_pool" : "global_max_pool",
           json::object());
    } else if (cls == "ZeroPadding2D") {
      channels_last();
      const json p = c.value("padding", json(1));
      json q;
      if (p.is_number_integer()) {
        q = {p, p, p, p};
      } else if (p.is_array() && p.size() == 2 && p[0].is_number_integer()) {
        q = {p[0], p[0], p[1], p[1]};
      } else if (p.is_array() && p.size() == 2 && p[0].is_array() && p[0].size() == 2 &&
                 p[1].is_array() && p[1].size() == 2) {
        q = {p[0][0], p[0][1], p[1][0], p[1][1]};
      } else {
        refuse("padding ", json_excerpt(p), " is not supported");
      }
      node("zero_pad", {{"pad", q}});
    } else if (cls == "Flatten") {
      channels_last();
      node("flatten", {{"order", "hwc"}});
    } else if (cls == "Dropout") {
      no("noise_shape");
      node("dropout", {{"rate", c.at("rate")}});
    } else if (cls == "BatchNormalization") {
      json axis = c.value("axis", json(-1));
      if (axis.is_array() && axis.size() == 1) axis = axis[0];
      if (axis != -1 && axis != 3 && !(axis == 1 && input_rank_ == 1))
        refuse("axis ", json_excerpt(axis), " is not the channels' (-1)");
      if (!c.value("center", true) || !c.value("scale", true))
        refuse("without center or scale is not supported");
      no("renorm");
      no("beta_regularizer");
      no("gamma_regularizer");
      initializer(c, "beta_initializer", "Zeros", refuse);
      initializer(c, "gamma_initializer", "Ones", refuse);
      initializer(c, "moving_mean_initializer", "Zeros", refuse);
      initializer(c, "moving_variance_initializer", "Ones", refuse);
      const double momentum = c.value("momentum", 0.99);
      if (!(momentum >= 0.0 && momentum < 1.0)) refuse("momentum ", momentum, " is outside [0, 1)");
      // Keras: moving = momentum * moving + (1 - momentum) * batch; epoch weighs the batch.
      // Keras's moving variance averages the batch's biased variance (tf.nn.moments).
      node("batch_norm", {{"momentum", 1.0 - momentum},
                          {"epsilon", c.value("epsilon", 1e-3)},
                          {"running_variance", "biased"}});
    } else if (cls == "Activation") {
      json a = {{"function", activation(c, refuse)}};
      add_activation_parameters(a);
      node("activation", a);
    } else if (cls == "ReLU") {
      if (c.value("threshold", 0.0) != 0.0) refuse("threshold is not supported");
      const double slope = c.value("negative_slope", 0.0);
      const json max = c.value("max_value", json());
      if (!max.is_null() && (max != 6.0 || slope != 0.0))
        refuse("max_value ", json_excerpt(max), " is not supported (6 without a slope: ReLU6)");
      node("activation", !max.is_null() ? json{{"function", "relu6"}}
                         : slope == 0.0 ? json{{"function", "relu"}}
                                        : json{{"function", "leaky_relu"}, {"alpha", slope}});
    } else if (cls == "ELU") {
      node("activation", {{"function", "elu"}, {"alpha", c.value("alpha", 1.0)}});
    } else if (cls == "LeakyReLU") {
      const double alpha =
          c.contains("negative_slope") ? c["negative_slope"].get<double>() : c.value("alpha", 0.3);
      node("activation", {{"function", "leaky_relu"}, {"alpha", alpha}});
    } else if (cls == "Softmax") {
      if (c.value("axis", json(-1)) != -1) refuse("axis ", json_excerpt(c["axis"]), " is not -1");
      node("activation", {{"function", "softmax"}});
    } else if (cls == "Rescaling") {
      if (!c.at("scale").is_number() || !c.value("offset", json(0.0)).is_number())
        refuse("per-channel scale or offset is not supported");
      node("rescaling", {{"scale", c["scale"]}, {"offset", c.value("offset", 0.0)}});
    } else if (cls == "Add") {
      node("add", json::object());
    } else if (cls == "Concatenate") {
      const json axis = c.value("axis", json(-1));
      if (axis != -1 && axis != 3 && !(axis == 1 && input_rank_ == 1))
        refuse("axis ", json_excerpt(axis), " is not the channels' (-1)");
      node("concat", json::object());
    } else {
      const json reg = l.value("registered_name", json());
      if (reg.is_string() && reg.get<std::string>() != cls)
        fail(name, ": ", reg.get<std::string>(), " (a custom layer) is not supported");
      refuse("is not a layer epoch supports");
    }
  }

  /// Per-parameter L2 factors, each (path, l2).
  const std::vector<std::pair<std::string, double>>& l2() const { return l2_; }
  void set_input_rank(std::size_t rank) { input_rank_ = rank; }

  std::string layer_name(const json& l) const {
    std::string name = l.value("name", std::string());
    if (name.empty() && l.contains("config") && l["config"].is_object())
      name = l["config"].value("name", std::string());
    if (name.empty()) fail("a layer has no name");
    return name;
  }

 private:
  template <typename Refuse>
  std::string activation(const json& c, const Refuse& refuse) {
    last_activation_params_ = json::object();
    const json a = c.value("activation", json("linear"));
    if (!a.is_string()) refuse("activation ", json_excerpt(a), " is not supported");
    const std::string f = a.get<std::string>();
    if (f == "linear" || f == "relu" || f == "sigmoid" || f == "tanh" || f == "softmax" ||
        f == "selu" || f == "swish" || f == "silu" || f == "relu6")
      return f;
    if (f == "elu") {  // keras.activations.elu's default alpha
      last_activation_params_ = {{"alpha", 1.0}};
      return f;
    }
    if (f == "hard_sigmoid") {
      // Keras 2: clip(0.2 x + 0.5, 0, 1); Keras 3: relu6(x + 3) / 6.
      last_activation_params_ = {{"slope", version_ == 2 ? 0.2 : 1.0 / 6.0}, {"offset", 0.5}};
      return f;
    }
    if (f == "leaky_relu") {  // keras.activations.leaky_relu's default slope
      last_activation_params_ = {{"alpha", 0.2}};
      return f;
    }
    refuse("activation ", f, " is not supported");
  }

  void add_activation_parameters(json& a) const {
    for (const auto& [k, v] : last_activation_params_.items()) a[k] = v;
  }

  /// A Keras initializer: the description's weight_init or bias_init (nothing for epoch's own
  /// defaults, Glorot-uniform weights and zero biases); BatchNormalization's (`expected`)
  /// must be Keras's defaults.
  template <typename Refuse>
  json initializer(const json& c, const char* key, const char* expected, const Refuse& refuse) {
    if (!c.contains(key) || c[key].is_null()) return json();
    const json& i = c[key];
    std::string cls = i.is_string() ? i.get<std::string>() : i.value("class_name", "");
    const json& ic = i.is_object() && i.contains("config") && i["config"].is_object()
                         ? i["config"]
                         : empty_;
    std::string plain;  // "GlorotUniform" and Keras 2's "glorot_uniform" alike
    for (char ch : cls)
      if (ch != '_') plain += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    std::string want;
    for (char ch : std::string(expected))
      want += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (plain == want) return json();
    const std::string k = key;
    const bool weights = k == "kernel_initializer" || k == "depthwise_initializer" ||
                         k == "pointwise_initializer";
    if (!weights && std::string(key) != "bias_initializer")
      refuse(key, " ", cls, " is not supported (", expected, " only)");
    const auto scaling = [](double scale, const char* fan, const char* dist) {
      return json{{"kind", "variance_scaling"}, {"scale", scale}, {"fan", fan}, {"distribution", dist}};
    };
    if (plain == "glorotuniform") return scaling(1.0, "average", "uniform");
    if (plain == "glorotnormal") return scaling(1.0, "average", "truncated_normal");
    if (plain == "henormal") return scaling(2.0, "in", "truncated_normal");
    if (plain == "heuniform") return scaling(2.0, "in", "uniform");
    if (plain == "lecunnormal") return scaling(1.0, "in", "truncated_normal");
    if (plain == "lecununiform") return scaling(1.0, "in", "uniform");
    if (plain == "variancescaling") {
      const std::string mode = ic.value("mode", "fan_in");
      std::string dist = ic.value("distribution", "truncated_normal");
      if (dist == "untruncated_normal") dist = "normal";
      if (mode != "fan_in" && mode != "fan_out" && mode != "fan_avg")
        refuse(key, " VarianceScaling mode ", mode, " is not supported");
      if (dist != "uniform" && dist != "normal" && dist != "truncated_normal")
        refuse(key, " VarianceScaling distribution ", dist, " is not supported");
      return json{{"kind", "variance_scaling"},
                  {"scale", ic.value("scale", 1.0)},
                  {"fan", mode == "fan_in" ? "in" : mode == "fan_out" ? "out" : "average"},
                  {"distribution", dist}};
    }
    if (plain == "zeros") return json{{"kind", "constant"}, {"value", 0.0}};
    if (plain == "ones") return json{{"kind", "constant"}, {"value", 1.0}};
    if (plain == "constant") return json{{"kind", "constant"}, {"value", ic.value("value", 0.0)}};
    if (plain == "randomnormal")
      return json{{"kind", "normal"}, {"mean", ic.value("mean", 0.0)}, {"std", ic.value("stddev", 0.05)}};
    if (plain == "truncatednormal")
      return json{{"kind", "truncated_normal"},
                  {"mean", ic.value("mean", 0.0)},
                  {"std", ic.value("stddev", 0.05)}};
    if (plain == "randomuniform")
      return json{{"kind", "uniform"}, {"lo", ic.value("minval", -0.05)}, {"hi", ic.value("maxval", 0.05)}};
    refuse(key, " ", cls.empty() ? json_excerpt(i) : cls, " is not supported");
  }

  template <typename Refuse>
  void regularizer(const json& c, const char* key, const std::string& path,
                   const Refuse& refuse) {
    if (!c.contains(key) || c[key].is_null()) return;
    const json& r = c[key];
    const std::string cls = r.value("class_name", "");
    const json& rc = r.contains("config") ? r["config"] : empty_;
    double l1 = 0.0, l2 = 0.0;
    if (cls == "L2" || cls == "l2") {
      l2 = rc.value("l2", 0.01);
    } else if (cls == "L1L2") {
      l1 = rc.value("l1", 0.0);
      l2 = rc.value("l2", 0.0);
    } else {
      refuse(key, " ", cls, " is not supported (L2 only)");
    }
    if (l1 != 0.0) refuse(key, " with an L1 term is not supported (L2 only)");
    if (l2 != 0.0) l2_.emplace_back(path, l2);
  }

  std::string file_;
  int version_;
  std::size_t input_rank_ = 3;
  json last_activation_params_ = json::object();
  std::vector<std::pair<std::string, double>> l2_;
  std::set<std::string> policies_;  // dtype policies other than float32 already warned of
  const json empty_ = json::object();
};

/// (None, H, W, C) or (None, D) as (C, H, W) or (D).
Shape input_shape(const Reader& r, const json& batch_shape, const std::string& layer) {
  if (!batch_shape.is_array() || (batch_shape.size() != 4 && batch_shape.size() != 2))
    r.fail(layer, ": InputLayer shape ", json_excerpt(batch_shape),
           " is neither (None, H, W, C) nor (None, D)");
  Shape s;
  for (std::size_t i = 1; i < batch_shape.size(); ++i) {
    if (!batch_shape[i].is_number_integer() || batch_shape[i].get<std::int64_t>() < 1)
      r.fail(layer, ": InputLayer shape ", json_excerpt(batch_shape),
             " must give every size but the batch's");
    s.push_back(batch_shape[i].get<std::int64_t>());
  }
  if (s.size() == 3) return {s[2], s[0], s[1]};
  return s;
}

/// The names a Keras 3 "args" value or a Keras 2 node list refers to, in order.
void inbound_names(const json& v, std::vector<std::string>& out, int depth = 0) {
  if (depth > 8) return;  // Keras nests a node's tensors two or three deep; nothing deeper is one
  if (v.is_object()) {
    if (v.value("class_name", "") == "__keras_tensor__" && v.contains("config") &&
        v["config"].contains("keras_history")) {
      const json& h = v["config"]["keras_history"];
      if (h.is_array() && !h.empty() && h[0].is_string()) out.push_back(h[0].get<std::string>());
    }
    return;
  }
  if (!v.is_array()) return;
  // Keras 2: ["name", node, tensor, {kwargs}]
  if (v.size() >= 3 && v[0].is_string() && v[1].is_number_integer()) {
    out.push_back(v[0].get<std::string>());
    return;
  }
  for (const json& e : v) inbound_names(e, out, depth + 1);
}

/// The one layer a Functional model's input_layers or output_layers names.
std::string one_endpoint(const Reader& r, const json& v, const char* what) {
  std::vector<std::string> names;
  if (v.is_array() && v.size() == 3 && v[0].is_string()) {
    names.push_back(v[0].get<std::string>());
  } else if (v.is_array()) {
    for (const json& e : v)
      if (e.is_array() && !e.empty() && e[0].is_string()) names.push_back(e[0].get<std::string>());
  }
  if (names.size() != 1)
    r.fail("the model has ", names.size(), " ", what, "s; epoch trains models with one");
  return names[0];
}

Task task_of(const Reader& r, const json& top, const std::string& out_activation,
             std::int64_t units, std::int64_t input_numel, bool& from_logits) {
  from_logits = false;
  json loss;
  if (top.contains("compile_config") && top["compile_config"].is_object())
    loss = top["compile_config"].value("loss", json());
  if (loss.is_null()) {  // no compile_config: the output says
    if (out_activation == "softmax") return Task::classification;
    if (out_activation == "sigmoid" && units == 1) return Task::binary;
    if (out_activation == "sigmoid" && units == input_numel) return Task::reconstruction;
    if (out_activation == "linear" && units >= 2) {
      from_logits = true;
      return Task::classification;
    }
    r.fail("the model has no compile_config and its output (", out_activation, ", ", units,
           " units) does not say which loss it trains with");
  }
  std::string name;
  if (loss.is_string()) {
    name = loss.get<std::string>();
  } else if (loss.is_object()) {
    name = loss.value("class_name", "");
    if (loss.contains("config") && loss["config"].is_object()) {
      const json& lc = loss["config"];
      from_logits = lc.value("from_logits", false);
      // What would change the loss itself is refused, not dropped.
      if (lc.contains("label_smoothing") && lc["label_smoothing"] != 0)
        r.fail("compile_config loss ", name, " label_smoothing ",
               json_excerpt(lc["label_smoothing"]), " is not supported");
      const json reduction = lc.value("reduction", json("sum_over_batch_size"));
      if (reduction != "sum_over_batch_size" && reduction != "auto" && !reduction.is_null())
        r.fail("compile_config loss ", name, " reduction ", json_excerpt(reduction),
               " is not supported (sum_over_batch_size: the batch's mean)");
      if (lc.contains("ignore_class") && !lc["ignore_class"].is_null())
        r.fail("compile_config loss ", name, " ignore_class is not supported");
      if (lc.contains("axis") && lc["axis"] != -1)
        r.fail("compile_config loss ", name, " axis ", json_excerpt(lc["axis"]),
               " is not supported");
    }
  } else {
    r.fail("compile_config loss ", json_excerpt(loss), " is not supported (one loss)");
  }
  if (name == "sparse_categorical_crossentropy" || name == "categorical_crossentropy" ||
      name == "SparseCategoricalCrossentropy" || name == "CategoricalCrossentropy")
    return Task::classification;
  if (name == "binary_crossentropy" || name == "BinaryCrossentropy") return Task::binary;
  if (name == "mse" || name == "mean_squared_error" || name == "MeanSquaredError")
    return Task::reconstruction;
  r.fail("compile_config loss ", name, " is not supported (categorical or binary ",
         "cross-entropy, mean squared error)");
}

void optimizer_recipe(const Reader& r, const json& top, Recipe& recipe, bool& decoupled) {
  decoupled = false;
  if (!top.contains("compile_config") || !top["compile_config"].is_object()) return;
  const json o = top["compile_config"].value("optimizer", json());
  if (o.is_null()) return;
  std::string cls = o.is_string() ? o.get<std::string>() : o.value("class_name", "");
  const json c = o.is_object() && o.contains("config") ? o["config"] : json::object();
  for (char& ch : cls) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  const auto number = [&](const char* key, double fallback) {
    const json v = c.value(key, json(fallback));
    if (v.is_null()) return fallback;
    if (!v.is_number())
      r.fail("compile_config optimizer ", key, " ", json_excerpt(v),
             " is not supported (a number; a schedule is set with --schedule)");
    return v.get<double>();
  };
  for (const char* key : {"clipnorm", "global_clipnorm", "clipvalue"})
    if (c.contains(key) && !c[key].is_null())
      r.fail("compile_config optimizer ", key, " is not supported");
  if (c.value("use_ema", false)) r.fail("compile_config optimizer use_ema is not supported");
  const double lr = number("learning_rate", cls == "sgd" ? 0.01 : 0.001);
  const double wd = number("weight_decay", 0.0);
  if (cls == "adam" || cls == "adamw") {
    if (c.value("amsgrad", false)) r.fail("compile_config optimizer amsgrad is not supported");
    recipe.set("optimizer.name", cls)
        .set("optimizer.lr", lr)
        .set("optimizer.beta1", number("beta_1", 0.9))
        .set("optimizer.beta2", number("beta_2", 0.999))
        .set("optimizer.eps", number("epsilon", 1e-7))
        .set("optimizer.keras_epsilon", true);  // "epsilon hat": added before the bias correction
    if (cls == "adamw") {
      recipe.set("optimizer.weight_decay", number("weight_decay", 0.004));
      decoupled = true;
    } else if (wd != 0.0) {
      r.fail("compile_config optimizer Adam with weight_decay is not supported (AdamW is)");
    }
  } else if (cls == "sgd") {
    if (wd != 0.0) r.fail("compile_config optimizer SGD with weight_decay is not supported");
    recipe.set("optimizer.name", "sgd")
        .set("optimizer.lr", lr)
        .set("optimizer.momentum", number("momentum", 0.0))
        .set("optimizer.nesterov", c.value("nesterov", false));
  } else if (cls == "rmsprop") {
    if (wd != 0.0) r.fail("compile_config optimizer RMSprop with weight_decay is not supported");
    if (number("momentum", 0.0) != 0.0)
      r.fail("compile_config optimizer RMSprop with momentum is not supported");
    recipe.set("optimizer.name", "rmsprop")
        .set("optimizer.lr", lr)
        .set("optimizer.alpha", number("rho", 0.9))
        .set("optimizer.eps", number("epsilon", 1e-7))
        .set("optimizer.keras_epsilon", true)  // inside the square root
        .set("optimizer.centered", c.value("centered", false));
  } else {
    r.fail("compile_config optimizer ", cls, " is not supported (Adam, AdamW, SGD, RMSprop)");
  }
}

/// Orders the layers so that each comes after its inputs and the output is last (a depth-first
/// walk back from the output), refusing a cycle.
std::vector<std::string> topological(const Reader& r, const std::string& output,
                                     const std::map<std::string, std::vector<std::string>>& inputs,
                                     const std::string& input_name) {
  std::vector<std::string> order;
  std::map<std::string, int> state;  // 1: on the path, 2: done
  // Iterative, so that 10^6 layers in a line cannot overflow the stack.
  std::vector<std::pair<std::string, std::size_t>> stack{{output, 0}};
  state[output] = 1;
  while (!stack.empty()) {
    auto& [name, next] = stack.back();
    const auto it = inputs.find(name);
    if (it == inputs.end()) r.fail(name, ": a layer the model refers to is not in the file");
    if (next < it->second.size()) {
      const std::string in = it->second[next++];
      if (in == input_name) continue;
      const int s = state[in];
      if (s == 1) r.fail(in, ": the layers form a cycle (", in, " depends on itself)");
      if (s == 0) {
        state[in] = 1;
        stack.emplace_back(in, 0);
      }
    } else {
      state[name] = 2;
      order.push_back(name);
      stack.pop_back();
    }
  }
  return order;
}

ModelDescription read_keras(std::string_view text, const std::string& file) {
  json top = json::parse(text, nullptr, false);
  if (top.is_discarded() || !top.is_object())
    EPOCH_THROW(ConfigError, file, ": not valid JSON (a Keras model is model.to_json()'s text)");
  // Keras 2 records its version; Keras 3 writes "module" on every object.
  int version = 3;
  if (top.contains("keras_version") && top["keras_version"].is_string() &&
      top["keras_version"].get<std::string>().rfind("2", 0) == 0)
    version = 2;
  else if (!top.contains("module") && text.find("\"batch_input_shape\"") != std::string_view::npos)
    version = 2;
  Reader r(file, version);
  const std::string cls = top.value("class_name", "");
  if (cls != "Sequential" && cls != "Functional" && cls != "Model")
    r.fail("class ", cls.empty() ? std::string("(none)") : cls,
           " is not a Keras Sequential or Functional model");
  if (!top.contains("config")) r.fail("the model has no config");
  json config = top["config"];
  if (config.is_array()) config = json{{"layers", config}};  // old Keras 2 Sequential
  if (!config.is_object() || !config.contains("layers") || !config["layers"].is_array())
    r.fail("the model's config has no list of layers");
  const json& layers = config["layers"];
  if (layers.size() > kMaxLayers) r.fail(layers.size(), " layers (at most ", kMaxLayers, ")");

  ModelDescription d;
  d.name = file;
  d.file = file;
  d.format = version == 2 ? "keras 2" : "keras 3";
  d.channels_last = true;
  d.summary = "Keras " + std::to_string(version) + " " + cls + " '" +
              config.value("name", std::string("model")) + "'";

  const bool sequential = cls == "Sequential";
  std::string output_activation = "linear";
  if (sequential) {
    json shape;
    std::size_t first = 0;
    if (!layers.empty() && layers[0].value("class_name", "") == "InputLayer") {
      const json& c = layers[0].value("config", json::object());
      shape = c.contains("batch_shape") ? c["batch_shape"] : c.value("batch_input_shape", json());
      d.input_name = r.layer_name(layers[0]);
      first = 1;
    } else if (!layers.empty() && layers[0].contains("config") &&
               layers[0]["config"].contains("batch_input_shape")) {
      shape = layers[0]["config"]["batch_input_shape"];
    } else {
      shape = config.value("build_input_shape", json());
    }
    if (shape.is_null()) r.fail("the model does not say its input shape (no InputLayer)");
    d.input = input_shape(r, shape, "input");
    r.set_input_rank(d.input.size());
    if (first >= layers.size()) r.fail("the model has no layers");
    for (std::size_t i = first; i < layers.size(); ++i) r.layer(layers[i], {}, d);
  } else {
    const std::string in_name = one_endpoint(r, config.value("input_layers", json()), "input");
    const std::string out_name = one_endpoint(r, config.value("output_layers", json()), "output");
    std::map<std::string, const json*> by_name;
    std::map<std::string, std::vector<std::string>> inputs;
    for (const json& l : layers) {
      const std::string name = r.layer_name(l);
      if (!by_name.emplace(name, &l).second) r.fail(name, ": two layers have this name");
      const json nodes = l.value("inbound_nodes", json::array());
      if (nodes.size() > 1)
        r.fail(name, ": the layer is called ", nodes.size(),
               " times (a shared layer), which is not supported");
      std::vector<std::string> names;
      if (!nodes.empty()) {
        const json& n = nodes[0];
        inbound_names(n.is_object() ? n.value("args", json::array()) : n, names);
      }
      inputs[name] = names;
    }
    const auto in_it = by_name.find(in_name);
    if (in_it == by_name.end() || in_it->second->value("class_name", "") != "InputLayer")
      r.fail(in_name, ": the model's input is not an InputLayer in the file");
    const json& ic = in_it->second->value("config", json::object());
    d.input = input_shape(
        r, ic.contains("batch_shape") ? ic["batch_shape"] : ic.value("batch_input_shape", json()),
        in_name);
    d.input_name = in_name;
    r.set_input_rank(d.input.size());
    if (out_name == in_name) r.fail("the model's output is its input");
    for (const std::string& name : topological(r, out_name, inputs, in_name)) {
      const json& l = *by_name.at(name);
      if (l.value("class_name", "") == "InputLayer")
        r.fail(name, ": a second InputLayer (epoch trains models with one input)");
      if (inputs[name].empty()) r.fail(name, ": the layer takes no input");
      r.layer(l, inputs[name], d);
    }
  }
  if (d.layers.empty()) r.fail("the model has no layers");

  // The output: its activation and width say the task when compile_config does not.
  const LayerNode& out = d.layers.back();
  if (out.attrs.contains("activation")) output_activation = out.attrs["activation"];
  if (out.op == "activation") output_activation = out.attrs["function"];
  std::int64_t units = out.op == "dense" ? out.attrs["units"].get<std::int64_t>() : 0;
  if (units == 0 && out.op == "activation" && d.layers.size() >= 2 &&
      d.layers[d.layers.size() - 2].op == "dense")
    units = d.layers[d.layers.size() - 2].attrs["units"].get<std::int64_t>();
  std::int64_t numel = 1;
  for (std::int64_t s : d.input) numel *= s;
  bool from_logits = false;
  d.task = task_of(r, top, output_activation, units, numel, from_logits);
  const std::string applied = d.task == Task::classification ? "softmax" : "sigmoid";
  if (d.task != Task::reconstruction && !from_logits && output_activation != applied)
    r.fail(out.name, ": the output's activation is ", output_activation, ", but the loss expects ",
           applied, " probabilities (or from_logits=True)");
  if (from_logits && output_activation != "linear")
    r.fail(out.name, ": the loss takes logits (from_logits=True), but the output applies ",
           output_activation);

  // Keras trains at a constant rate, in batches of 32, on the images as given: the recipe
  // says so, then what compile_config says of the optimizer.
  d.recipe.set("schedule.name", "constant")
      .set("schedule.warmup_steps", std::int64_t{0})
      .set("batch_size", std::int64_t{32});
  bool decoupled = false;
  optimizer_recipe(r, top, d.recipe, decoupled);
  // A leading Rescaling is the run's preprocessing (applied once, by the data pipeline).
  for (LayerNode& n : d.layers) {
    if (n.op != "rescaling") continue;
    if (&n != &d.layers.front() || !(n.inputs.empty() || n.inputs == std::vector<std::string>{d.input_name}))
      break;
    const double scale = n.attrs["scale"].get<double>(), offset = n.attrs["offset"].get<double>();
    n.attrs["as_preprocessing"] = true;
    d.recipe.set("rescale", scale);
    if (offset != 0.0 && d.input.size() == 3)
      d.recipe.set("mean", std::vector<double>(static_cast<std::size_t>(d.input[0]), -offset))
          .set("std", std::vector<double>(static_cast<std::size_t>(d.input[0]), 1.0));
    else if (offset != 0.0)
      n.attrs.erase("as_preprocessing");
  }
  {
    // L2 regularizers: d/dw l2 * w^2 = 2 l2 w, weight decay on those parameters alone.
    const auto& l2 = r.l2();
    if (!l2.empty()) {
      if (decoupled) r.fail("L2 regularizers together with AdamW's weight decay are not supported");
      std::vector<std::string> paths;
      for (const auto& [path, factor] : l2) {
        if (factor != l2.front().second)
          r.fail(path.substr(0, path.find('.')), ": L2 factor ", factor, " differs from ",
                 l2.front().second, " of ", l2.front().first,
                 "; epoch applies one weight decay to the regularized parameters");
        paths.push_back(path);
      }
      d.recipe.set("optimizer.weight_decay", 2.0 * l2.front().second)
          .set("optimizer.decay_only", paths);
    }
  }
  if (version == 2) {
    // tf.keras normalizes images with its fused batch norm, whose moving variance averages the
    // Bessel-corrected (unbiased) batch variance; vectors take the plain one, biased as Keras
    // 3's (measured with tf_keras 2.21: 4-D inputs unbiased, 2-D biased).
    bool any = false;
    for (const LayerNode& n : d.layers) any |= n.op == "batch_norm";
    if (any) {
      const std::vector<Shape> shapes = layer_output_shapes(d);
      std::map<std::string, std::size_t> index;
      for (std::size_t i = 0; i < d.layers.size(); ++i) index[d.layers[i].name] = i;
      for (std::size_t i = 0; i < d.layers.size(); ++i) {
        LayerNode& n = d.layers[i];
        if (n.op != "batch_norm") continue;
        const std::string in = n.inputs.empty() ? (i == 0 ? d.input_name : d.layers[i - 1].name)
                                                : n.inputs[0];
        const Shape& shape = in == d.input_name ? d.input : shapes[index.at(in)];
        if (shape.size() == 3) n.attrs["running_variance"] = "unbiased";
      }
    }
  }
  return d;
}

}  // namespace

ModelDescription read_keras_json(std::string_view text, const std::string& file) {
  try {
    return read_keras(text, file);
  } catch (const json::exception& e) {  // a value of the wrong kind where Keras writes another
    std::string what = e.what();
    if (what.size() > 120) what = what.substr(0, 117) + "...";
    EPOCH_THROW(ConfigError, file, ": not a Keras model as Keras writes one (", what, ")");
  }
}

ModelDescription read_keras_archive(std::string_view bytes, const std::string& file) {
  const std::string config = data::read_zip_member(bytes, "config.json", file, 64u << 20);
  return read_keras_json(config, file);
}

}  // namespace epoch::models
