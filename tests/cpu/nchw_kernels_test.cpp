// epoch's own NCHW kernels of the fast path (cpu/norm_nchw.h, cpu/pool_nchw.h) called directly,
// whatever oneDNN would choose on this CPU, against the reference kernels on awkward shapes:
// LRN within tolerance, max pooling bit for bit (ties, NaN, infinities, padding); results
// independent of the thread count; and the fast path's kernel trace on cifar10-tf's layers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "cpu/norm_cpu.h"
#include "cpu/norm_nchw.h"
#include "cpu/pool_cpu.h"
#include "cpu/pool_nchw.h"
#include "epoch/ops/backend.h"
#include "epoch/ops/norm.h"
#include "epoch/ops/pool.h"
#include "testing/parity.h"
#include "testing/testing.h"

namespace epoch {
namespace {

using testing::parity::matches;
using testing::parity::Tolerance;

constexpr Tolerance kLrnTol{1e-5f, 1e-4f};
constexpr Tolerance kExact{0.0f, 0.0f};

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.numel() == b.numel() &&
         std::memcmp(a.raw(), b.raw(), static_cast<std::size_t>(a.numel()) * sizeof(float)) == 0;
}

// ---- LRN ------------------------------------------------------------------------------------

struct Lrn {
  std::int64_t N, C, H, W, size;
  float alpha, beta, k;
};

std::string describe(const Lrn& l) {
  return ::testing::PrintToString(std::vector<std::int64_t>{l.N, l.C, l.H, l.W}) + " size " +
         std::to_string(l.size) + " alpha " + std::to_string(l.alpha) + " beta " +
         std::to_string(l.beta) + " k " + std::to_string(l.k);
}

// Both kernels on x: forward against the reference, backward from the reference's y.
void check_lrn(const Lrn& l, const Tensor& x, std::uint64_t seed) {
  SCOPED_TRACE(describe(l));
  const std::int64_t HW = l.H * l.W;
  const Shape s{l.N, l.C, l.H, l.W};
  Tensor y_ref = Tensor::empty(s), y = Tensor::full(s, 7.0f);
  cpu::lrn_forward(x.f32(), y_ref.f32(), l.N, l.C, HW, l.size, l.alpha, l.beta, l.k);
  cpu::nchw::lrn_forward(x.f32(), y.f32(), l.N, l.C, HW, l.size, l.alpha, l.beta, l.k);
  EXPECT_TRUE(matches(y, y_ref, kLrnTol)) << "y";

  const Tensor dy = testing::random_tensor(s, seed + 1);
  Tensor dx_ref = Tensor::empty(s), dx = Tensor::full(s, 7.0f);
  cpu::lrn_backward(dy.f32(), x.f32(), y_ref.f32(), dx_ref.f32(), l.N, l.C, HW, l.size, l.alpha,
                    l.beta, l.k);
  cpu::nchw::lrn_backward(dy.f32(), x.f32(), y_ref.f32(), dx.f32(), l.N, l.C, HW, l.size, l.alpha,
                          l.beta, l.k);
  EXPECT_TRUE(matches(dx, dx_ref, kLrnTol)) << "dx";
}

TEST(NchwLrn, MatchesReferenceOnAwkwardShapes) {
  std::uint64_t seed = 100;
  // C below and past 8 and 16 and not multiples of them, windows 1 to 9 (wider than C too),
  // H*W of one position, not a multiple of 8, and past one block of 256 positions.
  for (std::int64_t N : {1, 2})
    for (std::int64_t C : {1, 3, 7, 13, 20, 64})
      for (const auto& [H, W] :
           std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 1}, {3, 5}, {12, 12}, {17, 19}})
        for (std::int64_t size : {1, 3, 5, 9}) {
          const Lrn l{N, C, H, W, size, 1e-3f, 0.75f, 1.0f};
          check_lrn(l, testing::random_tensor({N, C, H, W}, seed, -2.0f, 2.0f), seed);
          seed += 2;
        }
}

TEST(NchwLrn, MatchesReferenceForOtherParameters) {
  std::uint64_t seed = 500;
  // beta 0.75 takes square roots, every other beta the vectorized power; even windows too.
  for (float beta : {0.75f, 0.5f, 1.0f, 0.6f, 2.0f, 0.01f})
    for (const auto& [alpha, k] : std::vector<std::pair<float, float>>{
             {1e-3f, 1.0f}, {0.5f, 2.0f}, {1.0f, 0.5f}, {2.0f, 1e-3f}})
      for (std::int64_t size : {2, 5, 9}) {
        const Lrn l{2, 11, 5, 7, size, alpha, beta, k};
        check_lrn(l, testing::random_tensor({2, 11, 5, 7}, seed, -3.0f, 3.0f), seed);
        seed += 2;
      }
}

