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

EvalResult evaluate(nn::Module& net, models::Task task, const data::ImageDataset& dataset,
                    const data::Preprocessing& pre, std::int64_t batch_size) {
  autograd::NoGradGuard no_grad;
  const bool was_training = net.is_training();
  net.train(false);
  const std::int64_t n = dataset.images.size(0);
  data::BatchAssembler assembler(dataset, pre);
  std::vector<std::int64_t> indices(static_cast<std::size_t>(n));
  std::iota(indices.begin(), indices.end(), 0);
  const Device device = net.parameters().front().second.device();
  double loss_sum = 0.0;
  std::int64_t correct = 0;
  for (std::int64_t begin = 0; begin < n; begin += batch_size) {
    const std::int64_t count = std::min(batch_size, n - begin);
    const data::Batch& batch = assembler.assemble(
        std::span<const std::int64_t>(indices.data() + begin, static_cast<std::size_t>(count)));
    const Tensor x = batch.images.to(device), labels = batch.labels.to(device);
    const Tensor out = net.forward(x);
    loss_sum += static_cast<double>(models::model_loss(task, out, x, labels).item()) *
                static_cast<double>(count);
    if (task == models::Task::reconstruction) continue;
    const std::vector<float> o = out.to_vector();
    const std::vector<float> truth = batch.labels.to_vector();
    const std::int64_t k = task == models::Task::binary ? 1 : out.size(1);
    for (std::int64_t i = 0; i < count; ++i) {
      std::int64_t predicted = 0;
      if (task == models::Task::binary) {
        predicted = o[static_cast<std::size_t>(i)] > 0.0f ? 1 : 0;
      } else {
        const float* row = o.data() + i * k;
        predicted = std::max_element(row, row + k) - row;
      }
      correct += predicted == static_cast<std::int64_t>(truth[static_cast<std::size_t>(i)]);
    }
  }
  net.train(was_training);
  EvalResult r;
  r.count = n;
  r.loss = n > 0 ? loss_sum / static_cast<double>(n) : 0.0;
  if (task != models::Task::reconstruction && n > 0)
    r.accuracy = static_cast<double>(correct) / static_cast<double>(n);
  return r;
}

}  // namespace epoch::train
