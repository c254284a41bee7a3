// oneDNN convolution against the reference kernels (cpu::conv2d_*) on random inputs across a
// grid of shapes, in both the plain and the blocked layouts: forward and every gradient.
#include <gtest/gtest.h>

#include <cstdint>
#include <ostream>

#include "cpu/conv2d_cpu.h"
#include "testing/testing.h"

#if EPOCH_WITH_ONEDNN
#include "cpu/conv2d_onednn.h"
#endif

namespace epoch {
namespace {

#if EPOCH_WITH_ONEDNN

struct ConvCase {
  std::int64_t N, C, H, W, OC, KH, KW, sh, sw, ph, pw, dh, dw, groups;
  bool bias;
};

std::ostream& operator<<(std::ostream& os, const ConvCase& c) {
  return os << "N" << c.N << " C" << c.C << " " << c.H << "x" << c.W << " OC" << c.OC << " k"
            << c.KH << "x" << c.KW << " s" << c.sh << "," << c.sw << " p" << c.ph << "," << c.pw
            << " d" << c.dh << "," << c.dw << " g" << c.groups << (c.bias ? " bias" : "");
}

kernels::Conv2dDims dims_of(const ConvCase& c) {
  kernels::Conv2dDims d;
  d.N = c.N, d.C = c.C, d.H = c.H, d.W = c.W, d.OC = c.OC, d.KH = c.KH, d.KW = c.KW;
  d.stride_h = c.sh, d.stride_w = c.sw, d.pad_h = c.ph, d.pad_w = c.pw;
  d.dilation_h = c.dh, d.dilation_w = c.dw, d.groups = c.groups;
  d.OH = (c.H + 2 * c.ph - c.dh * (c.KH - 1) - 1) / c.sh + 1;
  d.OW = (c.W + 2 * c.pw - c.dw * (c.KW - 1) - 1) / c.sw + 1;
  return d;
}

class OnednnConv : public ::testing::TestWithParam<ConvCase> {};

void check_case(const ConvCase& c, cpu::onednn::ConvLayout layout) {
  const kernels::Conv2dDims d = dims_of(c);
  const Shape xs{d.N, d.C, d.H, d.W}, ws{d.OC, d.C / d.groups, d.KH, d.KW};
  const Shape ys{d.N, d.OC, d.OH, d.OW};
  const Tensor x = testing::random_tensor(xs, 1), w = testing::random_tensor(ws, 2);
  const Tensor b = testing::random_tensor({d.OC}, 3), dy = testing::random_tensor(ys, 4);
  const float* bp = c.bias ? b.f32() : nullptr;

  Tensor y_ref = Tensor::empty(ys), y = Tensor::full(ys, 7.0f);
  cpu::conv2d_forward(d, x.f32(), w.f32(), bp, y_ref.f32());
  cpu::onednn::conv2d_forward(d, x.f32(), w.f32(), bp, y.f32(), layout);
  EXPECT_TRUE(testing::allclose(y, y_ref, 1e-4f, 1e-4f)) << "forward";

  Tensor dx_ref = Tensor::empty(xs), dw_ref = Tensor::empty(ws), db_ref = Tensor::empty({d.OC});
  cpu::conv2d_backward(d, dy.f32(), x.f32(), w.f32(), dx_ref.f32(), dw_ref.f32(),
                       c.bias ? db_ref.f32() : nullptr);
  Tensor dx = Tensor::full(xs, 7.0f), dw = Tensor::full(ws, 7.0f), db = Tensor::full({d.OC}, 7.0f);
  cpu::onednn::conv2d_backward(d, dy.f32(), x.f32(), w.f32(), dx.f32(), dw.f32(),
                               c.bias ? db.f32() : nullptr, layout);
  EXPECT_TRUE(testing::allclose(dx, dx_ref, 1e-4f, 1e-4f)) << "dx";
  EXPECT_TRUE(testing::allclose(dw, dw_ref, 2e-4f, 1e-4f)) << "dw";
  if (c.bias) {
    EXPECT_TRUE(testing::allclose(db, db_ref, 2e-4f, 1e-4f)) << "db";
  }

  // Without dx (a first layer): dw and db alone, the same values.
  Tensor dw2 = Tensor::full(ws, 7.0f);
  cpu::onednn::conv2d_backward(d, dy.f32(), x.f32(), w.f32(), nullptr, dw2.f32(), nullptr,
                               layout);
  EXPECT_TRUE(testing::allclose(dw2, dw_ref, 2e-4f, 1e-4f)) << "dw without dx";
}

TEST_P(OnednnConv, PlainLayoutMatchesReference) {
  check_case(GetParam(), cpu::onednn::ConvLayout::plain);
}

TEST_P(OnednnConv, BlockedLayoutMatchesReference) {
  check_case(GetParam(), cpu::onednn::ConvLayout::blocked);
}

TEST_P(OnednnConv, AutomaticLayoutMatchesReference) {
  check_case(GetParam(), cpu::onednn::ConvLayout::automatic);
}

//                 N  C   H   W  OC KH KW sh sw ph pw dh dw  g  bias
INSTANTIATE_TEST_SUITE_P(
    Shapes, OnednnConv,
    ::testing::Values(ConvCase{3, 4, 9, 7, 5, 3, 3, 1, 1, 1, 1, 1, 1, 1, true},
                      ConvCase{1, 3, 11, 10, 6, 3, 3, 2, 2, 1, 1, 1, 1, 1, true},
                      ConvCase{2, 2, 10, 9, 3, 3, 3, 1, 1, 2, 2, 2, 2, 1, true},
                      ConvCase{3, 4, 8, 8, 6, 3, 3, 1, 1, 1, 1, 1, 1, 2, true},
                      ConvCase{2, 4, 7, 9, 4, 3, 3, 1, 1, 1, 1, 1, 1, 4, false},
                      ConvCase{3, 5, 6, 5, 7, 1, 1, 1, 1, 0, 0, 1, 1, 1, false},
                      ConvCase{1, 3, 9, 12, 4, 2, 3, 1, 2, 0, 1, 1, 1, 1, false},
                      ConvCase{2, 6, 9, 9, 5, 1, 1, 2, 2, 0, 0, 1, 1, 1, true},
                      ConvCase{3, 1, 12, 12, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, true},
                      ConvCase{2, 3, 13, 13, 32, 3, 3, 1, 1, 0, 0, 1, 1, 1, true},
                      ConvCase{2, 32, 7, 7, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1, true},
                      ConvCase{1, 16, 10, 10, 16, 5, 5, 2, 2, 2, 2, 1, 1, 1, true},
                      ConvCase{2, 32, 6, 6, 32, 3, 3, 1, 1, 1, 1, 1, 1, 32, true},
                      ConvCase{2, 20, 9, 9, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, true},
                      ConvCase{3, 17, 8, 8, 33, 3, 3, 2, 2, 1, 1, 1, 1, 1, false},
                      ConvCase{2, 36, 7, 7, 40, 3, 3, 1, 1, 1, 1, 1, 1, 2, true},
                      ConvCase{1, 48, 5, 5, 48, 1, 1, 1, 1, 0, 0, 1, 1, 1, true}));

#else

TEST(OnednnConv, SkippedWithoutOnednn) { GTEST_SKIP() << "this build has no oneDNN"; }

#endif

}  // namespace
}  // namespace epoch
