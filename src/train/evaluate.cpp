// Evaluation loop and output probabilities (see evaluate.h).
#include "epoch/train/evaluate.h"

#include <cmath>
#include <numeric>

#include "epoch/autograd/autograd.h"
#include "epoch/ops/activation.h"

namespace epoch::train {

Tensor output_probabilities(models::Task task, const Tensor& output) {
  const Tensor out = output.to(Device::cpu()).contiguous();
  if (task == models::Task::classification) return ops::softmax_forward(out);
  EPOCH_CHECK(task == models::Task::binary, "output_probabilities: the model does not classify");
  const std::int64_t n = out.size(0);
  Tensor probs = Tensor::empty({n, 2});
  for (std::int64_t i = 0; i < n; ++i) {
    const float p = 1.0f / (1.0f + std::exp(-out.f32()[i]));
    probs.f32()[2 * i] = 1.0f - p;
    probs.f32()[2 * i + 1] = p;
  }
  return probs;
}

bool in_top_k(const float* row, std::int64_t classes, std::int64_t label, std::int64_t k) {
  const float score = row[label];
  if (std::isnan(score)) return false;
  std::int64_t above = 0;
  for (std::int64_t j = 0; j < classes; ++j) above += row[j] > score;
  return above < k;
}

EvalResult evaluate(models::Model& model, const data::ImageDataset& dataset,
                    const data::Preprocessing& pre, std::int64_t batch_size) {
  data::MemorySource source(dataset);
  data::LoaderConfig config;
  config.batch_size = batch_size;
  data::Loader loader(source, pre, std::nullopt, config, nullptr);
  return evaluate(model, loader, source.size());
}

EvalResult evaluate(models::Model& model, data::Loader& loader, std::int64_t num_samples) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(num_samples));
  std::iota(order.begin(), order.end(), 0);
  return evaluate(model, loader, std::move(order));
}

EvalResult evaluate(models::Model& model, data::Loader& loader, std::vector<std::int64_t> order) {
  autograd::NoGradGuard no_grad;
  nn::Module& net = model;
  const models::Task task = model.spec().task;
  const bool was_training = net.is_training();
  net.train(false);
  loader.start_epoch(0, std::move(order));
  const Device device = net.parameters().front().second.device();
  double loss_sum = 0.0, loss_sum_f64 = 0.0;
  std::int64_t correct = 0, correct_top5 = 0, n = 0;
  while (const data::Batch* batch = loader.next()) {
    const std::int64_t count = batch->images.size(0);
    const Tensor x = batch->images.to(device), labels = batch->labels.to(device);
    const Tensor out = net.forward(x);
    loss_sum += static_cast<double>(model.loss(out, x, labels).item()) * static_cast<double>(count);
    loss_sum_f64 += models::task_loss_sum_f64(task, out, x, labels);
    n += count;
    if (task == models::Task::reconstruction) continue;
    const std::vector<float> o = out.to_vector();
    const std::vector<float> truth = batch->labels.to_vector();
    const std::int64_t k = task == models::Task::binary ? 1 : out.size(1);
    for (std::int64_t i = 0; i < count; ++i) {
      std::int64_t predicted = 0;
      const auto label = static_cast<std::int64_t>(truth[static_cast<std::size_t>(i)]);
      if (task == models::Task::binary) {
        predicted = o[static_cast<std::size_t>(i)] > 0.0f ? 1 : 0;  // p > 0.5
      } else {
        const float* row = o.data() + i * k;
        predicted = std::max_element(row, row + k) - row;
        if (k > 5) correct_top5 += in_top_k(row, k, label, 5);
      }
      correct += predicted == label;
    }
  }
  net.train(was_training);
  EvalResult r;
  r.count = n;
  r.correct = correct;
  r.correct_top5 = correct_top5;
  r.loss = n > 0 ? loss_sum / static_cast<double>(n) : 0.0;
  r.loss_f64 = n > 0 ? loss_sum_f64 / static_cast<double>(n) : 0.0;
  if (task != models::Task::reconstruction && n > 0)
    r.accuracy = static_cast<double>(correct) / static_cast<double>(n);
  if (task == models::Task::classification && model.spec().outputs > 5 && n > 0)
    r.top5_accuracy = static_cast<double>(correct_top5) / static_cast<double>(n);
  return r;
}

}  // namespace epoch::train
