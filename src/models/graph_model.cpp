// From a description to modules: each layer's attributes checked and its output shape worked
// out from its inputs' (so a dense layer knows its inputs, a "same" convolution its padding),
// then a layer stack or a graph of the modules.
#include "epoch/models/graph_model.h"

#include <array>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "epoch/autograd/functions.h"
#include "epoch/nn/layers.h"
#include "epoch/nn/residual.h"
#include "epoch/tensor/error.h"

namespace epoch::models {
namespace {

constexpr std::int64_t kMaxSize = 1 << 16;           // a kernel, stride, pad or image side
constexpr std::int64_t kMaxWidth = 1 << 24;          // filters, units
constexpr std::int64_t kMaxSampleElements = std::int64_t{1} << 31;  // one sample's activations
constexpr int kMaxParametersLog2 = 32;
constexpr std::int64_t kMaxParameters = std::int64_t{1} << kMaxParametersLog2;

using Pair = std::array<std::int64_t, 2>;
using Quad = std::array<std::int64_t, 4>;  // top, bottom, left, right

/// One layer being built: its attributes, read with checks, and errors that name it.
class LayerReader {
 public:
  LayerReader(const ModelDescription& d, const LayerNode& n) : d_(d), n_(n) {}

  template <typename... Args>
  [[noreturn]] void fail(const Args&... args) const {
    std::ostringstream os;
    (os << ... << args);
    const std::string source =
        n_.attrs.contains("source") && n_.attrs["source"].is_string()
            ? n_.attrs["source"].get<std::string>()
            : n_.op;
    throw ConfigError((d_.file.empty() ? d_.name : d_.file) + ": " + n_.name + ": " + source +
                      " " + os.str());
  }

  /// Refuses attributes the op does not know (a typo must not be ignored).
  void expect_only(std::initializer_list<const char*> known) const {
    for (const auto& [key, value] : n_.attrs.items()) {
      if (key == "source") continue;
      bool ok = false;
      for (const char* k : known) ok = ok || key == k;
      if (!ok) fail("has an attribute '", key, "' that ", n_.op, " does not take");
    }
  }

  bool has(const char* key) const { return n_.attrs.contains(key); }

  std::int64_t integer(const char* key, std::int64_t fallback, std::int64_t lo,
                       std::int64_t hi) const {
    if (!has(key)) {
      if (fallback < lo) fail("needs '", key, "'");
      return fallback;
    }
    const nlohmann::json& v = n_.attrs[key];
    if (!v.is_number_integer()) fail(key, " must be an integer, not ", json_excerpt(v));
    const std::int64_t x = v.get<std::int64_t>();
    if (x < lo || x > hi) fail(key, " ", x, " is outside ", lo, "-", hi);
    return x;
  }

  Pair pair(const char* key, Pair fallback, std::int64_t lo, std::int64_t hi) const {
    if (!has(key)) {
      if (fallback[0] < lo) fail("needs '", key, "'");
      return fallback;
    }
    const nlohmann::json& v = n_.attrs[key];
    if (v.is_number_integer()) {
      const std::int64_t x = integer(key, 0, lo, hi);
      return {x, x};
    }
    if (!v.is_array() || v.size() != 2 || !v[0].is_number_integer() || !v[1].is_number_integer())
      fail(key, " must be an integer or two, not ", json_excerpt(v));
    Pair p{v[0].get<std::int64_t>(), v[1].get<std::int64_t>()};
    for (std::int64_t x : p)
      if (x < lo || x > hi) fail(key, " ", json_excerpt(v), " is outside ", lo, "-", hi);
    return p;
  }

  float number(const char* key, double fallback, double lo, double hi) const {
    double x = fallback;
    if (has(key)) {
      const nlohmann::json& v = n_.attrs[key];
      if (!v.is_number()) fail(key, " must be a number, not ", json_excerpt(v));
      x = v.get<double>();
    } else if (std::isnan(fallback)) {
      fail("needs '", key, "'");
    }
    if (!std::isfinite(x) || x < lo || x > hi) fail(key, " ", x, " is outside ", lo, "-", hi);
    return static_cast<float>(x);
  }

  std::string word(const char* key, const std::string& fallback) const {
    if (!has(key)) {
      if (fallback.empty()) fail("needs '", key, "'");
      return fallback;
    }
    const nlohmann::json& v = n_.attrs[key];
    if (!v.is_string()) fail(key, " must be a string, not ", json_excerpt(v));
    return v.get<std::string>();
  }

  bool flag(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    const nlohmann::json& v = n_.attrs[key];
    if (!v.is_boolean()) fail(key, " must be true or false, not ", json_excerpt(v));
    return v.get<bool>();
  }

