// oneDNN max and average pooling against the reference kernels (cpu::*_pool2d_*) on random
// inputs across a grid of windows, strides, asymmetric paddings and odd sizes.
#include <gtest/gtest.h>

#include <cstdint>
#include <ostream>

#include "cpu/pool_cpu.h"
#include "testing/testing.h"

#if EPOCH_WITH_ONEDNN
#include "cpu/pool_onednn.h"
#endif

namespace epoch {
namespace {

#if EPOCH_WITH_ONEDNN

struct PoolCase {
  std::int64_t N, C, H, W, KH, KW, sh, sw, pt, pb, pl, pr;
};

std::ostream& operator<<(std::ostream& os, const PoolCase& c) {
  return os << "N" << c.N << " C" << c.C << " " << c.H << "x" << c.W << " k" << c.KH << "x"
            << c.KW << " s" << c.sh << "," << c.sw << " pad t" << c.pt << " b" << c.pb << " l"
            << c.pl << " r" << c.pr;
}

cpu::Pool2dDims dims_of(const PoolCase& c) {
  cpu::Pool2dDims d;
  d.planes = c.N * c.C, d.H = c.H, d.W = c.W, d.KH = c.KH, d.KW = c.KW;
  d.stride_h = c.sh, d.stride_w = c.sw, d.pad_top = c.pt, d.pad_left = c.pl;
  d.OH = (c.H + c.pt + c.pb - c.KH) / c.sh + 1;
  d.OW = (c.W + c.pl + c.pr - c.KW) / c.sw + 1;
  return d;
}

class OnednnPool : public ::testing::TestWithParam<PoolCase> {};

TEST_P(OnednnPool, MaxMatchesReference) {
  const PoolCase& c = GetParam();
  const cpu::Pool2dDims d = dims_of(c);
  const Shape xs{c.N, c.C, c.H, c.W}, ys{c.N, c.C, d.OH, d.OW};
  const Tensor x = testing::random_tensor(xs, 11), dy = testing::random_tensor(ys, 12);

  Tensor y_ref = Tensor::empty(ys), idx = Tensor::empty(ys, DType::i32);
  cpu::max_pool2d_forward(d, x.f32(), y_ref.f32(), idx.data<std::int32_t>());
  const std::int64_t bytes = cpu::onednn::max_pool2d_workspace_bytes(d, c.C);
  ASSERT_GT(bytes, 0);
  Tensor y = Tensor::full(ys, 7.0f), ws = Tensor::empty({bytes}, DType::u8);
  cpu::onednn::max_pool2d_forward(d, c.C, x.f32(), y.f32(), ws.data<std::uint8_t>());
  EXPECT_TRUE(testing::allclose(y, y_ref, 0.0f, 0.0f)) << "forward";

  Tensor dx_ref = Tensor::empty(xs), dx = Tensor::full(xs, 7.0f);
  cpu::max_pool2d_backward(d, dy.f32(), idx.data<std::int32_t>(), dx_ref.f32());
  cpu::onednn::max_pool2d_backward(d, c.C, dy.f32(), ws.data<std::uint8_t>(), dx.f32());
  EXPECT_TRUE(testing::allclose(dx, dx_ref, 1e-6f, 1e-5f)) << "dx";
}

TEST_P(OnednnPool, AverageMatchesReference) {
  const PoolCase& c = GetParam();
  const cpu::Pool2dDims d = dims_of(c);
  const Shape xs{c.N, c.C, c.H, c.W}, ys{c.N, c.C, d.OH, d.OW};
  const Tensor x = testing::random_tensor(xs, 13), dy = testing::random_tensor(ys, 14);
  for (bool include : {true, false}) {
    Tensor y_ref = Tensor::empty(ys), y = Tensor::full(ys, 7.0f);
    cpu::avg_pool2d_forward(d, include, x.f32(), y_ref.f32());
    cpu::onednn::avg_pool2d_forward(d, c.C, include, x.f32(), y.f32());
    EXPECT_TRUE(testing::allclose(y, y_ref, 1e-6f, 1e-5f)) << "forward, include_pad " << include;
    Tensor dx_ref = Tensor::empty(xs), dx = Tensor::full(xs, 7.0f);
    cpu::avg_pool2d_backward(d, include, dy.f32(), dx_ref.f32());
    cpu::onednn::avg_pool2d_backward(d, c.C, include, dy.f32(), dx.f32());
    EXPECT_TRUE(testing::allclose(dx, dx_ref, 1e-6f, 1e-5f)) << "dx, include_pad " << include;
  }
}

//                 N  C   H   W KH KW sh sw pt pb pl pr
INSTANTIATE_TEST_SUITE_P(
    Shapes, OnednnPool,
    ::testing::Values(PoolCase{3, 4, 8, 8, 2, 2, 2, 2, 0, 0, 0, 0},
                      PoolCase{1, 3, 9, 7, 2, 2, 2, 2, 0, 0, 0, 0},
                      PoolCase{2, 5, 9, 11, 3, 3, 2, 2, 1, 1, 1, 1},
                      PoolCase{3, 2, 7, 9, 2, 2, 2, 2, 0, 1, 0, 1},
                      PoolCase{2, 3, 6, 7, 3, 3, 1, 1, 1, 1, 1, 1},
                      PoolCase{1, 17, 10, 6, 3, 2, 2, 1, 0, 2, 1, 0},
                      PoolCase{2, 32, 28, 28, 2, 2, 2, 2, 0, 0, 0, 0},
                      PoolCase{3, 16, 13, 13, 3, 3, 2, 2, 0, 0, 0, 0}));

TEST(OnednnPoolErrors, ChannelsMustDivideThePlanes) {
  cpu::Pool2dDims d;
  d.planes = 6, d.H = d.W = 4, d.OH = d.OW = 2, d.KH = d.KW = 2, d.stride_h = d.stride_w = 2;
  EXPECT_THROW(cpu::onednn::max_pool2d_workspace_bytes(d, 4), InvalidArgument);
}

#else

TEST(OnednnPool, SkippedWithoutOnednn) { GTEST_SKIP() << "this build has no oneDNN"; }

#endif

}  // namespace
}  // namespace epoch
