// Per-layer timing (see layer_bench.h). Each layer runs alone on its own input, the output of
// the layers before it computed once without a graph. Where the full step would send a
// gradient into the layer's input (a layer with parameters lies before it), the input is a
// graph node that drops what it receives: backward then computes the input's gradient as in
// the step, without the copy a leaf would keep. Parameters live in the step's flat buffers,
// so their gradients accumulate as they do in training.
#include "epoch/bench/layer_bench.h"

#include "epoch/bench/peak_bench.h"

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "bench/bench_util.h"
#include "epoch/autograd/autograd.h"
#include "epoch/models/zoo.h"
#include "epoch/nn/layers.h"
#include "epoch/optim/optimizer.h"
#include "epoch/tensor/device.h"
#include "epoch/tensor/error.h"
#include "epoch/train/step.h"

namespace epoch::bench {
namespace {

using json = nlohmann::json;

// The automatic step counts (see LayerBenchConfig).
constexpr int kDefaultSteps = 10;
constexpr int kDefaultWarmup = 2;
constexpr double kPhaseBudgetMs = 15000.0;

// (op, impl) pairs in the order first seen.
std::vector<ops::KernelRecord> distinct_records(const std::vector<ops::KernelRecord>& records) {
  std::vector<ops::KernelRecord> out;
  for (const ops::KernelRecord& r : records) {
    const bool seen = std::any_of(out.begin(), out.end(), [&](const ops::KernelRecord& o) {
      return o.op == r.op && o.impl == r.impl;
    });
    if (!seen) out.push_back(r);
  }
  return out;
}

// A graph node with no inputs: what flows into it is dropped (see the file comment).
Tensor gradient_sink(const Tensor& x) {
  Tensor in = x.detach();
  autograd::record(in, "bench_input", {}, [](const Tensor&) { return std::vector<Tensor>{}; });
  return in;
}

json kernels_json(const std::vector<ops::KernelRecord>& records) {
  json out = json::array();
  for (const ops::KernelRecord& r : records)
    out.push_back({{"op", r.op}, {"impl", r.impl}, {"reference", ops::is_reference_impl(r.impl)}});
  return out;
}

double gflops(double flops, double ms) { return ms > 0 ? flops / (ms / 1e3) / 1e9 : 0.0; }

// Times forward and (when a gradient flows) backward of f on its input, `steps` times after
// `warmup`; the first untimed run records the kernels. make_input builds a fresh input each
// run; f maps it to the output.
template <typename MakeInput, typename F>
void time_layer(int warmup, int steps, std::uint64_t seed, LayerTiming& t, MakeInput&& make_input,
                F&& f, std::uint64_t dy_key) {
  Tensor dy;
  std::vector<double> fwd, bwd;
  const int untimed = std::max(1, warmup);
  for (int i = 0; i < untimed + steps; ++i) {
    const bool traced = i == 0, timed = i >= untimed;
    Tensor in = make_input();
    std::optional<ops::KernelTrace> trace;
    if (traced) trace.emplace();
    const auto t0 = Clock::now();
    Tensor y = f(in);
    const auto t1 = Clock::now();
    if (traced) t.forward_kernels = distinct_records(trace->records());
    if (timed) fwd.push_back(ms_between(t0, t1));
    if (!y.requires_grad()) continue;
    t.has_backward = true;
    if (!dy.defined()) dy = uniform_tensor(y.shape(), seed, dy_key, -1.0f, 1.0f);
    if (traced) trace->clear();
    const auto t2 = Clock::now();
    y.backward(dy);
    const auto t3 = Clock::now();
    if (traced) t.backward_kernels = distinct_records(trace->records());
    if (timed) bwd.push_back(ms_between(t2, t3));
  }
  t.forward_ms = median(fwd);
  t.backward_ms = median(bwd);
}

}  // namespace

std::vector<std::string> distinct_impls(const std::vector<ops::KernelRecord>& records) {
  std::vector<std::string> out;
  for (const ops::KernelRecord& r : records) {
    std::size_t start = 0;
    while (start <= r.impl.size()) {
      const std::size_t end = std::min(r.impl.find(" + ", start), r.impl.size());
      std::string one = r.impl.substr(start, end - start);
      if (!one.empty() && std::find(out.begin(), out.end(), one) == out.end())
        out.push_back(std::move(one));
      start = end + 3;
    }
  }
  return out;
}

double LayerBenchResult::layers_forward_ms() const {
  double s = 0;
  for (const LayerTiming& l : layers) s += l.forward_ms;
  return s;
}

double LayerBenchResult::layers_backward_ms() const {
  double s = 0;
  for (const LayerTiming& l : layers) s += l.backward_ms;
  return s;
}

json LayerBenchResult::to_json() const {
  const double total_ms = layers_forward_ms() + layers_backward_ms();
  double total_flops = 0;
  json rows = json::array();
  for (const LayerTiming& l : layers) {
    const double ms = l.forward_ms + l.backward_ms;
    total_flops += l.forward_flops + l.backward_flops;
    rows.push_back({{"name", l.name},
                    {"layer", l.describe},
                    {"output", l.output},
                    {"forward_ms", l.forward_ms},
                    {"backward_ms", l.backward_ms},
                    {"has_backward", l.has_backward},
                    {"input_grad", l.input_grad},
                    {"forward_flops", l.forward_flops},
                    {"backward_flops", l.backward_flops},
                    {"forward_gflops", gflops(l.forward_flops, l.forward_ms)},
                    {"backward_gflops", gflops(l.backward_flops, l.backward_ms)},
                    {"share", total_ms > 0 ? ms / total_ms : 0.0},
                    {"forward_kernels", kernels_json(l.forward_kernels)},
                    {"backward_kernels", kernels_json(l.backward_kernels)},
                    {"impls", distinct_impls(l.forward_kernels)},
                    {"backward_impls", distinct_impls(l.backward_kernels)}});
  }
  return {{"framework", "epoch"},
          {"benchmark", "layers"},
          {"model", config.model},
          {"batch_size", config.batch_size},
          {"threads", threads_used},
          {"determinism", train::determinism_name(config.execution.determinism)},
          {"kernels", ops::cpu_kernels_name(train::cpu_kernels_for(config.execution.determinism))},
          {"conv_algorithm", ops::conv_algorithm_name(config.execution.conv_algorithm)},
          {"isa", isa},
          {"warmup", warmup_used},
          {"steps", steps_used},
          {"first_step_ms", first_step_ms},
          {"flops_counted",
           "forward = multiply-adds x 2 of conv and dense layers; backward = "
           "forward x 2, x 1 where the input needs no gradient"},
          {"layers", rows},
          {"layers_forward_ms", layers_forward_ms()},
          {"layers_backward_ms", layers_backward_ms()},
          {"layers_ms", total_ms},
          {"layers_flops", total_flops},
          {"layers_gflops", gflops(total_flops, total_ms)},
          {"loss_kind", loss.describe},
          {"loss_forward_ms", loss.forward_ms},
          {"loss_backward_ms", loss.backward_ms},
          {"loss_kernels", kernels_json(loss.forward_kernels)},
          {"loss_backward_kernels", kernels_json(loss.backward_kernels)},
          {"step_ms", step_ms},
          {"step_forward_ms", step_forward_ms},
          {"step_backward_ms", step_backward_ms},
          {"step_update_ms", step_update_ms},
          {"step_gflops", gflops(total_flops, step_ms)},
          {"layers_over_step", step_ms > 0 ? total_ms / step_ms : 0.0}};
}

LayerBenchResult run_layer_bench(const LayerBenchConfig& c) {
  if (c.batch_size < 1) EPOCH_THROW(ConfigError, "--batch-size must be at least 1");
  if (c.steps != 0 && c.steps < 3)
    EPOCH_THROW(ConfigError, "--steps must be at least 3 with --layers");
  if (c.warmup < -1) EPOCH_THROW(ConfigError, "--warmup must be >= 0");
  if (parse_device(c.execution.device).is_cuda())
    EPOCH_THROW(ConfigError, "--layers times CPU layers only: drop --device");
  const ops::ContextGuard context(train::kernel_context(c.execution));
  std::shared_ptr<models::Model> model = models::build_model(c.model);
  const auto* stack = dynamic_cast<const models::LayerStack*>(model.get());
  if (stack == nullptr)
    EPOCH_THROW(ConfigError, "--layers: model ", c.model, " is not a stack of named layers");
  nn::initialize(*model, c.seed);
  optim::OptimizerConfig oc = optim::optimizer_defaults(c.optimizer);
  oc.lr = 1e-4f;
  train::Step step(*model, oc, nullptr, c.seed);  // also lays the gradients into one buffer
  model->train(true);

  Shape in_shape{c.batch_size};
  for (std::int64_t d : model->spec().input) in_shape.push_back(d);
  const Tensor x = uniform_tensor(in_shape, c.seed, 0xbe);
  std::vector<std::int32_t> label_values(static_cast<std::size_t>(c.batch_size));
  const std::int64_t classes =
      model->spec().task == models::Task::classification ? model->spec().outputs : 2;
  for (std::size_t i = 0; i < label_values.size(); ++i)
    label_values[i] = static_cast<std::int32_t>(i % static_cast<std::size_t>(classes));
  const Tensor labels = Tensor::from_ints({c.batch_size}, label_values);

  LayerBenchResult r;
  r.config = c;
  r.threads_used = ops::num_threads();
  r.isa = ops::onednn_cpu_isa();
  const double batch = static_cast<double>(c.batch_size);

  // The full step first: its first run (untimed) decides the automatic step counts.
  const auto run_step = [&](int i, train::StepTimes* times) {
    const auto t0 = Clock::now();
    const Tensor l = step.run(x, labels, i, static_cast<std::uint64_t>(i), times);
    (void)l.item();
    return ms_between(t0, Clock::now());
  };
  r.first_step_ms = run_step(0, nullptr);
  r.steps_used = c.steps;
  r.warmup_used = c.warmup;
  if (c.steps == 0) {
    r.steps_used = kDefaultSteps;
    if (r.first_step_ms > 0)
      r.steps_used =
          std::clamp(static_cast<int>(kPhaseBudgetMs / r.first_step_ms), 3, kDefaultSteps);
  }
  if (c.warmup < 0) r.warmup_used = r.steps_used < kDefaultSteps ? 1 : kDefaultWarmup;
  const int warmup = r.warmup_used, steps = r.steps_used;
  const int untimed = std::max(1, warmup);  // the first run (above) is never timed
  std::vector<double> step_ms, fwd_ms, bwd_ms, upd_ms;
  for (int i = 1; i < untimed + steps; ++i) {
    train::StepTimes times;
    const double ms = run_step(i, &times);
    if (i < untimed) continue;
    step_ms.push_back(ms);
    fwd_ms.push_back(times.forward_s * 1e3);
    bwd_ms.push_back(times.backward_s * 1e3);
    upd_ms.push_back(times.update_s * 1e3);
  }
  r.step_ms = median(step_ms);
  r.step_forward_ms = median(fwd_ms);
  r.step_backward_ms = median(bwd_ms);
  r.step_update_ms = median(upd_ms);

  Tensor cur = x;             // the current layer's input, made without a graph
  bool grad_flows = false;    // a layer with parameters came before: the step needs dx
  std::uint64_t key = 0x1a0;  // dy streams, one per layer
  for (const auto& [name, layer] : stack->children()) {
    LayerTiming t;
    t.name = name;
    t.describe = layer->describe();
    const Shape sample(cur.shape().begin() + 1, cur.shape().end());
    t.output = layer->output_shape(sample);
    t.input_grad = grad_flows;
    t.forward_flops = static_cast<double>(layer->flops(sample)) * batch;
    nn::Module& m = *layer;
    time_layer(
        warmup, steps, c.seed, t, [&] { return t.input_grad ? gradient_sink(cur) : cur; },
        [&](const Tensor& in) { return m(in); }, ++key);
    t.backward_flops = t.has_backward ? t.forward_flops * (t.input_grad ? 2.0 : 1.0) : 0.0;
    grad_flows = grad_flows || layer->parameter_count() > 0;
    {
      autograd::NoGradGuard no_grad;
      cur = m(cur);
    }
    r.layers.push_back(std::move(t));
  }

  r.loss.name = "loss";
  r.loss.describe = models::task_name(model->spec().task);
  r.loss.input_grad = true;
  time_layer(
      warmup, steps, c.seed, r.loss, [&] { return gradient_sink(cur); },
      [&](const Tensor& out) { return model->loss(out, x, labels); }, ++key);

  return r;
}

void add_layer_percent_of_peak(nlohmann::json& row, double peak_gflops) {
  add_percent_of_peak(row, peak_gflops, {"layers_gflops", "step_gflops"});
  for (nlohmann::json& l : row["layers"]) {
    const double ms = l["forward_ms"].get<double>() + l["backward_ms"].get<double>();
    const double flops = l["forward_flops"].get<double>() + l["backward_flops"].get<double>();
    l["percent_of_peak"] =
        peak_gflops > 0 && ms > 0 ? 100.0 * flops / (ms / 1e3) / 1e9 / peak_gflops : 0.0;
  }
}

}  // namespace epoch::bench
