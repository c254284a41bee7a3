// cuDNN convolution against the CPU reference on random inputs (stride, padding, dilation,
// groups, with and without bias), its run-to-run determinism, and autograd on CUDA.
#include <gtest/gtest.h>

#include <vector>

#include "cuda/cuda_testing.h"
#include "epoch/autograd/functions.h"
#include "epoch/ops/conv2d.h"
#include "testing/testing.h"

namespace epoch {
namespace {

using testing::allclose;
using testing::on_cuda;
using testing::random_tensor;
using Conv2dCuda = testing::CudaParityTest;

struct Case {
  const char* name;
  Shape x, w;
  ops::Conv2dParams p;
  bool bias;
};

std::vector<Case> cases() {
  ops::Conv2dParams same;
  same.pad_h = same.pad_w = 1;
  ops::Conv2dParams strided;
  strided.stride_h = 2, strided.stride_w = 3, strided.pad_h = 2, strided.pad_w = 0;
  ops::Conv2dParams dilated;
  dilated.dilation_h = dilated.dilation_w = 2, dilated.pad_h = dilated.pad_w = 1;
  ops::Conv2dParams grouped;
  grouped.groups = 2, grouped.pad_h = grouped.pad_w = 1;
  return {
      {"3x3 same", {2, 3, 9, 8}, {5, 3, 3, 3}, same, true},
      {"strided", {3, 4, 11, 13}, {6, 4, 3, 5}, strided, true},
      {"dilated no bias", {2, 2, 10, 10}, {3, 2, 3, 3}, dilated, false},
      {"grouped", {2, 4, 7, 7}, {6, 2, 3, 3}, grouped, true},
      {"1x1", {4, 8, 5, 5}, {16, 8, 1, 1}, ops::Conv2dParams{}, true},
  };
}

TEST_F(Conv2dCuda, ForwardAndBackwardMatchCpu) {
  std::uint64_t seed = 100;
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const Tensor x = random_tensor(c.x, ++seed), w = random_tensor(c.w, ++seed);
    const Tensor b = c.bias ? random_tensor({c.w[0]}, ++seed) : Tensor();
    const Tensor y = ops::conv2d_forward(x, w, b, c.p);
    const Tensor yc = ops::conv2d_forward(on_cuda(x), on_cuda(w), c.bias ? on_cuda(b) : Tensor(),
                                          c.p);
    ASSERT_TRUE(yc.device().is_cuda());
    EXPECT_TRUE(allclose(yc, y, 1e-4f, 1e-3f));

    const Tensor dy = random_tensor(y.shape(), ++seed);
    for (bool need_dx : {true, false}) {
      const ops::Conv2dGrads e = ops::conv2d_backward(dy, x, w, c.bias, c.p, need_dx);
      const ops::Conv2dGrads a =
          ops::conv2d_backward(on_cuda(dy), on_cuda(x), on_cuda(w), c.bias, c.p, need_dx);
      EXPECT_EQ(a.dx.defined(), need_dx);
      if (need_dx) {
        EXPECT_TRUE(allclose(a.dx, e.dx, 1e-4f, 1e-3f));
      }
      EXPECT_TRUE(allclose(a.dw, e.dw, 1e-4f, 1e-3f));
      if (c.bias) {
        EXPECT_TRUE(allclose(a.db, e.db, 1e-4f, 1e-4f));
      }
    }
  }
}

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

TEST_F(Conv2dCuda, MixedDevicesAreRejected) {
  const Tensor x = random_tensor({1, 2, 5, 5}, 400), w = random_tensor({3, 2, 3, 3}, 401);
  EXPECT_THROW(ops::conv2d_forward(on_cuda(x), w, Tensor(), {}), InvalidArgument);
}

}  // namespace
}  // namespace epoch