TEST(NchwLrn, SpecialScalesMatchTheReference) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // k = 0 with zeros (s = 0: NaN), huge inputs (s overflows), tiny ones (s subnormal), a
  // negative k (s < 0), NaN and infinite inputs; each beta path.
  std::vector<float> v = {0, 0, 1e19f, 1e-21f, -2, nan, inf, 3, 0, 1e-30f, -inf, 0.5f};
  for (float beta : {0.75f, 0.6f, 1.0f})
    for (float k : {0.0f, -0.5f, 1.0f}) {
      const Lrn l{1, 4, 1, 3, 3, 1.0f, beta, k};
      check_lrn(l, Tensor::from_vector({1, 4, 1, 3}, v), 900);
    }
}

TEST(NchwLrn, ResultsDoNotDependOnTheThreadCount) {
  const Lrn l{5, 64, 12, 12, 9, 1e-3f, 0.75f, 1.0f};
  const std::int64_t HW = l.H * l.W;
  const Shape s{l.N, l.C, l.H, l.W};
  const Tensor x = testing::random_tensor(s, 31, -2.0f, 2.0f), dy = testing::random_tensor(s, 32);
  Tensor y[2] = {Tensor::empty(s), Tensor::empty(s)}, dx[2] = {Tensor::empty(s), Tensor::empty(s)};
  for (int t = 0; t < 2; ++t) {
    const ops::ContextGuard threads({ops::CpuKernels::fast, t + 1});
    cpu::nchw::lrn_forward(x.f32(), y[t].f32(), l.N, l.C, HW, l.size, l.alpha, l.beta, l.k);
    cpu::nchw::lrn_backward(dy.f32(), x.f32(), y[t].f32(), dx[t].f32(), l.N, l.C, HW, l.size,
                            l.alpha, l.beta, l.k);
  }
  EXPECT_TRUE(same_bits(y[0], y[1]));
  EXPECT_TRUE(same_bits(dx[0], dx[1]));
}

// ---- max pooling ----------------------------------------------------------------------------

kernels::Pool2dDims pool_dims(std::int64_t planes, std::int64_t H, std::int64_t W, std::int64_t KH,
                              std::int64_t KW, std::int64_t sh, std::int64_t sw, std::int64_t pt,
                              std::int64_t pb, std::int64_t pl, std::int64_t pr) {
  kernels::Pool2dDims d;
  d.planes = planes, d.H = H, d.W = W, d.KH = KH, d.KW = KW, d.stride_h = sh, d.stride_w = sw;
  d.pad_top = pt, d.pad_left = pl;
  d.OH = ops::pool_out_size(H, KH, sh, pt, pb);
  d.OW = ops::pool_out_size(W, KW, sw, pl, pr);
  return d;
}

// Whether pool_out_size accepts these sizes.
bool valid(std::int64_t in, std::int64_t k, std::int64_t pad_begin, std::int64_t pad_end) {
  return pad_begin < k && pad_end < k && in + pad_begin + pad_end >= k;
}

std::string describe(const kernels::Pool2dDims& d) {
  return ::testing::PrintToString(std::vector<std::int64_t>{
      d.planes, d.H, d.W, d.KH, d.KW, d.stride_h, d.stride_w, d.pad_top, d.pad_left, d.OH, d.OW});
}

