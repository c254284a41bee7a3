// Channel-blocked activations (Tensor::channel_block): the tensor's guards, the conversions,
// each op that takes the layout against its row-major run (bit for bit: the same primitives and
// the same window choices), and a chain that keeps the layout between its layers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "epoch/autograd/functions.h"
#include "epoch/nn/layers.h"
#include "epoch/nn/module.h"
#include "epoch/nn/residual.h"
#include "epoch/ops/activation.h"
#include "epoch/ops/backend.h"
#include "epoch/ops/conv2d.h"
#include "epoch/ops/dropout.h"
#include "epoch/ops/elementwise.h"
#include "epoch/ops/layout.h"
#include "epoch/ops/norm.h"
#include "epoch/ops/pool.h"
#include "testing/testing.h"

namespace epoch {
namespace {

void expect_same_bits(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  const std::vector<float> va = a.to_vector(), vb = b.to_vector();
  for (std::size_t i = 0; i < va.size(); ++i) {
    if (std::isnan(va[i]) && std::isnan(vb[i])) continue;
    ASSERT_EQ(va[i], vb[i]) << what << " differs at " << i;
  }
}

TEST(BlockedTensor, RefusesRowMajorAccessAndConvertsBack) {
  const Tensor x = testing::random_tensor({2, 16, 3, 5}, 1);
  for (std::int64_t block : {8, 16}) {
    const Tensor b = x.to_channel_block(block);
    EXPECT_EQ(b.channel_block(), block);
    EXPECT_FALSE(b.is_contiguous());
    EXPECT_THROW((void)b.f32(), Error);
    EXPECT_THROW((void)b.raw(), Error);
    EXPECT_THROW((void)b.view({2, -1}), Error);
    // Element (n, c, h, w) sits at ((n * C/b + c/b) * H*W + h*W + w) * b + c % b.
    const float* p = b.blocked_f32();
    const float* q = x.f32();
    EXPECT_EQ(p[((1 * (16 / block) + 9 / block) * 15 + 7) * block + 9 % block],
              q[((1 * 16 + 9) * 15) + 7]);
    expect_same_bits(b.contiguous(), x, "contiguous()");
    expect_same_bits(b, x, "to_vector() of the blocked tensor");
    expect_same_bits(b.to_channel_block(24 - block), x, "between block sizes");
  }
  EXPECT_THROW((void)Tensor::empty_blocked({2, 12, 3, 3}, 8), Error);  // 8 does not divide 12
  EXPECT_THROW((void)Tensor::empty_blocked({2, 16, 3}, 8), Error);
}

TEST(BlockedTensor, FastReorderMatchesTheTensorLoop) {
  const Tensor x = testing::random_tensor({3, 32, 7, 6}, 2);
  for (std::int64_t block : {8, 16}) {
    const Tensor fast = ops::to_channel_block(x, block);
    expect_same_bits(fast, x.to_channel_block(block), "to blocked");
    expect_same_bits(ops::to_channel_block(fast, 0), x, "back to row-major");
    EXPECT_EQ(ops::to_channel_block(fast, 0).channel_block(), 0);
  }
}

TEST(BlockedOps, ReluForwardAndBackwardKeepTheLayout) {
  const Tensor x = testing::random_tensor({2, 16, 5, 5}, 3);
  const Tensor dy = testing::random_tensor({2, 16, 5, 5}, 4);
  const Tensor xb = x.to_channel_block(8), dyb = dy.to_channel_block(8);
  const Tensor y = ops::relu_forward(xb);
  EXPECT_EQ(y.channel_block(), 8);
  expect_same_bits(y, ops::relu_forward(x), "relu forward");
  const Tensor dx = ops::relu_backward(dyb, xb);
  EXPECT_EQ(dx.channel_block(), 8);
  expect_same_bits(dx, ops::relu_backward(dy, x), "relu backward");
  // Mixed layouts fall back to row-major.
  expect_same_bits(ops::relu_backward(dy, xb), ops::relu_backward(dy, x), "mixed layouts");
}

TEST(BlockedOps, ElementwiseOpsTakeBlockedOperands) {
  const Tensor a = testing::random_tensor({2, 16, 3, 3}, 13),
               b = testing::random_tensor({2, 16, 3, 3}, 14);
  const Tensor both = ops::add(a.to_channel_block(8), b.to_channel_block(8));
  EXPECT_EQ(both.channel_block(), 8);
  expect_same_bits(both, ops::add(a, b), "blocked + blocked");
  const Tensor mixed = ops::mul(a.to_channel_block(16), b);
  EXPECT_EQ(mixed.channel_block(), 0);
  expect_same_bits(mixed, ops::mul(a, b), "blocked * row-major");
  const Tensor bias = testing::random_tensor({3}, 15);
  expect_same_bits(ops::add(a.to_channel_block(8), bias), ops::add(a, bias), "broadcast");
}

TEST(BlockedOps, DropoutDrawsTheRowMajorMask) {
  // planes of 15 elements (not a whole number of Philox calls) and of 1320 (more than one
  // batch of draws)
  for (const Shape& shape : {Shape{3, 16, 5, 3}, Shape{2, 16, 40, 33}}) {
    const Tensor x = testing::random_tensor(shape, 16), dy = testing::random_tensor(shape, 17);
    const ops::DropoutResult r = ops::dropout_forward(x, 0.4f, 7, 11);
    for (std::int64_t block : {8, 16}) {
      const ops::DropoutResult rb = ops::dropout_forward(x.to_channel_block(block), 0.4f, 7, 11);
      EXPECT_EQ(rb.y.channel_block(), block);
      expect_same_bits(rb.y, r.y, "y");
      expect_same_bits(rb.mask, r.mask, "mask");
      const Tensor dx = ops::dropout_backward(dy.to_channel_block(block), rb.mask);
      EXPECT_EQ(dx.channel_block(), block);
      expect_same_bits(dx, ops::dropout_backward(dy, r.mask), "dx");
      expect_same_bits(ops::dropout_backward(dy, rb.mask), ops::dropout_backward(dy, r.mask),
                       "row-major dy");
    }
  }
}

TEST(BlockedOps, TiledMaxPoolEqualsRowMajorWithTiesAndNaN) {
  Tensor x = testing::random_tensor({2, 16, 6, 8}, 5);
  float* p = x.f32();
  p[0] = p[1] = p[8] = p[9] = 0.5f;  // a tie: the first position wins
  p[50] = std::numeric_limits<float>::quiet_NaN();
  p[130] = std::numeric_limits<float>::infinity();  // sums that are not finite: rows redone
  p[200] = -std::numeric_limits<float>::infinity();
  p[309] = p[317] = 9.0f;  // a tie between the second and the fourth position of a window
  const Tensor dy = testing::random_tensor({2, 16, 3, 4}, 6);
  ops::Pool2dParams pp;
  pp.kernel_h = pp.kernel_w = pp.stride_h = pp.stride_w = 2;
  for (std::int64_t block : {8, 16}) {
    const Tensor xb = x.to_channel_block(block);
    const ops::MaxPoolResult rb = ops::max_pool2d_forward(xb, pp);
    const ops::MaxPoolResult r = ops::max_pool2d_forward(x, pp);
    EXPECT_EQ(rb.y.channel_block(), block);
    expect_same_bits(rb.y, r.y, "max pool forward");
    const Tensor dxb = ops::max_pool2d_backward(dy.to_channel_block(block), xb, rb, pp);
    EXPECT_EQ(dxb.channel_block(), block);
    expect_same_bits(dxb, ops::max_pool2d_backward(dy, x, r, pp), "max pool backward");
    // A row-major dy is taken too.
    expect_same_bits(ops::max_pool2d_backward(dy, xb, rb, pp),
                     ops::max_pool2d_backward(dy, x, r, pp), "row-major dy");
  }
}

// Through a ReLU, the pooling's gradient is also the ReLU's: relu_backward after it, the same
// bits, on the blocked kernel (masked inside) and on the others (dy masked first), for windows
// that are all zero, ties at zero and negative gradients.
TEST(BlockedOps, MaxPoolBackwardThroughReluEqualsReluBackwardAfterIt) {
  // 7x9: a row and a column past the last 2x2 window
  Tensor x = ops::relu_forward(testing::random_tensor({2, 16, 7, 9}, 8));
  float* p = x.f32();
  p[0] = p[1] = p[9] = p[10] = 0.0f;  // a window of zeros: no gradient
  p[18] = p[19] = 0.0f;               // a tie at zero beside other values
  for (const bool tiled : {true, false}) {
    ops::Pool2dParams pp;
    pp.kernel_h = pp.kernel_w = tiled ? 2 : 3;
    pp.stride_h = pp.stride_w = 2;
    const Shape y_shape = ops::max_pool2d_forward(x, pp).y.shape();
    const Tensor dy = testing::random_tensor(y_shape, 10);
    for (std::int64_t block : {0, 8, 16}) {
      const Tensor xb = block == 0 ? x : x.to_channel_block(block);
      const ops::MaxPoolResult r = ops::max_pool2d_forward(xb, pp);
      const Tensor expected = ops::relu_backward(ops::max_pool2d_backward(dy, xb, r, pp), xb);
      const Tensor got = ops::max_pool2d_backward(dy, xb, r, pp, true);
      EXPECT_EQ(got.channel_block(), expected.channel_block());
      expect_same_bits(got, expected,
                       std::string(tiled ? "2x2" : "3x3") + " block " + std::to_string(block));
    }
  }
}

// Overlapping and padded windows (ResNet's 3x3/2 pad 1 stem, cifar10-tf's 3x3/2 "same" pooling
// with padding only at the end, AlexNet's 3x3/2) stay blocked and give the reference's bits:
// the first maximum of a tie, NaN, infinities, a window of -inf (its first real position),
// and the overlapping gradients summed as the reference sums them; through a ReLU too.
TEST(BlockedOps, OverlappingMaxPoolStaysBlockedWithTheReferenceBits) {
  Tensor x = testing::random_tensor({2, 16, 9, 8}, 7);
  float* p = x.f32();
  p[0] = p[1] = p[8] = p[9] = 0.5f;  // a tie across overlapping windows
  p[40] = std::numeric_limits<float>::quiet_NaN();
  p[100] = std::numeric_limits<float>::infinity();
  for (int i : {192, 193, 194, 200, 201, 202, 208, 209, 210})  // plane 2, rows 6-8, columns 0-2
    p[i] = -std::numeric_limits<float>::infinity();            // windows of -inf
  struct Case {
    std::int64_t k, stride, top, left, bottom, right;
  };
  for (const Case c : {Case{3, 2, 1, 1, 1, 1}, Case{3, 2, 0, 0, 1, 1}, Case{3, 2, 0, 0, 0, 0},
                       Case{3, 1, 1, 1, 1, 1}, Case{2, 1, 0, 0, 0, 0}}) {
    ops::Pool2dParams pp;
    pp.kernel_h = pp.kernel_w = c.k;
    pp.stride_h = pp.stride_w = c.stride;
    pp.pad_top = c.top, pp.pad_left = c.left, pp.pad_bottom = c.bottom, pp.pad_right = c.right;
    const std::string what = std::to_string(c.k) + "x" + std::to_string(c.k) + "/" +
                             std::to_string(c.stride) + " pad " + std::to_string(c.top) +
                             std::to_string(c.bottom);
    // the reference kernels, row-major
    ops::set_cpu_kernels(ops::CpuKernels::reference);
    const ops::MaxPoolResult r = ops::max_pool2d_forward(x, pp);
    const Tensor dy = testing::random_tensor(r.y.shape(), 9);
    const Tensor dx = ops::max_pool2d_backward(dy, x, r, pp);
    ops::set_cpu_kernels(ops::CpuKernels::fast);
    for (std::int64_t block : {8, 16})
      for (const ops::CpuKernels kernels : {ops::CpuKernels::fast, ops::CpuKernels::reference}) {
        ops::set_cpu_kernels(kernels);
        const Tensor xb = x.to_channel_block(block);
        const ops::MaxPoolResult rb = ops::max_pool2d_forward(xb, pp);
        EXPECT_EQ(rb.y.channel_block(), block) << what;
        expect_same_bits(rb.y, r.y, what + " forward");
        const Tensor dxb = ops::max_pool2d_backward(dy.to_channel_block(block), xb, rb, pp);
        EXPECT_EQ(dxb.channel_block(), block) << what;
        expect_same_bits(dxb, dx, what + " backward");
        // Through a ReLU the kernel masks dy by y > 0: relu_backward after it (x >= 0 here).
        const Tensor xr = ops::relu_forward(x).to_channel_block(block);
        const ops::MaxPoolResult rr = ops::max_pool2d_forward(xr, pp);
        ops::set_cpu_kernels(ops::CpuKernels::reference);
        const Tensor xr_plain = ops::relu_forward(x);
        const ops::MaxPoolResult rr_plain = ops::max_pool2d_forward(xr_plain, pp);
        const Tensor want =
            ops::relu_backward(ops::max_pool2d_backward(dy, xr_plain, rr_plain, pp), xr_plain);
        ops::set_cpu_kernels(kernels);
        expect_same_bits(ops::max_pool2d_backward(dy, xr, rr, pp, true), want,
                         what + " through a ReLU");
      }
    ops::set_cpu_kernels(ops::CpuKernels::fast);
  }
}

#if EPOCH_WITH_ONEDNN
// Equal to rounding: for tests where the blocked and row-major runs may take different
// primitives (a 1x1 convolution runs as a plain GEMM on row-major activations).
void expect_close(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  const std::vector<float> va = a.to_vector(), vb = b.to_vector();
  float scale = 0.0f;
  for (float v : vb) scale = std::max(scale, std::abs(v));
  for (std::size_t i = 0; i < va.size(); ++i)
    ASSERT_NEAR(va[i], vb[i], 1e-5f * scale + 1e-6f) << what << " differs at " << i;
}

TEST(BlockedOps, BatchNormTakesAndGivesBlockedActivations) {
  const Tensor x = testing::random_tensor({4, 32, 5, 5}, 21);
  const Tensor gamma = testing::random_tensor({32}, 22, 0.5f, 1.5f);
  const Tensor beta = testing::random_tensor({32}, 23);
  const Tensor dy = testing::random_tensor({4, 32, 5, 5}, 24);
  const auto stats = [] {
    return std::pair{testing::random_tensor({32}, 25, -0.1f, 0.1f),
                     testing::random_tensor({32}, 26, 0.5f, 1.5f)};
  };
  for (const bool training : {true, false}) {
    auto [rm, rv] = stats();
    const ops::BatchNormResult r =
        ops::batch_norm_forward(x, gamma, beta, rm, rv, training, 0.1f, 1e-5f);
    const ops::BatchNormGrads g = ops::batch_norm_backward(dy, x, gamma, r, training);
    for (const std::int64_t block : {8, 16}) {
      const std::string at =
          (training ? "training, block " : "eval, block ") + std::to_string(block) + ": ";
      auto [rmb, rvb] = stats();
      const Tensor xb = x.to_channel_block(block);
      const ops::BatchNormResult rb =
          ops::batch_norm_forward(xb, gamma, beta, rmb, rvb, training, 0.1f, 1e-5f);
      EXPECT_EQ(rb.y.channel_block(), block) << at << "y comes in x's layout";
      expect_close(rb.y, r.y, at + "y");
      expect_close(rmb, rm, at + "running mean");
      expect_close(rvb, rv, at + "running variance");
      for (const Tensor& dyl : {dy.to_channel_block(block), dy}) {
        const ops::BatchNormGrads gb = ops::batch_norm_backward(dyl, xb, gamma, rb, training);
        EXPECT_EQ(gb.dx.channel_block(), block) << at << "dx comes in x's layout";
        expect_close(gb.dx, g.dx, at + "dx");
        expect_close(gb.dgamma, g.dgamma, at + "dgamma");
        expect_close(gb.dbeta, g.dbeta, at + "dbeta");
      }
    }
  }
}

// A ResNet bottleneck block in training, as one chain (activations blocked through both paths,
// batch norms, the sum and the ReLU) and link by link on row-major activations: the same output
// and gradients to rounding, with no activation reordered inside the block.
TEST(BlockedChain, TrainsAResidualBlockBlocked) {
  ops::Conv2dParams same, down;
  same.pad_h = same.pad_w = 1;
  down.stride_h = down.stride_w = 2;
  ops::Conv2dParams strided = same;
  strided.stride_h = strided.stride_w = 2;
  auto block = std::make_shared<nn::Residual>();
  block->add("conv1", std::make_shared<nn::Conv2d>(32, 16, 1, 1, ops::Conv2dParams{}, false))
      .add("bn1", std::make_shared<nn::BatchNorm>(16))
      .add("relu1", std::make_shared<nn::Act>(nn::Activation::relu))
      .add("conv2", std::make_shared<nn::Conv2d>(16, 16, 3, 3, strided, false))
      .add("bn2", std::make_shared<nn::BatchNorm>(16))
      .add("relu2", std::make_shared<nn::Act>(nn::Activation::relu))
      .add("conv3", std::make_shared<nn::Conv2d>(16, 64, 1, 1, ops::Conv2dParams{}, false))
      .add("bn3", std::make_shared<nn::BatchNorm>(64));
  auto shortcut = std::make_shared<nn::Sequential>();
  shortcut->add("0", std::make_shared<nn::Conv2d>(32, 64, 1, 1, down, false))
      .add("1", std::make_shared<nn::BatchNorm>(64));
  block->add("downsample", shortcut);
  auto net = std::make_shared<nn::Sequential>();
  // (no bias on the stem: the batch norms behind it make its gradient zero up to rounding)
  net->add("stem", std::make_shared<nn::Conv2d>(3, 32, 3, 3, same, false)).add("block", block);
  nn::initialize(*net, 7);
  const Tensor x = testing::random_tensor({4, 3, 10, 10}, 13);
  const Tensor weights = testing::random_tensor({4, 64, 5, 5}, 14);
  const auto run = [&](bool as_chain, int* reorders) {
    for (auto& [name, t] : net->parameters()) t.zero_grad();
    ops::KernelTrace trace;
    Tensor h;
    if (as_chain) {
      h = net->forward(x);
    } else {
      const Tensor s = net->children()[0].second->forward(x);
      Tensor m = s;
      for (const auto& [name, link] : block->children())
        if (name != "downsample") m = link->forward(m);
      Tensor d = s;
      for (const auto& [name, link] : shortcut->children()) d = link->forward(d);
      h = relu(add(m, d));
    }
    EXPECT_EQ(h.channel_block(), 0);
    sum(mul(h, weights)).backward();
    if (reorders != nullptr) {
      *reorders = 0;
      for (const ops::KernelRecord& r : trace.records())
        *reorders += r.op == "to_channel_block" ? 1 : 0;
    }
    std::vector<Tensor> out{h.detach()};
    for (auto& [name, t] : net->parameters()) out.push_back(t.grad().clone());
    return out;
  };
  int reorders = 0;
  const std::vector<Tensor> a = run(true, &reorders), b = run(false, nullptr);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    expect_close(a[i], b[i], "output/grad " + std::to_string(i));
  // The block's output to row-major and its gradient back are the only conversions.
  EXPECT_LE(reorders, 2);
}

TEST(BlockedOps, ConvolutionTakesAndGivesBlockedActivations) {
  const Tensor x = testing::random_tensor({2, 16, 9, 9}, 8);
  const Tensor w = testing::random_tensor({32, 16, 3, 3}, 9, -0.2f, 0.2f);
  const Tensor b = testing::random_tensor({32}, 10);
  const Tensor dy = testing::random_tensor({2, 32, 9, 9}, 11);
  ops::Conv2dParams p;
  p.pad_h = p.pad_w = 1;
  const Tensor y = ops::conv2d_forward(x, w, b, p);
  const ops::Conv2dGrads g = ops::conv2d_backward(dy, x, w, true, p);
  ops::Conv2dParams pb = p;
  pb.blocked_output = true;
  const Tensor yb = ops::conv2d_forward(x, w, b, pb);
  ASSERT_NE(yb.channel_block(), 0) << "the fast path keeps its primitive's blocked output";
  expect_same_bits(yb, y, "blocked output");
  const std::int64_t block = yb.channel_block();
  const Tensor xb = x.to_channel_block(block);
  expect_same_bits(ops::conv2d_forward(xb, w, b, pb), y, "blocked input and output");
  expect_same_bits(ops::conv2d_forward(xb, w, b, p), y, "blocked input, row-major output");
  const ops::Conv2dGrads gb = ops::conv2d_backward(dy.to_channel_block(block), xb, w, true, p);
  EXPECT_EQ(gb.dx.channel_block(), block) << "dx comes in x's layout";
  expect_same_bits(gb.dx, g.dx, "dx");
  expect_same_bits(gb.dw, g.dw, "dw");
  expect_same_bits(gb.db, g.db, "db");
  // The reference kernels take blocked tensors too (and give row-major results).
  ops::CpuKernelsGuard reference(ops::CpuKernels::reference);
  const Tensor yr = ops::conv2d_forward(xb, w, b, pb);
  EXPECT_EQ(yr.channel_block(), 0);
  EXPECT_EQ(ops::conv2d_backward(dy, xb, w, true, p).dx.channel_block(), 0);
}

// A residual block's last convolution with its sum (and ReLU) as post-ops, against the
// convolution, add and relu as separate ops (to rounding; bit for bit where it takes them): 1x1 and
// 3x3 layers, the residual row-major or in the primitive's blocked layout (and in another layout,
// which takes the separate ops), with and without the ReLU, on the fast and the reference kernels.
TEST(BlockedOps, ConvolutionAddsAResidualInItsPrimitive) {
  const Tensor x = testing::random_tensor({2, 16, 7, 7}, 31);
  const Tensor b = testing::random_tensor({32}, 32);
  const Tensor residual = testing::random_tensor({2, 32, 7, 7}, 33);
  for (const std::int64_t k : {1, 3}) {
    const Tensor w = testing::random_tensor({32, 16, k, k}, 34, -0.3f, 0.3f);
    for (const bool relu : {false, true}) {
      for (const bool blocked : {false, true}) {
        const std::string at = std::to_string(k) + "x" + std::to_string(k) +
                               (relu ? ", relu" : "") + (blocked ? ", blocked" : ", row-major");
        ops::Conv2dParams p;
        p.pad_h = p.pad_w = k / 2;
        p.blocked_output = blocked;
        p.inference = true;
        Tensor expected = ops::add(ops::conv2d_forward(x, w, b, p), residual);
        if (relu) expected = ops::relu_forward(expected);
        p.relu = relu;
        const std::int64_t block = blocked ? ops::conv2d_forward(x, w, b, p).channel_block() : 0;
        const Tensor r = block != 0 ? residual.to_channel_block(block) : residual;
        ops::KernelTrace trace;
        const Tensor y = ops::conv2d_forward_add(x, w, b, p, r);
        EXPECT_EQ(y.channel_block(), block) << at;
        expect_close(y, expected, at);  // (the post-op may add in another order: rounding)
        if (k == 1) {  // (3x3 layers may run epoch's own Winograd, which takes separate ops)
          for (const ops::KernelRecord& rec : trace.records()) {
            EXPECT_TRUE(rec.op != "add" && rec.op != "relu_forward") << at << ": " << rec.op;
          }
        }
        const Tensor other = residual.to_channel_block(block == 8 ? 16 : 8);
        expect_same_bits(ops::conv2d_forward_add(x, w, b, p, other), expected,
                         at + ", residual in another layout");
        ops::CpuKernelsGuard reference(ops::CpuKernels::reference);
        expect_close(ops::conv2d_forward_add(x, w, b, p, r), expected, at + ", reference");
      }
    }
  }
  EXPECT_THROW(
      (void)ops::conv2d_forward_add(x, testing::random_tensor({32, 16, 1, 1}, 35), b,
                                    ops::Conv2dParams{}, testing::random_tensor({2, 32, 7, 6}, 36)),
      Error);
}

// conv -> relu -> pool -> conv -> relu -> flatten -> dense, as one chain and link by link
// with row-major activations: the same output and gradients, bit for bit. In the chain each
// ReLU runs inside its convolution, the pooling takes conv1's blocked output, and conv2 writes
// the row-major layout the flatten needs: no reorder of activations at all.
TEST(BlockedChain, KeepsTheLayoutBetweenLayersThatTakeIt) {
  auto chain = std::make_shared<nn::Sequential>();
  chain->add("conv1", nn::Conv2d::same(3, 16, 3))
      .add("relu1", std::make_shared<nn::Act>(nn::Activation::relu))
      .add("pool1", nn::Pool2d::max(2))
      .add("conv2", nn::Conv2d::same(16, 32, 3))
      .add("relu2", std::make_shared<nn::Act>(nn::Activation::relu))
      .add("flatten", std::make_shared<nn::Flatten>())
      .add("fc1", std::make_shared<nn::Linear>(32 * 4 * 4, 5));
  nn::initialize(*chain, 3);
  const Tensor x = testing::random_tensor({4, 3, 8, 8}, 12);
  const auto grads = [&](bool as_chain, std::vector<ops::KernelRecord>* records) {
    for (auto& [name, t] : chain->parameters()) t.zero_grad();
    ops::KernelTrace trace;
    Tensor h = x;
    if (as_chain) {
      h = chain->forward(x);
    } else {
      for (const auto& [name, link] : chain->children()) h = link->forward(h);
    }
    EXPECT_EQ(h.channel_block(), 0);
    sum(h).backward();
    if (records != nullptr) *records = trace.records();
    std::vector<Tensor> out{h.detach()};
    for (auto& [name, t] : chain->parameters()) out.push_back(t.grad().clone());
    return out;
  };
  std::vector<ops::KernelRecord> records;
  const std::vector<Tensor> a = grads(true, &records), b = grads(false, nullptr);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    expect_same_bits(a[i], b[i], "output/grad " + std::to_string(i));
  int reorders = 0, relus = 0, relu_grads = 0, pools = 0;
  for (const ops::KernelRecord& r : records) {
    reorders += r.op == "to_channel_block" ? 1 : 0;
    relus += r.op == "relu_forward" ? 1 : 0;
    relu_grads += r.op == "relu_backward" ? 1 : 0;
    if (r.op == "max_pool2d_forward") {
      ++pools;
      EXPECT_EQ(r.impl, "epoch:max_pool_blocked");
    }
  }
  EXPECT_EQ(reorders, 0);
  EXPECT_EQ(relus, 0) << "both ReLUs fused into their convolutions";
  EXPECT_EQ(relu_grads, 1) << "relu1's gradient taken by pool1, relu2's by conv2";
  EXPECT_EQ(pools, 1);
}
#endif

}  // namespace
}  // namespace epoch
