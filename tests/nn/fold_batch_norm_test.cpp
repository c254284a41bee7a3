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
#include "epoch/nn/residual.h"
#include "epoch/ops/backend.h"
#include "epoch/ops/elementwise.h"
#include "testing/testing.h"

namespace epoch::nn {
namespace {

/// Random running statistics and batch-norm affine parameters far from (0, 1).
void perturb_batch_norms(Module& net) {
  std::uint64_t seed = 20;
  for (auto& [name, buffer] : net.buffers()) {
    const Tensor r = testing::random_tensor(buffer.shape(), ++seed);  // in [-1, 1)
    const bool var = name.find("running_var") != std::string::npos;
    buffer.copy_from(var ? ops::affine_scalar(r, 0.4f, 1.0f) : ops::affine_scalar(r, 0.5f));
  }
  for (auto& [name, param] : net.parameters())
    if (name.find("bn") != std::string::npos || name.find("downsample.1") != std::string::npos) {
      const Tensor r = testing::random_tensor(param.shape(), ++seed);
      param.copy_from(name.find("weight") != std::string::npos ? ops::affine_scalar(r, 0.3f, 1.0f)
                                                               : ops::affine_scalar(r, 0.2f));
    }
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-4f * std::max(1.0f, std::fabs(want[i]))) << i;
}

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
  perturb_batch_norms(*net);
  return net;
}

int batch_norm_calls(const ops::KernelTrace& trace) {
  return static_cast<int>(std::count_if(
      trace.records().begin(), trace.records().end(),
      [](const ops::KernelRecord& r) { return r.op.find("batch_norm") != std::string::npos; }));
}

/// oneDNN reorders (of weights or activations) inside the ops, and conversions of their own.
int reorders(const ops::KernelTrace& trace) {
  int n = 0;
  for (const ops::KernelRecord& r : trace.records())
    for (std::size_t at = r.impl.find("reorder"); at != std::string::npos;
         at = r.impl.find("reorder", at + 1))
      ++n;
  return n;
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
  expect_close(folded, unfolded);
}

TEST(FoldBatchNorm, ResidualBlocksInferBlockedAsTheyTrain) {
  // Two ResNet basic blocks (the first with a strided downsample), as torchvision names them:
  // inference folds every batch norm and keeps the activations blocked through both paths,
  // the sum and the ReLU; the result is the row-major, unfolded one's.
  ops::Conv2dParams same;
  same.pad_h = same.pad_w = 1;
  ops::Conv2dParams strided = same;
  strided.stride_h = strided.stride_w = 2;
  ops::Conv2dParams down;
  down.stride_h = down.stride_w = 2;
  auto net = std::make_shared<Sequential>();
  auto first = std::make_shared<Residual>();
  first->add("conv1", std::make_shared<Conv2d>(16, 32, 3, 3, strided, false))
      .add("bn1", std::make_shared<BatchNorm>(32))
      .add("relu", std::make_shared<Act>(Activation::relu))
      .add("conv2", std::make_shared<Conv2d>(32, 32, 3, 3, same, false))
      .add("bn2", std::make_shared<BatchNorm>(32));
  auto shortcut = std::make_shared<Sequential>();
  shortcut->add(std::make_shared<Conv2d>(16, 32, 1, 1, down, false))
      .add(std::make_shared<BatchNorm>(32));
  first->add("downsample", shortcut);
  auto second = std::make_shared<Residual>();
  second->add("conv1", std::make_shared<Conv2d>(32, 32, 3, 3, same, false))
      .add("bn1", std::make_shared<BatchNorm>(32))
      .add("relu", std::make_shared<Act>(Activation::relu))
      .add("conv2", std::make_shared<Conv2d>(32, 32, 3, 3, same, false))
      .add("bn2", std::make_shared<BatchNorm>(32));
  net->add("stem", std::make_shared<Conv2d>(3, 16, 3, 3, same, true))
      .add("layer", std::make_shared<Sequential>())
      .add("pool", std::make_shared<GlobalAvgPool2d>());
  auto& layer = static_cast<Sequential&>(*net->children()[1].second);
  layer.add("0", first).add("1", second);
  initialize(*net, 5);
  perturb_batch_norms(*net);
  net->train(false);
  const Tensor x = testing::random_tensor({2, 3, 12, 12}, 4);
  ops::KernelTrace unfolded_trace;
  const std::vector<float> unfolded = net->forward(x).to_vector();
  autograd::NoGradGuard no_grad;
  ops::KernelTrace trace;
  const std::vector<float> folded = net->forward(x).to_vector();
  EXPECT_EQ(batch_norm_calls(trace), 0);
  // (the folded weights are reordered at each call, but no activation is)
  EXPECT_LE(reorders(trace), 7) << "one per convolution, and the output to row-major";
  // With gradients on, the batch norms run as they are (blocked too): as few reorders.
  EXPECT_LE(reorders(unfolded_trace), 7);
  expect_close(folded, unfolded);
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