// Forward and backward of both kernels on x: y, the argmax and dx bit for bit.
void check_max_pool(const kernels::Pool2dDims& d, const Tensor& x, std::uint64_t seed) {
  SCOPED_TRACE(describe(d));
  ASSERT_TRUE(cpu::nchw::max_pool2d_supported(d));
  const Shape ys{d.planes, d.OH, d.OW}, xs{d.planes, d.H, d.W};
  Tensor y_ref = Tensor::empty(ys), y = Tensor::full(ys, 7.0f);
  Tensor idx = Tensor::empty(ys, DType::i32);
  Tensor ws = Tensor::zeros({cpu::nchw::max_pool2d_workspace_bytes(d)}, DType::u8);
  cpu::max_pool2d_forward(d, x.f32(), y_ref.f32(), idx.data<std::int32_t>());
  cpu::nchw::max_pool2d_forward(d, x.f32(), y.f32(), ws.data<std::uint8_t>());
  EXPECT_TRUE(matches(y, y_ref, kExact)) << "y";
  // The workspace's window positions as the reference's h * W + w.
  const std::int32_t* ref = idx.data<std::int32_t>();
  const std::uint8_t* pos = ws.data<std::uint8_t>();
  std::int64_t wrong = 0;
  for (std::int64_t p = 0; p < d.planes; ++p)
    for (std::int64_t oh = 0; oh < d.OH; ++oh)
      for (std::int64_t ow = 0; ow < d.OW; ++ow) {
        const std::int64_t o = (p * d.OH + oh) * d.OW + ow;
        const std::int64_t h = oh * d.stride_h - d.pad_top + pos[o] / d.KW;
        const std::int64_t w = ow * d.stride_w - d.pad_left + pos[o] % d.KW;
        wrong += static_cast<std::int64_t>(h * d.W + w != ref[o]);
      }
  EXPECT_EQ(wrong, 0) << "argmax positions";

  const Tensor dy = testing::random_tensor(ys, seed);
  Tensor dx_ref = Tensor::empty(xs), dx = Tensor::full(xs, 7.0f);
  cpu::max_pool2d_backward(d, dy.f32(), idx.data<std::int32_t>(), dx_ref.f32());
  cpu::nchw::max_pool2d_backward(d, dy.f32(), ws.data<std::uint8_t>(), dx.f32());
  EXPECT_TRUE(same_bits(dx, dx_ref)) << "dx";
}

// Values from {-2, -1, 0, 1, 2}: many ties inside each window.
Tensor with_ties(const Shape& s, std::uint64_t seed) {
  std::vector<float> v = testing::random_tensor(s, seed, -2.5f, 2.5f).to_vector();
  for (float& f : v) f = std::round(f);
  return Tensor::from_vector(s, v);
}

TEST(NchwMaxPool, MatchesReferenceBitForBit) {
  struct Window {
    std::int64_t KH, KW, sh, sw;
  };
  const std::vector<Window> windows = {{1, 1, 1, 1}, {2, 2, 2, 2}, {3, 3, 2, 2}, {3, 3, 1, 1},
                                       {3, 3, 3, 3}, {5, 5, 2, 2}, {2, 3, 1, 2}, {3, 1, 2, 1},
                                       {1, 3, 1, 3}, {5, 3, 3, 2}, {4, 4, 3, 1}, {2, 2, 1, 1}};
  const std::vector<std::pair<std::int64_t, std::int64_t>> sizes = {{1, 1},   {2, 3},  {5, 7},
                                                                    {12, 12}, {13, 9}, {24, 24}};
  std::uint64_t seed = 1000;
  for (const Window& w : windows)
    for (const auto& [H, W] : sizes)
      for (std::int64_t pad : {0, 1, 2, 4})  // begin pads; end pads take their turns
        for (std::int64_t planes : {1, 3}) {
          const std::int64_t pt = std::min(pad, w.KH - 1), pl = std::min(pad / 2, w.KW - 1);
          const std::int64_t pb = std::min((pad + 1) % 3, w.KH - 1), pr = std::min(pad, w.KW - 1);
          if (!valid(H, w.KH, pt, pb) || !valid(W, w.KW, pl, pr)) continue;
          const kernels::Pool2dDims d =
              pool_dims(planes, H, W, w.KH, w.KW, w.sh, w.sw, pt, pb, pl, pr);
          check_max_pool(d, with_ties({planes, H, W}, seed), seed);
          check_max_pool(d, testing::random_tensor({planes, H, W}, seed + 1), seed + 1);
          seed += 2;
        }
}

TEST(NchwMaxPool, NanAndInfinitiesAsTheReference) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  // Windows that are all -inf (the first real input wins), hold NaN after a maximum, several
  // NaN, +inf ties.
  std::vector<float> v(5 * 6);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = -inf;
  v[7] = 1, v[8] = nan, v[9] = 3, v[14] = nan, v[15] = inf, v[16] = inf, v[21] = nan, v[29] = 2;
  const Tensor x = Tensor::from_vector({1, 5, 6}, v);
  for (const kernels::Pool2dDims& d :
       {pool_dims(1, 5, 6, 3, 3, 2, 2, 1, 1, 1, 1), pool_dims(1, 5, 6, 3, 3, 1, 1, 2, 2, 2, 2),
        pool_dims(1, 5, 6, 2, 2, 2, 2, 0, 1, 0, 0), pool_dims(1, 5, 6, 2, 3, 2, 3, 0, 1, 0, 0),
        pool_dims(1, 5, 6, 5, 5, 3, 3, 4, 4, 4, 4)})
    check_max_pool(d, x, 77);
}