  /// "valid" (no padding), "same" (TensorFlow's, for this input, kernel, stride and dilation)
  /// or [top, bottom, left, right].
  Quad padding(const Shape& in, Pair kernel, Pair stride, Pair dilation) const {
    if (!has("padding")) return {0, 0, 0, 0};
    const nlohmann::json& v = n_.attrs["padding"];
    if (v.is_string()) {
      const std::string p = v.get<std::string>();
      if (p == "valid") return {0, 0, 0, 0};
      if (p != "same") fail("padding '", p, "' is not supported (valid, same)");
      Quad q{};
      for (int i = 0; i < 2; ++i) {
        const std::int64_t size = in[1 + i];
        const std::int64_t span = (kernel[i] - 1) * dilation[i] + 1;
        const std::int64_t out = (size + stride[i] - 1) / stride[i];
        const std::int64_t total = std::max<std::int64_t>((out - 1) * stride[i] + span - size, 0);
        q[2 * i] = total / 2;
        q[2 * i + 1] = total - total / 2;
      }
      return q;
    }
    if (!v.is_array() || v.size() != 4)
      fail("padding must be \"valid\", \"same\" or [top, bottom, left, right], not ", json_excerpt(v));
    Quad q{};
    for (int i = 0; i < 4; ++i) {
      if (!v[i].is_number_integer()) fail("padding ", json_excerpt(v), " must hold integers");
      q[i] = v[i].get<std::int64_t>();
      if (q[i] < 0 || q[i] > kMaxSize) fail("padding ", json_excerpt(v), " is outside 0-", kMaxSize);
    }
    return q;
  }

  const LayerNode& node() const { return n_; }

