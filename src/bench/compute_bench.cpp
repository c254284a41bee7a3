// Compute-only training and inference timing (see compute_bench.h).
#include "epoch/bench/compute_bench.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <vector>

#include "epoch/autograd/autograd.h"
#include "epoch/dist/process_group.h"
#include "epoch/models/zoo.h"
#include "epoch/nn/flat_parameters.h"
#include "epoch/nn/layers.h"
#include "epoch/ops/backend.h"
#include "epoch/ops/elementwise.h"
#include "epoch/optim/optimizer.h"
#include "epoch/tensor/random.h"
#include "epoch/train/data_parallel.h"
#include "epoch/train/step.h"

namespace epoch::bench {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

template <typename F>
std::vector<double> time_ms(int warmup, int steps, F&& f) {
  for (int i = 0; i < warmup; ++i) f();
  std::vector<double> ms;
  for (int i = 0; i < steps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return ms;
}

}  // namespace

nlohmann::json ComputeBenchResult::to_json() const {
  return {{"framework", "epoch"},
          {"model", config.model},
          {"batch_size", config.batch_size},
          {"device", config.execution.device},
          {"threads", threads_used},
          {"determinism", train::determinism_name(config.execution.determinism)},
          {"kernels", ops::cpu_kernels_name(train::cpu_kernels_for(config.execution.determinism))},
          {"conv_algorithm", ops::conv_algorithm_name(config.execution.conv_algorithm)},
          {"optimizer", config.optimizer},
          {"warmup", config.warmup},
          {"steps", config.steps},
          {"forward_flops_per_sample", forward_flops_per_sample},
          {"frames_per_sample", frames_per_sample},
          {"train_frames_per_s", train_images_per_s * static_cast<double>(frames_per_sample)},
          {"infer_frames_per_s", infer_images_per_s * static_cast<double>(frames_per_sample)},
          {"train_step_ms_median", train_step_ms_median},
          {"train_step_ms_min", train_step_ms_min},
          {"train_images_per_s", train_images_per_s},
          {"train_gflops", train_gflops},
          {"infer_ms_median", infer_ms_median},
          {"infer_images_per_s", infer_images_per_s},
          {"infer_gflops", infer_gflops},
          {"world_size", world_size},
          {"global_train_images_per_s", global_train_images_per_s},
          {"comm_ms_median", comm_ms_median},
          {"comm_exposed_ms_median", comm_exposed_ms_median},
          {"comm_hidden_fraction", comm_hidden_fraction},
          {"comm_bytes_per_step", comm_bytes_per_step},
          {"bucket_counts", bucket_counts},
          {"peak_rss_mib", peak_rss_mib}};
}

ComputeBenchResult run_compute_bench(const ComputeBenchConfig& c) {
  if (c.batch_size < 1) EPOCH_THROW(ConfigError, "--batch-size must be at least 1");
  if (c.steps < 10) EPOCH_THROW(ConfigError, "--steps must be at least 10 (a median needs them)");
  if (c.warmup < 0) EPOCH_THROW(ConfigError, "--warmup must be >= 0");
  const ops::ContextGuard context(train::kernel_context(c.execution));
  std::shared_ptr<models::Model> model = models::build_model(c.model);
  nn::initialize(*model, c.seed);
  const Device device = parse_device(c.execution.device);
  model->to(device);
  optim::OptimizerConfig oc = optim::optimizer_defaults(c.optimizer);
  oc.lr = 1e-4f;
  train::Step train_step(*model, oc, nullptr, c.seed);
  // Under mpirun every rank runs this step on its own batch and the gradients are averaged as
  // in training (train::DataParallel), so the step's time includes the exposed communication.
  dist::ProcessGroup& group = dist::ProcessGroup::world();
  train::DataParallel dp(group, train_step, *model, train::kDefaultBucketBytes,
                         {{"the command", "epoch bench"},
                          {"the epoch version", EPOCH_VERSION},
                          {"--model", c.model},
                          {"--batch-size", std::to_string(c.batch_size)},
                          {"--steps", std::to_string(c.steps)},
                          {"--warmup", std::to_string(c.warmup)},
                          {"--seed", std::to_string(c.seed)},
                          {"the device kind", device.is_cuda() ? "cuda" : "cpu"}},
                         "a benchmark");
  dp.broadcast_state();
  dp.set_share(c.batch_size, c.batch_size * group.size());

  Shape in_shape{c.batch_size};
  for (std::int64_t d : model->spec().input) in_shape.push_back(d);
  Tensor x = Tensor::empty(in_shape);
  RandomStream rng(c.seed, 0xbe);
  for (std::int64_t i = 0; i < x.numel(); ++i) x.f32()[i] = rng.uniform();
  std::vector<std::int32_t> labels(static_cast<std::size_t>(c.batch_size));
  const std::int64_t classes =
      model->spec().task == models::Task::classification ? model->spec().outputs : 2;
  for (auto& l : labels)
    l = static_cast<std::int32_t>(rng.below(static_cast<std::uint64_t>(classes)));
  x = x.to(device);
  const Tensor y = Tensor::from_ints({c.batch_size}, labels).to(device);

  ComputeBenchResult r;
  r.config = c;
  r.threads_used = ops::num_threads();
  r.forward_flops_per_sample = model->flops(model->spec().input);
  if (model->spec().task == models::Task::frame_prediction)
    r.frames_per_sample = model->spec().input[0];

  std::int64_t step = 0;
  model->train(true);
  std::vector<double> comm_ms, exposed_ms;
  const std::vector<double> train_ms = time_ms(c.warmup, c.steps, [&] {
    const Tensor loss = train_step.run(x, y, step, static_cast<std::uint64_t>(step));
    ++step;
    (void)loss.item();
    comm_ms.push_back(dp.last_step().busy_s * 1e3);
    exposed_ms.push_back(dp.last_step().exposed_s * 1e3);
  });
  if (dp.distributed()) {  // the timed steps' communication (the warm-up's dropped)
    comm_ms.erase(comm_ms.begin(), comm_ms.end() - c.steps);
    exposed_ms.erase(exposed_ms.begin(), exposed_ms.end() - c.steps);
    r.world_size = group.size();
    r.comm_ms_median = median(comm_ms);
    r.comm_exposed_ms_median = median(exposed_ms);
    double busy = 0, exposed = 0;
    for (std::size_t i = 0; i < comm_ms.size(); ++i) busy += comm_ms[i], exposed += exposed_ms[i];
    r.comm_hidden_fraction = busy > 0 ? 1.0 - std::min(1.0, exposed / busy) : 1.0;
    r.comm_bytes_per_step = dp.last_step().bytes;
    for (const train::GradBucket& b : train_step.buckets()) r.bucket_counts.push_back(b.count);
  }
  struct rusage usage {};
  if (::getrusage(RUSAGE_SELF, &usage) == 0)
    r.peak_rss_mib = static_cast<double>(usage.ru_maxrss) / 1024.0;  // Linux: KiB
  model->train(false);
  const std::vector<double> infer_ms = time_ms(c.warmup, c.steps, [&] {
    autograd::NoGradGuard no_grad;
    // The sum forces the forward to complete, as the PyTorch reference's out.sum().item().
    (void)ops::sum(model->forward(x)).item();
  });

  const double batch = static_cast<double>(c.batch_size);
  const double fwd = static_cast<double>(r.forward_flops_per_sample) * batch;
  r.train_step_ms_median = median(train_ms);
  r.train_step_ms_min = *std::min_element(train_ms.begin(), train_ms.end());
  r.train_images_per_s = batch / (r.train_step_ms_median / 1e3);
  r.train_gflops = 3.0 * fwd / (r.train_step_ms_median / 1e3) / 1e9;
  r.global_train_images_per_s = r.train_images_per_s * r.world_size;
  r.infer_ms_median = median(infer_ms);
  r.infer_images_per_s = batch / (r.infer_ms_median / 1e3);
  r.infer_gflops = fwd / (r.infer_ms_median / 1e3) / 1e9;
  return r;
}

}  // namespace epoch::bench