TEST(NchwMaxPool, WindowsUpTo256PositionsAreSupported) {
  EXPECT_TRUE(cpu::nchw::max_pool2d_supported(pool_dims(1, 16, 16, 16, 16, 1, 1, 0, 0, 0, 0)));
  EXPECT_FALSE(cpu::nchw::max_pool2d_supported(pool_dims(1, 17, 17, 17, 16, 1, 1, 0, 0, 0, 0)));
  const kernels::Pool2dDims d = pool_dims(2, 20, 18, 16, 16, 3, 1, 2, 0, 0, 1);
  check_max_pool(d, with_ties({2, 20, 18}, 5), 5);
}

TEST(NchwMaxPool, ResultsDoNotDependOnTheThreadCount) {
  const kernels::Pool2dDims d = pool_dims(4 * 64, 24, 24, 3, 3, 2, 2, 0, 1, 0, 1);
  const Tensor x = testing::random_tensor({d.planes, d.H, d.W}, 41);
  const Tensor dy = testing::random_tensor({d.planes, d.OH, d.OW}, 42);
  const Shape ys{d.planes, d.OH, d.OW}, xs{d.planes, d.H, d.W};
  Tensor y[2] = {Tensor::empty(ys), Tensor::empty(ys)},
         dx[2] = {Tensor::empty(xs), Tensor::empty(xs)};
  Tensor ws[2] = {Tensor::empty({d.planes * d.OH * d.OW}, DType::u8),
                  Tensor::empty({d.planes * d.OH * d.OW}, DType::u8)};
  for (int t = 0; t < 2; ++t) {
    const ops::ContextGuard threads({ops::CpuKernels::fast, t + 1});
    cpu::nchw::max_pool2d_forward(d, x.f32(), y[t].f32(), ws[t].data<std::uint8_t>());
    cpu::nchw::max_pool2d_backward(d, dy.f32(), ws[t].data<std::uint8_t>(), dx[t].f32());
  }
  EXPECT_TRUE(same_bits(y[0], y[1]));
  EXPECT_EQ(std::memcmp(ws[0].raw(), ws[1].raw(), static_cast<std::size_t>(ws[0].numel())), 0);
  EXPECT_TRUE(same_bits(dx[0], dx[1]));
}

// ---- the fast path's choice -------------------------------------------------------------------

// cifar10-tf's LRN and pooling layers (batch 4) through the ops: never a reference
// implementation, whichever ISA oneDNN uses here (the suite also runs with oneDNN limited to
// AVX2, where epoch's kernels take over: CTest's cpu_tests_avx2).
TEST(NchwFastPath, Cifar10TfLayersRunNoReferenceCode) {
  const ops::ContextGuard fast({ops::CpuKernels::fast, 0});
  ops::Pool2dParams p;
  p.kernel_h = p.kernel_w = 3, p.stride_h = p.stride_w = 2, p.pad_bottom = p.pad_right = 1;
  const ops::LrnParams lrn{9, 1e-3f, 0.75f, 1.0f};
  ops::KernelTrace trace;
  for (std::int64_t hw : {24, 12}) {
    const Tensor x = testing::random_tensor({4, 64, hw, hw}, 61);
    const ops::MaxPoolResult r = ops::max_pool2d_forward(x, p);
    (void)ops::max_pool2d_backward(testing::random_tensor(r.y.shape(), 62), x, r, p);
    const Tensor y = ops::lrn_forward(r.y, lrn);
    (void)ops::lrn_backward(testing::random_tensor(y.shape(), 63), r.y, y, lrn);
  }
  ASSERT_EQ(trace.records().size(), 8u);
  for (const ops::KernelRecord& rec : trace.records()) {
    EXPECT_FALSE(ops::is_reference_impl(rec.impl)) << rec.op << ": " << rec.impl;
    EXPECT_FALSE(rec.impl.empty()) << rec.op;
  }
}

}  // namespace
}  // namespace epoch