 private:
  const ModelDescription& d_;
  const LayerNode& n_;
};

/// Caffe's BatchNorm (with the Scale after it): a batch norm that also keeps Caffe's third blob,
/// the moving average's scale factor (one number, kept at 1: epoch's running statistics are
/// already averages), so parameter counts are Caffe's.
class CaffeBatchNorm : public nn::BatchNorm {
 public:
  CaffeBatchNorm(std::int64_t channels, float momentum, float eps, bool affine)
      : nn::BatchNorm(channels, momentum, eps, true, affine), factor(Tensor::full({1}, 1.0f)) {
    register_buffer("factor", &factor);
  }
  Tensor factor;
};

/// A parameter's initializer as epoch's format writes it (description.h); null when absent.
std::optional<nn::ParamInit> param_init(const LayerReader& r, const char* key) {
  const LayerNode& n = r.node();
  if (!n.attrs.contains(key)) return std::nullopt;
  const nlohmann::json& v = n.attrs[key];
  if (!v.is_object() || !v.contains("kind") || !v["kind"].is_string())
    r.fail(key, " must be an object with a \"kind\", not ", json_excerpt(v));
  const auto number = [&](const char* field, double fallback) {
    if (!v.contains(field)) return fallback;
    if (!v[field].is_number() || !std::isfinite(v[field].get<double>()))
      r.fail(key, " ", field, " must be a finite number, not ", json_excerpt(v[field]));
    return v[field].get<double>();
  };
  const auto word = [&](const char* field, const char* fallback) {
    if (!v.contains(field)) return std::string(fallback);
    if (!v[field].is_string()) r.fail(key, " ", field, " must be a string");
    return v[field].get<std::string>();
  };
  nn::ParamInit init;
  const std::string kind = v["kind"].get<std::string>();
  if (kind == "constant") {
    init.kind = nn::ParamInit::Kind::constant;
    init.value = number("value", 0.0);
  } else if (kind == "uniform") {
    init.kind = nn::ParamInit::Kind::uniform;
    init.lo = number("lo", -0.05);
    init.hi = number("hi", 0.05);
    if (!(init.lo <= init.hi)) r.fail(key, " lo must not exceed hi");
  } else if (kind == "normal" || kind == "truncated_normal") {
    init.kind = kind == "normal" ? nn::ParamInit::Kind::normal
                                 : nn::ParamInit::Kind::truncated_normal;
    init.mean = number("mean", 0.0);
    init.std = number("std", 0.05);
    if (init.std < 0) r.fail(key, " std must not be negative");
  } else if (kind == "variance_scaling") {
    init.kind = nn::ParamInit::Kind::variance_scaling;
    init.scale = number("scale", 1.0);
    if (!(init.scale > 0)) r.fail(key, " scale must be positive");
    const std::string fan = word("fan", "in"), dist = word("distribution", "truncated_normal");
    if (fan == "in") init.fan = nn::ParamInit::Fan::in;
    else if (fan == "out") init.fan = nn::ParamInit::Fan::out;
    else if (fan == "average") init.fan = nn::ParamInit::Fan::average;
    else r.fail(key, " fan '", fan, "' is not in, out or average");
    if (dist == "uniform") init.distribution = nn::ParamInit::Distribution::uniform;
    else if (dist == "normal") init.distribution = nn::ParamInit::Distribution::normal;
    else if (dist == "truncated_normal") init.distribution = nn::ParamInit::Distribution::truncated_normal;
    else r.fail(key, " distribution '", dist, "' is not uniform, normal or truncated_normal");
  } else {
    r.fail(key, " kind '", kind, "' is not constant, uniform, normal, truncated_normal or variance_scaling");
  }
  return init;
}

/// Sets a weight's and bias's initializers on a layer's module where the node gives them.
void apply_inits(const LayerReader& r, nn::Module& m, bool bias) {
  if (auto w = param_init(r, "weight_init")) m.set_param_init("weight", *w);
  if (auto b = param_init(r, "bias_init")) {
    if (!bias) r.fail("has bias_init but no bias");
    m.set_param_init("bias", *b);
  }
}

std::string shape_text(const Shape& s) {
  std::string out = "(";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + ")";
}

void expect_image(const LayerReader& r, const Shape& in) {
  if (in.size() != 3) r.fail("takes images (C, H, W), not ", shape_text(in));
}

/// The link of an activation function; null for the identity (or an output's softmax or
/// sigmoid that the loss applies: `output_of_task`).
std::shared_ptr<nn::Module> activation_link(const LayerReader& r, const std::string& function,
                                            float alpha, float slope, float offset,
                                            bool loss_applies) {
  if (function == "linear" || function.empty()) return nullptr;
  if (function == "relu") return std::make_shared<nn::Act>(nn::Activation::relu);
  if (function == "tanh") return std::make_shared<nn::Act>(nn::Activation::tanh);
  if (function == "sigmoid")
    return loss_applies ? nullptr : std::make_shared<nn::Act>(nn::Activation::sigmoid);
  if (function == "hard_sigmoid") return nn::Act::hard_sigmoid(slope, offset);
  if (function == "leaky_relu") return nn::Act::leaky_relu(alpha);
  if (function == "elu") return nn::Act::elu(alpha);
  if (function == "selu") return nn::Act::elu(1.6732632423543772f, 1.0507009873554805f);
  if (function == "swish" || function == "silu")
    return std::make_shared<nn::Act>(nn::Activation::swish);
  if (function == "relu6") return nn::Act::relu_max(6.0f);
  if (function == "softmax") {
    if (loss_applies) return nullptr;
    r.fail("activation softmax is supported only on a classifier's output layer");
  }
  r.fail("activation '", function, "' is not supported");
}

struct BuiltNode {
  GraphModel::Node node;
  Shape shape;  // per-sample output
};

/// Whether this layer's softmax or sigmoid is the one the task's loss applies.
bool loss_applies(const ModelDescription& d, bool is_output, const std::string& function) {
  return is_output && ((d.task == Task::classification && function == "softmax") ||
                       (d.task == Task::binary && function == "sigmoid"));
}

BuiltNode build_node(const ModelDescription& d, const LayerNode& n,
                     const std::vector<Shape>& ins, bool is_output, std::int64_t& parameters,
                     int depth = 0);

/// A nested chain of layers (a block's "layers"): its links in order, and `shape` carried from
/// its input to its output.
nn::Links build_chain(const ModelDescription& d, const LayerReader& parent, const char* key,
                      Shape& shape, std::int64_t& parameters, int depth) {
  const nlohmann::json& list = parent.node().attrs[key];
  if (!list.is_array() || list.empty()) parent.fail(key, " must be a non-empty list of layers");
  if (depth > 8) parent.fail("nests blocks more than 8 deep");
  nn::Links links;
  std::set<std::string> names;
  for (const nlohmann::json& l : list) {
    if (!l.is_object() || !l.contains("name") || !l["name"].is_string() || !l.contains("op") ||
        !l["op"].is_string())
      parent.fail(key, " holds a layer without a name and an op");
    LayerNode n;
    n.name = l["name"].get<std::string>();
    n.op = l["op"].get<std::string>();
    for (const auto& [k, v] : l.items())
      if (k != "name" && k != "op") n.attrs[k] = v;
    if (n.name.empty() || n.name.find_first_of(".:") != std::string::npos || !names.insert(n.name).second)
      parent.fail(key, ": the name '", n.name, "' is empty, repeated, or holds '.' or ':'");
    if (n.op == "add" || n.op == "concat") parent.fail(key, ": ", n.op, " is not a chain's layer");
    BuiltNode b = build_node(d, n, {shape}, false, parameters, depth + 1);
    for (auto& link : b.node.links) links.push_back(std::move(link));
    shape = b.shape;
  }
  return links;
}

BuiltNode build_node(const ModelDescription& d, const LayerNode& n,
                     const std::vector<Shape>& ins, bool is_output, std::int64_t& parameters,
                     int depth) {
  const LayerReader r(d, n);
  // Weights are counted before they are made: a file cannot ask for more memory than the limit.
  const auto spend = [&](std::int64_t weights, std::int64_t per_weight, std::int64_t extra) {
    if (weights > kMaxParameters / std::max<std::int64_t>(per_weight, 1) ||
        parameters + weights * per_weight + extra > kMaxParameters)
      r.fail("brings the model beyond epoch's limit of 2^", kMaxParametersLog2, " parameters");
    parameters += weights * per_weight + extra;
  };
  BuiltNode b;
  nn::Links& links = b.node.links;
  const auto link = [&](const std::string& suffix, std::shared_ptr<nn::Module> m) {
    if (m != nullptr) links.emplace_back(suffix.empty() ? n.name : n.name + ":" + suffix, m);
  };
  const auto activation = [&](const std::string& function) {  // a conv2d's or dense's own
    link(function, activation_link(r, function, r.number("alpha", function == "elu" ? 1.0 : 0.3, 0.0, 1e6),
                                   r.number("slope", 0.2, -1e6, 1e6),
                                   r.number("offset", 0.5, -1e6, 1e6),
                                   loss_applies(d, is_output, function)));
  };
  const std::string& op = n.op;
  if (op != "add" && op != "concat" && ins.size() != 1)
    r.fail("takes one input, not ", ins.size());
  const Shape& in = ins[0];
  if (op == "conv2d") {
    r.expect_only({"filters", "kernel", "strides", "dilation", "groups", "padding", "bias",
                   "activation", "alpha", "slope", "offset", "weight_init", "bias_init",
                   "depth_multiplier"});
    expect_image(r, in);
    // A depthwise convolution (Keras's DepthwiseConv2D): depth_multiplier filters per input
    // channel, each channel its own group.
    const bool depthwise = r.has("depth_multiplier");
    if (depthwise && (r.has("filters") || r.has("groups")))
      r.fail("depth_multiplier takes neither filters nor groups (both follow the input)");
    const std::int64_t multiplier = depthwise ? r.integer("depth_multiplier", 1, 1, 4096) : 1;
    if (depthwise && in[0] > kMaxWidth / multiplier)
      r.fail("depth_multiplier ", multiplier, " of ", in[0], " channels is too wide");
    const std::int64_t filters =
        depthwise ? in[0] * multiplier : r.integer("filters", -1, 1, kMaxWidth);
    const Pair k = r.pair("kernel", {-1, -1}, 1, kMaxSize);
    const Pair s = r.pair("strides", {1, 1}, 1, kMaxSize);
    const Pair dil = r.pair("dilation", {1, 1}, 1, kMaxSize);
    const std::int64_t groups = depthwise ? in[0] : r.integer("groups", 1, 1, kMaxWidth);
    if (in[0] % groups != 0 || filters % groups != 0)
      r.fail("groups ", groups, " must divide the input's ", in[0], " channels and the ",
             filters, " filters");
    const Quad pad = r.padding(in, k, s, dil);
    ops::Conv2dParams p;
    p.stride_h = s[0];
    p.stride_w = s[1];
    p.dilation_h = dil[0];
    p.dilation_w = dil[1];
    p.groups = groups;
    p.pad_h = std::min(pad[0], pad[1]);
    p.pad_w = std::min(pad[2], pad[3]);
    const Quad extra{pad[0] - p.pad_h, pad[1] - p.pad_h, pad[2] - p.pad_w, pad[3] - p.pad_w};
    Shape x = in;
    if (extra != Quad{0, 0, 0, 0}) {
      link("pad", std::make_shared<nn::ZeroPad2d>(extra[0], extra[1], extra[2], extra[3]));
      x = {in[0], in[1] + extra[0] + extra[1], in[2] + extra[2] + extra[3]};
    }
    for (int i = 0; i < 2; ++i)
      if (x[1 + i] + 2 * (i == 0 ? p.pad_h : p.pad_w) < (k[i] - 1) * dil[i] + 1)
        r.fail("kernel ", k[0], "x", k[1], " does not fit its input ", shape_text(in));
    spend(filters, in[0] / groups * k[0] * k[1], filters);
    const bool bias = r.flag("bias", true);
    auto conv = std::make_shared<nn::Conv2d>(in[0], filters, k[0], k[1], p, bias);
    apply_inits(r, *conv, bias);
    if (depthwise) {
      // Keras's fans of its (kh, kw, C, multiplier) kernel: in C kh kw, out multiplier kh kw
      // (epoch's rule would take the grouped weight's); Glorot-uniform when none is given.
      nn::ParamInit w = param_init(r, "weight_init").value_or(
          nn::ParamInit{.kind = nn::ParamInit::Kind::variance_scaling,
                        .fan = nn::ParamInit::Fan::average,
                        .distribution = nn::ParamInit::Distribution::uniform});
      if (w.kind == nn::ParamInit::Kind::variance_scaling) {
        const double fan_in = static_cast<double>(in[0] * k[0] * k[1]);
        const double fan_out = static_cast<double>(multiplier * k[0] * k[1]);
        const double n = w.fan == nn::ParamInit::Fan::in    ? fan_in
                         : w.fan == nn::ParamInit::Fan::out ? fan_out
                                                            : (fan_in + fan_out) / 2.0;
        nn::ParamInit e;
        if (w.distribution == nn::ParamInit::Distribution::uniform) {
          e.kind = nn::ParamInit::Kind::uniform;
          e.hi = std::sqrt(3.0 * w.scale / n);
          e.lo = -e.hi;
        } else {
          e.kind = w.distribution == nn::ParamInit::Distribution::normal
                       ? nn::ParamInit::Kind::normal
                       : nn::ParamInit::Kind::truncated_normal;
          e.std = std::sqrt(w.scale / n) /
                  (w.distribution == nn::ParamInit::Distribution::normal ? 1.0
                                                                         : 0.87962566103423978);
        }
        w = e;
      }
      conv->set_param_init("weight", w);
    }
    link("", conv);
    activation(r.word("activation", "linear"));
  } else if (op == "dense") {
    r.expect_only({"units", "bias", "activation", "alpha", "slope", "offset", "weight_init",
                   "bias_init"});
    if (in.size() != 1) r.fail("takes vectors (D): flatten ", shape_text(in), " first");
    const std::int64_t units = r.integer("units", -1, 1, kMaxWidth);
    spend(units, in[0], units);
    const bool bias = r.flag("bias", true);
    auto dense = std::make_shared<nn::Linear>(in[0], units, bias);
    apply_inits(r, *dense, bias);
    link("", dense);
    activation(r.word("activation", "linear"));
  } else if (op == "max_pool" || op == "avg_pool") {
    r.expect_only({"size", "strides", "padding", "ceil"});
    expect_image(r, in);
    const Pair k = r.pair("size", {-1, -1}, 1, kMaxSize);
    const Pair s = r.pair("strides", k, 1, kMaxSize);
    Quad pad = r.padding(in, k, s, {1, 1});
    const bool same = r.has("padding") && r.node().attrs["padding"] == "same";
    ops::Pool2dParams p;
    p.kernel_h = k[0];
    p.kernel_w = k[1];
    p.stride_h = s[0];
    p.stride_w = s[1];
    p.count_include_pad = !same;
    if (r.flag("ceil", false)) {
      // Caffe: ceil((in + 2 pad - k) / stride) + 1 windows, the last starting inside the image
      // or its declared padding; windows are clipped at the end (max: -inf padding). Caffe's
      // average divides by the window's extent within the image and its declared padding: with
      // no declared padding that is the values inside the image (count_include_pad false).
      bool overhang_unpadded = false, padded = false;
      for (int i = 0; i < 2; ++i) {
        const std::int64_t size = in[1 + i], before = pad[2 * i];
        if (pad[2 * i + 1] != before) r.fail("ceil rounding takes equal padding on both sides");
        std::int64_t out = (size + 2 * before - k[i] + s[i] - 1) / s[i] + 1;
        if (before > 0 && (out - 1) * s[i] >= size + before) --out;
        const std::int64_t after = std::max<std::int64_t>((out - 1) * s[i] + k[i] - size - before, 0);
        if (op == "avg_pool" && after > before && before > 0)
          r.fail("average pooling whose last window overhangs the padding is not supported");
        overhang_unpadded |= after > 0 && before == 0;
        padded |= before > 0;
        pad[2 * i + 1] = after;
      }
      if (op == "avg_pool" && overhang_unpadded) {
        if (padded)
          r.fail("average pooling padded on one axis and overhanging on the other is not supported");
        p.count_include_pad = false;
      }
    }
    p.pad_top = pad[0];
    p.pad_bottom = pad[1];
    p.pad_left = pad[2];
    p.pad_right = pad[3];
    for (int i = 0; i < 2; ++i)
      if (in[1 + i] + pad[2 * i] + pad[2 * i + 1] < k[i])
        r.fail("window ", k[0], "x", k[1], " does not fit its input ", shape_text(in));
    link("", std::make_shared<nn::Pool2d>(op == "max_pool" ? nn::PoolKind::max : nn::PoolKind::avg,
                                          p));
  } else if (op == "global_avg_pool" || op == "global_max_pool") {
    r.expect_only({});
    expect_image(r, in);
    if (op == "global_avg_pool")
      link("", std::make_shared<nn::GlobalAvgPool2d>());
    else
      link("", std::make_shared<nn::GlobalMaxPool2d>());
  } else if (op == "zero_pad") {
    r.expect_only({"pad"});
    expect_image(r, in);
    if (!r.has("pad")) r.fail("needs 'pad'");
    const nlohmann::json& v = r.node().attrs["pad"];
    if (!v.is_array() || v.size() != 4) r.fail("pad must be [top, bottom, left, right]");
    Quad p{};
    for (int i = 0; i < 4; ++i) {
      if (!v[i].is_number_integer()) r.fail("pad ", json_excerpt(v), " must hold integers");
      p[i] = v[i].get<std::int64_t>();
      if (p[i] < 0 || p[i] > kMaxSize) r.fail("pad ", json_excerpt(v), " is outside 0-", kMaxSize);
    }
    link("", std::make_shared<nn::ZeroPad2d>(p[0], p[1], p[2], p[3]));
  } else if (op == "flatten") {
    r.expect_only({"order"});
    const std::string order = r.word("order", "chw");
    if (order != "chw" && order != "hwc") r.fail("order '", order, "' is not chw or hwc");
    link("", std::make_shared<nn::Flatten>());
  } else if (op == "dropout") {
    r.expect_only({"rate"});
    const float rate = r.number("rate", NAN, 0.0, 0.999);
    if (rate == 0.0f)
      link("", std::make_shared<nn::Identity>("Dropout(0)"));
    else
      link("", std::make_shared<nn::Dropout>(rate));
  } else if (op == "batch_norm") {
    r.expect_only({"momentum", "epsilon", "caffe_factor", "running_variance", "affine"});
    const bool affine = r.flag("affine", true);
    const float momentum = r.number("momentum", 0.1, 1e-9, 1.0);
    const float eps = r.number("epsilon", 1e-5, 1e-12, 1.0);
    const std::string variance = r.word("running_variance", "unbiased");
    if (variance != "unbiased" && variance != "biased")
      r.fail("running_variance ", variance, ": unbiased (PyTorch, Caffe) or biased (Keras)");
    if (in.size() != 1 && in.size() != 3) r.fail("takes (C, H, W) or (D), not ", shape_text(in));
    spend(in[0], 4, 0);
    if (r.flag("caffe_factor", false))
      link("", std::make_shared<CaffeBatchNorm>(in[0], momentum, eps, affine));
    else if (affine)
      link("", std::make_shared<nn::BatchNorm>(in[0], momentum, eps, variance == "unbiased"));
    else
      r.fail("affine false is supported for Caffe's BatchNorm (caffe_factor) alone");
  } else if (op == "activation") {
    r.expect_only({"function", "alpha", "slope", "offset"});
    const std::string f = r.word("function", "");
    link("", activation_link(r, f, r.number("alpha", f == "elu" ? 1.0 : 0.3, 0.0, 1e6), r.number("slope", 0.2, -1e6, 1e6),
                         r.number("offset", 0.5, -1e6, 1e6), loss_applies(d, is_output, f)));
  } else if (op == "rescaling") {
    r.expect_only({"scale", "offset", "as_preprocessing"});
    const float scale = r.number("scale", NAN, -1e9, 1e9);
    const float offset = r.number("offset", 0.0, -1e9, 1e9);
    if (r.flag("as_preprocessing", false)) {
      std::ostringstream os;
      os << "Rescaling(" << scale << " x + " << offset << ", by the data pipeline)";
      link("", std::make_shared<nn::Identity>(os.str()));
    } else {
      link("", std::make_shared<nn::Rescale>(scale, offset));
    }
  } else if (op == "lrn") {
    r.expect_only({"size", "alpha", "beta", "k", "region"});
    expect_image(r, in);
    const std::string region = r.word("region", "across_channels");
    if (region != "across_channels" && region != "within_channel")
      r.fail("region ", region, ": across_channels or within_channel");
    ops::LrnParams p;
    p.size = r.integer("size", -1, 1, 4097);
    if (p.size % 2 == 0) r.fail("size ", p.size, " must be odd");
    p.alpha = r.number("alpha", NAN, 0.0, 1e6);
    p.beta = r.number("beta", NAN, 0.0, 1e6);
    p.k = r.number("k", 1.0, 1e-9, 1e6);
    link("", std::make_shared<nn::Lrn>(p, region == "within_channel"));
  } else if (op == "adaptive_avg_pool") {
    r.expect_only({"size"});
    expect_image(r, in);
    const Pair size = r.pair("size", {-1, -1}, 1, kMaxSize);
    if (in[1] % size[0] != 0 || in[2] % size[1] != 0)
      r.fail("size ", size[0], "x", size[1], " does not divide its input ", shape_text(in));
    link("", std::make_shared<nn::AdaptiveAvgPool2d>(size[0], size[1]));
  } else if (op == "sequential") {
    r.expect_only({"layers"});
    Shape shape = in;
    auto seq = std::make_shared<nn::Sequential>();
    for (auto& [name, m] : build_chain(d, r, "layers", shape, parameters, depth)) seq->add(name, m);
    link("", seq);
  } else if (op == "residual") {
    // y = relu(main(x) + shortcut(x)): the shortcut is "downsample" or the identity.
    r.expect_only({"layers", "downsample"});
    expect_image(r, in);
    Shape main = in, shortcut = in;
    auto block = std::make_shared<nn::Residual>();
    for (auto& [name, m] : build_chain(d, r, "layers", main, parameters, depth)) block->add(name, m);
    if (r.has("downsample")) {
      auto down = std::make_shared<nn::Sequential>();
      for (auto& [name, m] : build_chain(d, r, "downsample", shortcut, parameters, depth))
        down->add(name, m);
      block->add("downsample", down);
    }
    if (main != shortcut)
      r.fail("main path gives ", shape_text(main), " but the shortcut ", shape_text(shortcut));
    link("", block);
  } else if (op == "add" || op == "concat") {
    r.expect_only({});
    if (ins.size() < 2) r.fail("takes two or more inputs, not ", ins.size());
    b.node.join = op == "add" ? GraphModel::Join::add : GraphModel::Join::concat;
    Shape out = in;
    for (std::size_t i = 1; i < ins.size(); ++i) {
      const Shape& other = ins[i];
      const bool fits = op == "add" ? other == in
                                    : other.size() == in.size() &&
                                          std::equal(other.begin() + 1, other.end(), in.begin() + 1);
      if (!fits)
        r.fail("inputs ", shape_text(in), " and ", shape_text(other),
               op == "add" ? " differ" : " differ other than in channels");
      if (op == "concat") out[0] += other[0];
    }
    link("", std::make_shared<nn::Identity>(op == "add" ? "Add" : "Concatenate"));  // its row
    b.shape = out;
    return b;
  } else {
    r.fail("is an op epoch does not know ('", op, "')");
  }
  Shape shape = in;
  try {
    for (const auto& [name, m] : links) shape = m->output_shape(shape);
  } catch (const InvalidArgument& e) {
    r.fail("does not fit its input ", shape_text(in));
  }
  std::int64_t elements = 1;
  for (std::int64_t s : shape) {
    if (s < 1) r.fail("gives an empty output ", shape_text(shape), " for input ", shape_text(in));
    elements *= s;
    if (elements > kMaxSampleElements)
      r.fail("output ", shape_text(shape), " is beyond epoch's limit of 2^31 values per sample");
  }
  b.shape = shape;
  return b;
}

struct Built {
  std::vector<BuiltNode> nodes;
  std::vector<Shape> shapes;  // each layer's per-sample output
  std::vector<std::string> names;
  Shape output;
  bool chain = true;
  bool flat_input = false;
  std::vector<std::pair<int, float>> aux;  // auxiliary classifiers: (layer index, loss weight)
};

Built build_all(const ModelDescription& d) {
  const std::string where = d.file.empty() ? d.name : d.file;
  if (d.layers.empty()) EPOCH_THROW(ConfigError, where, ": the model has no layers");
  if (d.input.size() != 1 && d.input.size() != 3)
    EPOCH_THROW(ConfigError, where, ": the input shape ", shape_text(d.input),
                " is neither an image (C, H, W) nor a vector (D)");
  std::int64_t input_elements = 1;
  for (std::int64_t s : d.input) {
    if (s < 1 || s > kMaxSize * 64)
      EPOCH_THROW(ConfigError, where, ": the input shape ", shape_text(d.input),
                  " is outside epoch's limits (1-", kMaxSize * 64, " per side)");
    input_elements *= s;
    if (input_elements > kMaxSampleElements)
      EPOCH_THROW(ConfigError, where, ": the input shape ", shape_text(d.input),
                  " is beyond epoch's limit of 2^31 values per sample");
  }
  Built b;
  b.flat_input = d.input.size() == 1;
  std::map<std::string, int> index;
  std::vector<Shape> shapes;
  std::int64_t parameters = 0;
  for (std::size_t i = 0; i < d.layers.size(); ++i) {
    const LayerNode& n = d.layers[i];
    const LayerReader r(d, n);
    if (n.name.empty() || n.name.find('.') != std::string::npos || n.name.find(':') != std::string::npos)
      r.fail("has a name epoch cannot use (empty, or holding '.' or ':')");
    if (n.name == d.input_name || index.count(n.name) > 0)
      r.fail("is the name of two layers");
    std::vector<int> inputs;
    if (n.inputs.empty()) {
      inputs.push_back(static_cast<int>(i) - 1);
    } else {
      for (const std::string& name : n.inputs) {
        if (name == d.input_name) {
          inputs.push_back(-1);
        } else if (auto it = index.find(name); it != index.end()) {
          inputs.push_back(it->second);
        } else {
          r.fail("takes input '", name, "', which is no earlier layer",
                 name == n.name ? " (a layer cannot take its own output)" : "");
        }
      }
    }
    std::vector<Shape> ins;
    for (int k : inputs) ins.push_back(k < 0 ? d.input : shapes[static_cast<std::size_t>(k)]);
    BuiltNode node = build_node(d, n, ins, i + 1 == d.layers.size(), parameters);
    node.node.inputs = inputs;
    if (inputs.size() != 1 || inputs[0] != static_cast<int>(i) - 1 ||
        node.node.join != GraphModel::Join::none)
      b.chain = false;
    index[n.name] = static_cast<int>(i);
    shapes.push_back(node.shape);
    b.names.push_back(n.name);
    b.nodes.push_back(std::move(node));
  }
  b.output = shapes.back();
  b.shapes = shapes;
  std::vector<bool> used(d.layers.size(), false);
  used.back() = true;
  for (const auto& [name, weight] : d.aux_losses) {
    const auto it = index.find(name);
    if (it == index.end() || it->second + 1 == static_cast<int>(d.layers.size()))
      EPOCH_THROW(ConfigError, where, ": the auxiliary loss's layer '", name,
                  "' is no layer before the output");
    if (shapes[static_cast<std::size_t>(it->second)] != b.output)
      LayerReader(d, d.layers[static_cast<std::size_t>(it->second)])
          .fail("gives ", shape_text(shapes[static_cast<std::size_t>(it->second)]),
                " where an auxiliary classifier gives the output's ", shape_text(b.output));
    if (!(weight > 0.0 && weight <= 1e6))
      EPOCH_THROW(ConfigError, where, ": the auxiliary loss's weight ", weight,
                  " is outside (0, 1e6]");
    b.aux.emplace_back(it->second, static_cast<float>(weight));
    used[static_cast<std::size_t>(it->second)] = true;
    b.chain = false;
  }
  // Every layer's output is used (a layer no path reaches the output or an auxiliary loss from
  // is an error in the file, not something to compute and drop).
  for (std::size_t i = d.layers.size(); i-- > 0;)
    if (used[i])
      for (int k : b.nodes[i].node.inputs)
        if (k >= 0) used[static_cast<std::size_t>(k)] = true;
  for (std::size_t i = 0; i < used.size(); ++i)
    if (!used[i])
      LayerReader(d, d.layers[i]).fail("leads nowhere: the output (", d.layers.back().name,
                                        ") does not use it");
  // The task fits the output.
  const std::string out_name = d.layers.back().name;
  const std::int64_t out_numel = shape_numel(b.output);
  const std::int64_t in_numel = shape_numel(d.input);
  const bool vector_out = b.output.size() == 1;
  if (d.task == Task::classification && !(vector_out && b.output[0] >= 2))
    EPOCH_THROW(ConfigError, where, ": the output layer ", out_name, " gives ",
                shape_text(b.output), "; a classifier gives (K) class scores, K >= 2");
  if (d.task == Task::binary && !(vector_out && b.output[0] == 1))
    EPOCH_THROW(ConfigError, where, ": the output layer ", out_name, " gives ",
                shape_text(b.output), "; a binary classifier gives (1)");
  if (d.task == Task::reconstruction && !(vector_out && out_numel == in_numel))
    EPOCH_THROW(ConfigError, where, ": the output layer ", out_name, " gives ",
                shape_text(b.output), "; a reconstruction gives the input's ", in_numel,
                " values as a vector");
  if (d.task == Task::frame_prediction)
    EPOCH_THROW(ConfigError, where, ": a frame-prediction model is a built-in block (prednet)");
  return b;
}

ModelSpec spec_of(const ModelDescription& d, const Built& b) {
  ModelSpec s;
  s.name = d.name;
  s.summary = d.summary.empty() ? d.format + " model " + d.name : d.summary;
  s.input = b.flat_input ? Shape{1, 1, d.input[0]} : d.input;
  s.outputs = shape_numel(b.output);
  s.task = d.task;
  s.recipe = d.recipe;
  return s;
}

}  // namespace

void GraphModel::add_node(Node node) {
  for (const auto& [name, m] : node.links) register_module(name, m);
  nodes_.push_back(std::move(node));
}

void GraphModel::set_aux_losses(std::vector<std::pair<int, float>> aux) {
  aux_ = std::move(aux);
  // What evaluation computes: the nodes the output depends on.
  output_needs_.assign(nodes_.size(), false);
  if (!nodes_.empty()) output_needs_.back() = true;
  for (std::size_t i = nodes_.size(); i-- > 0;)
    if (output_needs_[i])
      for (int k : nodes_[i].inputs)
        if (k >= 0) output_needs_[static_cast<std::size_t>(k)] = true;
}

Tensor GraphModel::loss(const Tensor& output, const Tensor& x, const Tensor& labels) const {
  Tensor total = Model::loss(output, x, labels);
  // The auxiliary classifiers of this training step's forward (none when evaluating).
  for (std::size_t i = 0; i < aux_outputs_.size(); ++i)
    total = add(total, affine(Model::loss(aux_outputs_[i], x, labels), aux_[i].second));
  aux_outputs_.clear();
  return total;
}

Tensor GraphModel::forward(const Tensor& x) {
  std::vector<Tensor> outs;
  outs.reserve(nodes_.size());
  const bool with_aux = !aux_.empty() && is_training();
  aux_outputs_.clear();
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    if (!aux_.empty() && !with_aux && !output_needs_[i]) {  // an auxiliary head, evaluating
      outs.emplace_back();
      continue;
    }
    const auto input = [&](int k) -> const Tensor& {
      return k < 0 ? x : outs[static_cast<std::size_t>(k)];
    };
    Tensor in;
    if (n.join == Join::none) {
      in = input(n.inputs[0]);
    } else if (n.join == Join::add) {
      in = to_row_major(input(n.inputs[0]));
      for (std::size_t i = 1; i < n.inputs.size(); ++i)
        in = add(in, to_row_major(input(n.inputs[i])));
    } else {
      std::vector<Tensor> parts;
      for (int k : n.inputs) parts.push_back(to_row_major(input(k)));
      in = concat(parts, 1);
    }
    outs.push_back(n.links.empty() ? in : nn::forward_in_order(n.links, in));
  }
  if (with_aux)
    for (const auto& [k, weight] : aux_) aux_outputs_.push_back(to_row_major(outs[static_cast<std::size_t>(k)]));
  return to_row_major(outs.back());
}

