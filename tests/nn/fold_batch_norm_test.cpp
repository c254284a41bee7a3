// Inference folds an evaluation batch norm into the convolution or dense layer before it: the
// output equals the unfolded layers' (run with gradients on, which never folds) to float
// rounding, no batch-norm kernel runs, and training or a batch norm in training mode is left
// alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "epoch/autograd/autograd.h"
#include "epoch/nn/layers.h"
#include "epoch/ops/backend.h"
#include "epoch/ops/elementwise.h"
#include "testing/testing.h"

namespace epoch::nn {
namespace {

/// Conv (no bias) + BN + ReLU, conv (bias) + BN, flatten, dense + BN + ReLU, dense: each BN
/// with running statistics far from (0, 1), so a fold that forgot one would show.
std::shared_ptr<Sequential> chain_with_batch_norms() {
  auto net = std::make_shared<Sequential>();
  ops::Conv2dParams p;
  p.pad_h = p.pad_w = 1;
  net->add("conv1", std::make_shared<Conv2d>(3, 8, 3, 3, p, false))
      .add("bn1", std::make_shared<BatchNorm>(8))
      .add("relu1", std::make_shared<Act>(Activation::relu))
      .add("conv2", std::make_shared<Conv2d>(8, 4, 1, 1, ops::Conv2dParams{}, true))
      .add("bn2", std::make_shared<BatchNorm>(4))
      .add("flat", std::make_shared<Flatten>())
      .add("fc1", std::make_shared<Linear>(4 * 6 * 6, 16))
      .add("bn3", std::make_shared<BatchNorm>(16))
      .add("relu3", std::make_shared<Act>(Activation::relu))
      .add("fc2", std::make_shared<Linear>(16, 5));
  initialize(*net, 3);
  std::uint64_t seed = 20;
  for (auto& [name, buffer] : net->buffers()) {
    const Tensor r = testing::random_tensor(buffer.shape(), ++seed);  // in [-1, 1)
    const bool var = name.find("running_var") != std::string::npos;
    buffer.copy_from(var ? ops::affine_scalar(r, 0.4f, 1.0f) : ops::affine_scalar(r, 0.5f));
  }
  for (auto& [name, param] : net->parameters())
    if (name.find("bn") == 0) {
      const Tensor r = testing::random_tensor(param.shape(), ++seed);
      param.copy_from(name.find("weight") != std::string::npos ? ops::affine_scalar(r, 0.3f, 1.0f)
                                                               : ops::affine_scalar(r, 0.2f));
    }
  return net;
}

int batch_norm_calls(const ops::KernelTrace& trace) {
  return static_cast<int>(std::count_if(
      trace.records().begin(), trace.records().end(),
      [](const ops::KernelRecord& r) { return r.op.find("batch_norm") != std::string::npos; }));
}

TEST(FoldBatchNorm, InferenceEqualsTheUnfoldedLayers) {
  const auto net = chain_with_batch_norms();
  net->train(false);
  const Tensor x = testing::random_tensor({4, 3, 6, 6}, 9);
  ops::KernelTrace unfolded_trace;
  const std::vector<float> unfolded = net->forward(x).to_vector();  // gradients on: no fold
  EXPECT_EQ(batch_norm_calls(unfolded_trace), 3);
  std::vector<float> folded;
  {
    autograd::NoGradGuard no_grad;
    ops::KernelTrace trace;
    folded = net->forward(x).to_vector();
    EXPECT_EQ(batch_norm_calls(trace), 0);
  }
  ASSERT_EQ(folded.size(), unfolded.size());
  for (std::size_t i = 0; i < folded.size(); ++i)
    EXPECT_NEAR(folded[i], unfolded[i], 1e-4f * std::max(1.0f, std::fabs(unfolded[i]))) << i;
}

TEST(FoldBatchNorm, TrainingModeIsNotFolded) {
  const auto net = chain_with_batch_norms();
  net->train(true);  // batch statistics, not an affine map
  autograd::NoGradGuard no_grad;
  ops::KernelTrace trace;
  (void)net->forward(testing::random_tensor({4, 3, 6, 6}, 9));
  EXPECT_EQ(batch_norm_calls(trace), 3);
}

}  // namespace
}  // namespace epoch::nn
