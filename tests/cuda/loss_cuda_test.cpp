// CUDA losses: a hand value, bad labels rejected, run-to-run identical reductions, autograd
// through CUDA tensors. (CUDA against the CPU reference is in the parity table.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "cuda/cuda_testing.h"
#include "epoch/autograd/functions.h"
#include "epoch/models/zoo.h"
#include "epoch/ops/convert.h"
#include "epoch/ops/loss.h"
#include "testing/testing.h"

namespace epoch {
namespace {

using testing::allclose;
using testing::on_cuda;
using testing::random_tensor;
using LossCuda = testing::CudaParityTest;

Tensor labels_for(std::int64_t N, std::int64_t K) {
  std::vector<std::int32_t> v(static_cast<std::size_t>(N));
  for (std::int64_t i = 0; i < N; ++i)
    v[static_cast<std::size_t>(i)] = static_cast<std::int32_t>((i * 7 + 3) % K);
  return Tensor::from_ints({N}, v);
}

TEST_F(LossCuda, SoftmaxCrossEntropyHandValue) {
  // Two equal logits: loss log 2 whichever the label.
  const Tensor logits = on_cuda(Tensor::from_vector({1, 2}, {3.0f, 3.0f}));
  const std::vector<std::int32_t> l = {1};
  const Tensor loss =
      ops::softmax_cross_entropy_forward(logits, on_cuda(Tensor::from_ints({1}, l))).loss;
  EXPECT_NEAR(loss.item(), std::log(2.0f), 1e-6f);
}

TEST_F(LossCuda, BadLabelOnTheDeviceThrows) {
  const Tensor logits = on_cuda(random_tensor({2, 3}, 710));
  const std::vector<std::int32_t> bad = {0, 3};
  EXPECT_THROW(ops::softmax_cross_entropy_forward(logits, on_cuda(Tensor::from_ints({2}, bad))),
               InvalidArgument);
}

TEST_F(LossCuda, ReductionsAreIdenticalRunToRun) {
  const Tensor x = on_cuda(random_tensor({500000}, 730)), t = on_cuda(random_tensor({500000}, 731));
  const float first = ops::mse_forward(x, t).item();
  for (int run = 0; run < 3; ++run) EXPECT_EQ(ops::mse_forward(x, t).item(), first);
}

TEST_F(LossCuda, AutogradThroughCudaTensorsMatchesCpu) {
  const Tensor logits0 = random_tensor({8, 5}, 740), labels = labels_for(8, 5);
  auto run = [&](Device d) {
    Tensor logits = logits0.to(d).clone().set_requires_grad(true);
    softmax_cross_entropy(logits, labels.to(d)).backward();
    return logits.grad();
  };
  EXPECT_TRUE(allclose(run(Device::cuda()), run(Device::cpu()), 1e-7f, 1e-5f));
}

// Binary targets are made on the device (no host round trip), and a loss backward on the
// device scales by dy there: the binary loss and its gradient equal the CPU's.
TEST_F(LossCuda, BinaryTaskLossStaysOnTheDeviceAndMatchesCpu) {
  const Tensor labels = Tensor::from_ints({5}, std::vector<std::int32_t>{0, 1, 1, 0, 1});
  EXPECT_EQ(ops::i32_to_f32(on_cuda(labels)).to(Device::cpu()).to_vector(),
            (std::vector<float>{0, 1, 1, 0, 1}));
  Tensor logits = random_tensor({5, 1}, 3);
  Tensor logits_cuda = on_cuda(logits);
  logits.set_requires_grad(true);
  logits_cuda.set_requires_grad(true);
  const Tensor x;  // unused by the binary task
  Tensor loss = models::task_loss(models::Task::binary, logits, x, labels);
  Tensor loss_cuda = models::task_loss(models::Task::binary, logits_cuda, x, on_cuda(labels));
  EXPECT_TRUE(allclose(loss_cuda, loss, 1e-6f, 1e-5f));
  loss.backward();
  loss_cuda.backward();
  EXPECT_TRUE(allclose(logits_cuda.grad(), logits.grad(), 1e-6f, 1e-5f));
}

}  // namespace
}  // namespace epoch