std::vector<std::pair<Shape, Shape>> GraphModel::node_shapes(const Shape& input) const {
  std::vector<std::pair<Shape, Shape>> shapes;
  const auto out = [&](int k) -> const Shape& {
    return k < 0 ? input : shapes[static_cast<std::size_t>(k)].second;
  };
  for (const Node& n : nodes_) {
    Shape in = out(n.inputs[0]);
    if (n.join == Join::concat)
      for (std::size_t i = 1; i < n.inputs.size(); ++i) in[0] += out(n.inputs[i])[0];
    Shape o = nn::output_shape_in_order(n.links, in);
    shapes.emplace_back(std::move(in), std::move(o));
  }
  return shapes;
}

Shape GraphModel::output_shape(const Shape& input) const { return node_shapes(input).back().second; }

std::int64_t GraphModel::flops(const Shape& input) const {
  const auto shapes = node_shapes(input);
  std::int64_t total = 0;
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    total += nn::flops_in_order(nodes_[i].links, shapes[i].first);
  return total;
}

std::vector<std::pair<const nn::Links::value_type*, Shape>> GraphModel::link_inputs(
    const Shape& input) const {
  const auto shapes = node_shapes(input);
  std::vector<std::pair<const nn::Links::value_type*, Shape>> rows;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    Shape shape = shapes[i].first;
    for (const auto& l : nodes_[i].links) {
      rows.emplace_back(&l, shape);
      shape = l.second->output_shape(shape);
    }
  }
  return rows;
}

