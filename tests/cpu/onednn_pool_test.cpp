// oneDNN max and average pooling against the reference kernels (cpu::*_pool2d_*) on random
// inputs across a grid of windows, strides, asymmetric paddings and odd sizes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <ostream>
#include <utility>
#include <vector>

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

kernels::Pool2dDims dims_of(const PoolCase& c) {
  kernels::Pool2dDims d;
  d.planes = c.N * c.C, d.H = c.H, d.W = c.W, d.KH = c.KH, d.KW = c.KW;
  d.stride_h = c.sh, d.stride_w = c.sw, d.pad_top = c.pt, d.pad_left = c.pl;
  d.OH = (c.H + c.pt + c.pb - c.KH) / c.sh + 1;
  d.OW = (c.W + c.pl + c.pr - c.KW) / c.sw + 1;
  return d;
}

class OnednnPool : public ::testing::TestWithParam<PoolCase> {};

TEST_P(OnednnPool, MaxMatchesReference) {
  const PoolCase& c = GetParam();
  const kernels::Pool2dDims d = dims_of(c);
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
  const kernels::Pool2dDims d = dims_of(c);
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
                      PoolCase{3, 16, 13, 13, 3, 3, 2, 2, 0, 0, 0, 0},
                      PoolCase{2, 3, 9, 10, 3, 3, 3, 3, 0, 0, 0, 0},
                      PoolCase{1, 4, 8, 9, 2, 3, 2, 3, 0, 0, 0, 0}));

// Windows that tile the input run a hand-written kernel; NaN and infinities take its slow
// path, which must still agree with the reference (the first NaN of a window wins).
TEST(OnednnPoolSpecialValues, NanAndInfinityMatchReference) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (const auto& [k, values] : std::vector<std::pair<std::int64_t, std::vector<float>>>{
           {2, {1, nan, 3, 2, 5, 6, nan, 7, -inf, inf, 0, 1, 4, nan, -inf, 2}},
           {4, {1, 2, 3, 4, 5, nan, 7, 8, 9, 10, nan, 12, 13, 14, 15, 16}}}) {
    kernels::Pool2dDims d;
    d.planes = 1, d.H = 4, d.W = 4, d.KH = d.KW = d.stride_h = d.stride_w = k;
    d.OH = d.OW = 4 / k;
    const Tensor x = Tensor::from_vector({1, 1, 4, 4}, values);
    const Shape ys{1, 1, d.OH, d.OW};
    const Tensor dy = testing::random_tensor(ys, 15);
    Tensor y_ref = Tensor::empty(ys), idx = Tensor::empty(ys, DType::i32);
    Tensor dx_ref = Tensor::empty(x.shape());
    cpu::max_pool2d_forward(d, x.f32(), y_ref.f32(), idx.data<std::int32_t>());
    cpu::max_pool2d_backward(d, dy.f32(), idx.data<std::int32_t>(), dx_ref.f32());
    Tensor y = Tensor::empty(ys), dx = Tensor::empty(x.shape());
    Tensor ws = Tensor::empty({cpu::onednn::max_pool2d_workspace_bytes(d, 1)}, DType::u8);
    cpu::onednn::max_pool2d_forward(d, 1, x.f32(), y.f32(), ws.data<std::uint8_t>());
    cpu::onednn::max_pool2d_backward(d, 1, dy.f32(), ws.data<std::uint8_t>(), dx.f32());
    const std::vector<float> a = y.to_vector(), e = y_ref.to_vector();
    for (std::size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(std::isnan(a[i]), std::isnan(e[i])) << "window " << i << ", k " << k;
      if (!std::isnan(e[i])) {
        EXPECT_EQ(a[i], e[i]) << "window " << i << ", k " << k;
      }
    }
    EXPECT_EQ(dx.to_vector(), dx_ref.to_vector()) << "k " << k;
  }
}

TEST(OnednnPoolErrors, ChannelsMustDivideThePlanes) {
  kernels::Pool2dDims d;
  d.planes = 6, d.H = d.W = 4, d.OH = d.OW = 2, d.KH = d.KW = 2, d.stride_h = d.stride_w = 2;
  EXPECT_THROW(cpu::onednn::max_pool2d_workspace_bytes(d, 4), InvalidArgument);
}

#else

TEST(OnednnPool, SkippedWithoutOnednn) { GTEST_SKIP() << "this build has no oneDNN"; }

#endif

}  // namespace
}  // namespace epoch
