// oneDNN kernel features no op reaches (convolution layouts forced plain or blocked, GEMM
// accumulation) on the parity table's shapes; a GEMM by hand; the kernels' argument errors.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "cpu/conv2d_cpu.h"
#include "cpu/linear_cpu.h"
#include "cpu/pool_cpu.h"
#include "testing/parity.h"
#include "testing/testing.h"

#if EPOCH_WITH_ONEDNN
#include "cpu/conv2d_onednn.h"
#include "cpu/linear_onednn.h"
#include "cpu/norm_onednn.h"
#include "cpu/pool_onednn.h"
#endif

namespace epoch {
namespace {

#if EPOCH_WITH_ONEDNN

using testing::parity::conv2d_shapes;
using testing::parity::ConvShape;
using testing::parity::matmul_shapes;
using testing::parity::MatmulShape;

kernels::Conv2dDims dims_of(const ConvShape& s) {
  kernels::Conv2dDims d;
  d.N = s.N, d.C = s.C, d.H = s.H, d.W = s.W, d.OC = s.OC, d.KH = s.KH, d.KW = s.KW;
  d.stride_h = s.p.stride_h, d.stride_w = s.p.stride_w, d.pad_h = s.p.pad_h, d.pad_w = s.p.pad_w;
  d.dilation_h = s.p.dilation_h, d.dilation_w = s.p.dilation_w, d.groups = s.p.groups;
  d.OH = ops::conv_out_size(s.H, s.KH, s.p.stride_h, s.p.pad_h, s.p.dilation_h);
  d.OW = ops::conv_out_size(s.W, s.KW, s.p.stride_w, s.p.pad_w, s.p.dilation_w);
  return d;
}

// Outputs start as 7 so that an element the kernel forgets to write shows.
void check_layout(const ConvShape& s, cpu::onednn::ConvLayout layout) {
  const kernels::Conv2dDims d = dims_of(s);
  const Shape xs{d.N, d.C, d.H, d.W}, ws{d.OC, d.C / d.groups, d.KH, d.KW};
  const Shape ys{d.N, d.OC, d.OH, d.OW};
  const Tensor x = testing::random_tensor(xs, 1), w = testing::random_tensor(ws, 2);
  const Tensor b = testing::random_tensor({d.OC}, 3), dy = testing::random_tensor(ys, 4);
  const float* bp = s.bias ? b.f32() : nullptr;

  Tensor y_ref = Tensor::empty(ys), y = Tensor::full(ys, 7.0f);
  cpu::conv2d_forward(d, x.f32(), w.f32(), bp, y_ref.f32());
  cpu::onednn::conv2d_forward(d, x.f32(), w.f32(), bp, y.f32(), layout);
  EXPECT_TRUE(testing::allclose(y, y_ref, 1e-4f, 1e-4f)) << "forward";

  Tensor dx_ref = Tensor::empty(xs), dw_ref = Tensor::empty(ws), db_ref = Tensor::empty({d.OC});
  cpu::conv2d_backward(d, dy.f32(), x.f32(), w.f32(), dx_ref.f32(), dw_ref.f32(),
                       s.bias ? db_ref.f32() : nullptr);
  Tensor dx = Tensor::full(xs, 7.0f), dw = Tensor::full(ws, 7.0f), db = Tensor::full({d.OC}, 7.0f);
  cpu::onednn::conv2d_backward(d, dy.f32(), x.f32(), w.f32(), dx.f32(), dw.f32(),
                               s.bias ? db.f32() : nullptr, layout);
  EXPECT_TRUE(testing::allclose(dx, dx_ref, 1e-4f, 1e-4f)) << "dx";
  EXPECT_TRUE(testing::allclose(dw, dw_ref, 2e-4f, 1e-4f)) << "dw";
  if (s.bias) {
    EXPECT_TRUE(testing::allclose(db, db_ref, 2e-4f, 1e-4f)) << "db";
  }

  // Without dx (a first layer): dw and db alone, the same values.
  Tensor dw2 = Tensor::full(ws, 7.0f);
  cpu::onednn::conv2d_backward(d, dy.f32(), x.f32(), w.f32(), nullptr, dw2.f32(), nullptr, layout);
  EXPECT_TRUE(testing::allclose(dw2, dw_ref, 2e-4f, 1e-4f)) << "dw without dx";
}

// An index into testing::parity::conv2d_shapes().
class OnednnConvLayout : public ::testing::TestWithParam<std::size_t> {};

TEST_P(OnednnConvLayout, PlainMatchesReference) {
  check_layout(conv2d_shapes()[GetParam()], cpu::onednn::ConvLayout::plain);
}

TEST_P(OnednnConvLayout, BlockedMatchesReference) {
  check_layout(conv2d_shapes()[GetParam()], cpu::onednn::ConvLayout::blocked);
}

INSTANTIATE_TEST_SUITE_P(ParityShapes, OnednnConvLayout,
                         ::testing::Range<std::size_t>(0, conv2d_shapes().size()),
                         [](const ::testing::TestParamInfo<std::size_t>& info) {
                           return "shape" + std::to_string(info.param);
                         });

// c = op(a) op(b) + c, which no op asks oneDNN for (matmul overwrites: the parity table).
TEST(OnednnGemm, AccumulateMatchesReference) {
  for (const MatmulShape& s : matmul_shapes()) {
    SCOPED_TRACE(::testing::Message() << "M " << s.M << " N " << s.N << " K " << s.K << " trans_a "
                                      << s.trans_a << " trans_b " << s.trans_b);
    const Tensor a = testing::random_tensor(s.trans_a ? Shape{s.K, s.M} : Shape{s.M, s.K}, 21);
    const Tensor b = testing::random_tensor(s.trans_b ? Shape{s.N, s.K} : Shape{s.K, s.N}, 22);
    const Tensor c0 = testing::random_tensor({s.M, s.N}, 23);
    Tensor c_ref = c0.clone(), c = c0.clone();
    cpu::gemm(s.trans_a, s.trans_b, s.M, s.N, s.K, a.f32(), b.f32(), c_ref.f32(), true);
    cpu::onednn::gemm(s.trans_a, s.trans_b, s.M, s.N, s.K, a.f32(), b.f32(), c.f32(), true);
    EXPECT_TRUE(testing::allclose(c, c_ref, 1e-4f, 1e-4f));
  }
}

TEST(OnednnGemm, SmallProductByHand) {
  const Tensor a = Tensor::from_vector({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor b = Tensor::from_vector({3, 2}, {1, -1, 0, 2, -2, 1});
  Tensor c = Tensor::full({2, 2}, 1.0f);
  cpu::onednn::gemm(false, false, 2, 2, 3, a.f32(), b.f32(), c.f32(), true);
  EXPECT_TRUE(testing::allclose(c, Tensor::from_vector({2, 2}, {-4, 7, -7, 13})));
}

TEST(OnednnLrnErrors, EvenWindowThrows) {
  const Tensor x = testing::random_tensor({1, 4, 2}, 53);
  Tensor y = Tensor::empty({1, 4, 2});
  EXPECT_THROW(cpu::onednn::lrn_forward(x.f32(), y.f32(), 1, 4, 2, 4, 1e-4f, 0.75f, 1.0f),
               InvalidArgument);
}

TEST(OnednnPoolErrors, ChannelsMustDivideThePlanes) {
  kernels::Pool2dDims d;
  d.planes = 6, d.H = d.W = 4, d.OH = d.OW = 2, d.KH = d.KW = 2, d.stride_h = d.stride_w = 2;
  EXPECT_THROW(cpu::onednn::max_pool2d_workspace_bytes(d, 4), InvalidArgument);
}

#else

TEST(OnednnKernels, SkippedWithoutOnednn) { GTEST_SKIP() << "this build has no oneDNN"; }

#endif

}  // namespace
}  // namespace epoch
