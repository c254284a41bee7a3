// A ReLU fused into the convolution or dense layer before it (ops' relu flag, a oneDNN post-op
// on the fast path) gives the bits of the two ops run one after the other, forward and backward,
// on the fast path and on the reference kernels.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "epoch/autograd/functions.h"
#include "epoch/ops/backend.h"
#include "epoch/ops/conv2d.h"
#include "testing/testing.h"

namespace epoch {
namespace {

void expect_same_bits(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  const std::vector<float> va = a.to_vector(), vb = b.to_vector();
  for (std::size_t i = 0; i < va.size(); ++i) ASSERT_EQ(va[i], vb[i]) << what << " at " << i;
}

// Output and the gradients of x, w and b of f, from the loss sum(y * r).
std::vector<Tensor> run(const std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)>& f,
                        const Shape& xs, const Shape& ws, std::int64_t out) {
  Tensor x = testing::random_tensor(xs, 1), w = testing::random_tensor(ws, 2, -0.3f, 0.3f);
  Tensor b = testing::random_tensor({out}, 3);
  x.set_requires_grad(true), w.set_requires_grad(true), b.set_requires_grad(true);
  const Tensor y = f(x, w, b);
  sum(mul(y, testing::random_tensor(y.shape(), 4))).backward();
  return {y.detach(), x.grad(), w.grad(), b.grad()};
}

void expect_same(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  const char* names[] = {"y", "dx", "dw", "db"};
  for (std::size_t i = 0; i < a.size(); ++i) expect_same_bits(a[i], b[i], names[i]);
}

class FusedRelu : public ::testing::TestWithParam<ops::CpuKernels> {};

TEST_P(FusedRelu, LinearEqualsLinearThenRelu) {
  ops::CpuKernelsGuard kernels(GetParam());
  const auto fused = [](const Tensor& x, const Tensor& w, const Tensor& b) {
    return linear(x, w, b, true);
  };
  const auto apart = [](const Tensor& x, const Tensor& w, const Tensor& b) {
    return relu(linear(x, w, b));
  };
  expect_same(run(fused, {33, 70}, {45, 70}, 45), run(apart, {33, 70}, {45, 70}, 45));
}

TEST_P(FusedRelu, ConvolutionEqualsConvolutionThenRelu) {
  ops::CpuKernelsGuard kernels(GetParam());
  ops::Conv2dParams p;
  p.pad_h = p.pad_w = 1;
  ops::Conv2dParams pr = p;
  pr.relu = true;
  const auto fused = [&](const Tensor& x, const Tensor& w, const Tensor& b) {
    return conv2d(x, w, b, pr);
  };
  const auto apart = [&](const Tensor& x, const Tensor& w, const Tensor& b) {
    return relu(conv2d(x, w, b, p));
  };
  expect_same(run(fused, {3, 16, 9, 9}, {32, 16, 3, 3}, 32),
              run(apart, {3, 16, 9, 9}, {32, 16, 3, 3}, 32));
  // The same through a blocked output.
  pr.blocked_output = true;
  expect_same(run(fused, {3, 16, 9, 9}, {32, 16, 3, 3}, 32),
              run(apart, {3, 16, 9, 9}, {32, 16, 3, 3}, 32));
}

TEST_P(FusedRelu, InferenceEqualsTraining) {
  ops::CpuKernelsGuard kernels(GetParam());
  ops::Conv2dParams p;
  p.relu = true;
  const Tensor x = testing::random_tensor({2, 8, 7, 7}, 5),
               w = testing::random_tensor({16, 8, 3, 3}, 6);
  const Tensor b = testing::random_tensor({16}, 7);
  Tensor wg = w.clone();
  wg.set_requires_grad(true);
  const Tensor trained = conv2d(x, wg, b, p);  // forward_training (w needs a gradient)
  const Tensor inferred = conv2d(x, w, b, p);  // forward_inference
  expect_same_bits(trained.detach(), inferred, "inference");
}

INSTANTIATE_TEST_SUITE_P(Kernels, FusedRelu,
                         ::testing::Values(ops::CpuKernels::fast, ops::CpuKernels::reference),
                         [](const auto& info) {
                           return info.param == ops::CpuKernels::fast ? "fast" : "reference";
                         });

}  // namespace
}  // namespace epoch
