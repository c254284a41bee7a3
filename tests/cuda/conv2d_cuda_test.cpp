// cuDNN convolution: hand values, run-to-run determinism, autograd on CUDA, mixed devices
// rejected. (cuDNN against the CPU reference is in the parity table.)
#include <gtest/gtest.h>

#include <vector>

#include "cuda/cuda_testing.h"
#include "epoch/autograd/functions.h"
#include "epoch/ops/backend.h"
#include "epoch/ops/conv2d.h"
#include "testing/testing.h"

namespace epoch {
namespace {

using testing::allclose;
using testing::on_cuda;
using testing::random_tensor;
using Conv2dCuda = testing::CudaParityTest;

TEST_F(Conv2dCuda, HandValues) {
  // A 1x1x3x3 input of 1..9 and a 2x2 kernel of ones: each output is a 2x2 window sum.
  const Tensor x = Tensor::from_vector({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  const Tensor w = Tensor::full({1, 1, 2, 2}, 1.0f);
  const Tensor b = Tensor::from_vector({1}, {0.5f});
  const Tensor y = ops::conv2d_forward(on_cuda(x), on_cuda(w), on_cuda(b), {});
  EXPECT_TRUE(allclose(y, Tensor::from_vector({1, 1, 2, 2}, {12.5f, 16.5f, 24.5f, 28.5f})));
}

TEST_F(Conv2dCuda, BackwardIsIdenticalRunToRun) {
  ops::Conv2dParams p;
  p.pad_h = p.pad_w = 1;
  const Tensor x = on_cuda(random_tensor({8, 16, 12, 12}, 200));
  const Tensor w = on_cuda(random_tensor({32, 16, 3, 3}, 201));
  const Tensor dy = on_cuda(random_tensor({8, 32, 12, 12}, 202));
  const ops::Conv2dGrads first = ops::conv2d_backward(dy, x, w, true, p);
  for (int run = 0; run < 2; ++run) {
    const ops::Conv2dGrads again = ops::conv2d_backward(dy, x, w, true, p);
    EXPECT_EQ(again.dx.to_vector(), first.dx.to_vector());
    EXPECT_EQ(again.dw.to_vector(), first.dw.to_vector());
    EXPECT_EQ(again.db.to_vector(), first.db.to_vector());
  }
}

TEST_F(Conv2dCuda, AutogradThroughCudaTensorsMatchesCpu) {
  ops::Conv2dParams p;
  p.pad_h = p.pad_w = 1;
  const Tensor x0 = random_tensor({2, 3, 6, 6}, 300), w0 = random_tensor({4, 3, 3, 3}, 301);
  const Tensor b0 = random_tensor({4}, 302), r = random_tensor({2, 4, 6, 6}, 303);
  auto run = [&](Device d) {
    Tensor x = x0.to(d).clone().set_requires_grad(true);
    Tensor w = w0.to(d).clone().set_requires_grad(true);
    Tensor b = b0.to(d).clone().set_requires_grad(true);
    sum(mul(conv2d(x, w, b, p), r.to(d))).backward();
    return std::vector<Tensor>{x.grad(), w.grad(), b.grad()};
  };
  const std::vector<Tensor> e = run(Device::cpu()), a = run(Device::cuda());
  for (std::size_t i = 0; i < e.size(); ++i)
    EXPECT_TRUE(allclose(a[i], e[i], 1e-4f, 1e-3f)) << "gradient " << i;
}

// The convolutions without cuDNN (cuda/conv2d_gemm.h): against cuDNN on a strided, dilated,
// grouped layer with bias, and bitwise repeatable run to run. (Against the CPU reference:
// the parity table's cuda-nocudnn entries.)
TEST_F(Conv2dCuda, WithoutCudnnMatchesCudnnAndRepeats) {
  ops::Conv2dParams p;
  p.stride_h = 2;
  p.pad_h = p.pad_w = 2;
  p.dilation_w = 2;
  p.groups = 2;
  const Tensor x = on_cuda(random_tensor({3, 6, 13, 11}, 500));
  const Tensor w = on_cuda(random_tensor({8, 3, 3, 3}, 501));
  const Tensor b = on_cuda(random_tensor({8}, 502));
  const auto run = [&](bool cudnn) {
    ops::Context context = ops::current_context();
    context.cudnn = cudnn;
    const ops::ContextGuard guard(context);
    const Tensor y = ops::conv2d_forward(x, w, b, p);
    const Tensor dy = on_cuda(random_tensor(y.shape(), 503));
    const ops::Conv2dGrads g = ops::conv2d_backward(dy, x, w, true, p);
    return std::vector<Tensor>{y, g.dx, g.dw, g.db};
  };
  const std::vector<Tensor> with = run(true), without = run(false), again = run(false);
  for (std::size_t i = 0; i < with.size(); ++i) {
    EXPECT_TRUE(allclose(without[i], with[i], 1e-4f, 1e-3f)) << "output " << i;
    EXPECT_EQ(again[i].to_vector(), without[i].to_vector()) << "output " << i;
  }
}

TEST_F(Conv2dCuda, MixedDevicesAreRejected) {
  const Tensor x = random_tensor({1, 2, 5, 5}, 400), w = random_tensor({3, 2, 3, 3}, 401);
  EXPECT_THROW(ops::conv2d_forward(on_cuda(x), w, Tensor(), {}), InvalidArgument);
}

}  // namespace
}  // namespace epoch
