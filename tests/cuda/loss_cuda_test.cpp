// CUDA losses against the CPU reference: the loss stays a device scalar, probabilities and
// gradients match, bad labels are rejected, and autograd runs through CUDA tensors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "cuda/cuda_testing.h"
#include "epoch/autograd/functions.h"
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

TEST_F(LossCuda, SoftmaxCrossEntropyMatchesCpu) {
  for (std::int64_t K : {2, 10, 100}) {
    SCOPED_TRACE(K);
    const std::int64_t N = 37;
    const Tensor logits = random_tensor({N, K}, 700 + static_cast<std::uint64_t>(K), -5.0f, 5.0f);
    const Tensor labels = labels_for(N, K);
    const ops::SoftmaxCrossEntropyResult e = ops::softmax_cross_entropy_forward(logits, labels);
    const ops::SoftmaxCrossEntropyResult a =
        ops::softmax_cross_entropy_forward(on_cuda(logits), on_cuda(labels));
    EXPECT_TRUE(a.loss.device().is_cuda());
    EXPECT_EQ(a.loss.shape(), Shape{});
    EXPECT_TRUE(allclose(a.loss, e.loss, 1e-6f, 1e-5f));
    EXPECT_TRUE(allclose(a.probs, e.probs, 1e-7f, 1e-5f));
    EXPECT_TRUE(allclose(ops::softmax_cross_entropy_backward(0.7f, a.probs, on_cuda(labels)),
                         ops::softmax_cross_entropy_backward(0.7f, e.probs, labels), 1e-7f,
                         1e-5f));
  }
}

TEST_F(LossCuda, SoftmaxCrossEntropyHandValue) {
  // Two equal logits: loss log 2 whichever the label.
  const Tensor logits = on_cuda(Tensor::from_vector({1, 2}, {3.0f, 3.0f}));
  const std::vector<std::int32_t> l = {1};
  const Tensor loss = ops::softmax_cross_entropy_forward(logits, on_cuda(Tensor::from_ints({1}, l)))
                          .loss;
  EXPECT_NEAR(loss.item(), std::log(2.0f), 1e-6f);
}

TEST_F(LossCuda, BadLabelOnTheDeviceThrows) {
  const Tensor logits = on_cuda(random_tensor({2, 3}, 710));
  const std::vector<std::int32_t> bad = {0, 3};
  EXPECT_THROW(ops::softmax_cross_entropy_forward(logits, on_cuda(Tensor::from_ints({2}, bad))),
               InvalidArgument);
}

TEST_F(LossCuda, PairLossesMatchCpu) {
  // Sizes below one block, across several blocks and past the 1024-block cap of the reduction.
  for (std::int64_t n : {1, 1000, 300001}) {
    SCOPED_TRACE(n);
    const Tensor x = random_tensor({n}, 720, -3.0f, 3.0f);
    const Tensor t = random_tensor({n}, 721, 0.0f, 1.0f);
    const Tensor xc = on_cuda(x), tc = on_cuda(t);
    EXPECT_TRUE(allclose(ops::bce_with_logits_forward(xc, tc), ops::bce_with_logits_forward(x, t),
                         1e-6f, 1e-5f));
    EXPECT_TRUE(allclose(ops::mse_forward(xc, tc), ops::mse_forward(x, t), 1e-6f, 1e-5f));
    EXPECT_TRUE(allclose(ops::l1_forward(xc, tc), ops::l1_forward(x, t), 1e-6f, 1e-5f));
    // Gradients scale with 1.3 / n; sigmoid(x) - t may cancel, so allow an absolute error of
    // a few float ulps of that scale.
    const float atol = 1e-6f * 1.3f / static_cast<float>(n);
    EXPECT_TRUE(allclose(ops::bce_with_logits_backward(1.3f, xc, tc),
                         ops::bce_with_logits_backward(1.3f, x, t), atol, 1e-5f));
    EXPECT_TRUE(allclose(ops::mse_backward(1.3f, xc, tc), ops::mse_backward(1.3f, x, t), atol,
                         1e-5f));
    EXPECT_TRUE(allclose(ops::l1_backward(1.3f, xc, tc), ops::l1_backward(1.3f, x, t), atol,
                         1e-5f));
  }
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

}  // namespace
}  // namespace epoch