ModelSpec described_spec(const ModelDescription& d) { return spec_of(d, build_all(d)); }

std::vector<Shape> layer_output_shapes(const ModelDescription& d) { return build_all(d).shapes; }

std::shared_ptr<Model> build_described(const ModelDescription& d) {
  Built b = build_all(d);
  ModelSpec spec = spec_of(d, b);
  try {
    if (b.chain) {
      auto stack = std::make_shared<LayerStack>(spec);
      if (b.flat_input) stack->add("input:flatten", std::make_shared<nn::Flatten>());
      for (BuiltNode& n : b.nodes)
        for (auto& [name, m] : n.node.links) stack->add(name, m);
      return stack;
    }
    auto graph = std::make_shared<GraphModel>(spec);
    if (b.flat_input) {
      GraphModel::Node flat;
      flat.inputs = {-1};
      flat.links.emplace_back("input:flatten", std::make_shared<nn::Flatten>());
      graph->add_node(std::move(flat));
      for (BuiltNode& n : b.nodes)  // every index moves one on
        for (int& k : n.node.inputs) ++k;
    }
    for (BuiltNode& n : b.nodes) graph->add_node(std::move(n.node));
    if (b.flat_input)
      for (auto& [k, weight] : b.aux) ++k;
    graph->set_aux_losses(std::move(b.aux));
    return graph;
  } catch (const InvalidArgument& e) {  // two links of one name (a layer named "conv1:pad")
    EPOCH_THROW(ConfigError, d.file.empty() ? d.name : d.file, ": ", e.what());
  }
}

}  // namespace epoch::models
