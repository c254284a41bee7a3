// epoch's own CPU kernels compiled once per instruction-set level (kernels/isa_kernel.h): every
// level this CPU can run gives what the baseline (x86-64, SSE2) version gives, on awkward
// sizes (tails of every vector width): bit for bit where no floating-point rounding can differ
// (ReLU, copies, max pooling, dropout's masks), within a few ulps elsewhere (FMA contraction
// and vector-width sums differ from level to level by design). The process's level follows
// EPOCH_CPU_ISA (CTest's cpu_tests_baseline_isa sets it).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "cpu/activation_cpu.h"
#include "cpu/conv2d_cpu.h"
#include "cpu/dropout_cpu.h"
#include "cpu/elementwise_cpu.h"
#include "cpu/linear_cpu.h"
#include "cpu/loss_cpu.h"
#include "cpu/norm_cpu.h"
#include "cpu/norm_nchw.h"
#include "cpu/optim_cpu.h"
#include "cpu/pool_cpu.h"
#include "cpu/pool_nchw.h"
#include "cpu/shape_ops_cpu.h"
#include "epoch/tensor/cpu_isa.h"
#include "epoch/tensor/random.h"

namespace epoch {
namespace {

/// The levels above the baseline that this CPU runs (empty on a CPU without AVX2).
std::vector<CpuIsa> higher_levels() {
  std::vector<CpuIsa> out;
  for (int l = 1; l <= static_cast<int>(detected_cpu_isa()); ++l)
    out.push_back(static_cast<CpuIsa>(l));
  return out;
}

std::vector<float> randoms(std::int64_t n, std::uint64_t key, float lo = -2.0f, float hi = 2.0f) {
  RandomStream r(1234, key);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (float& x : v) x = lo + (hi - lo) * r.uniform();
  return v;
}

/// Equal within `ulps` units in the last place of the larger magnitude, or of the operands'
/// (about 4 here: a result that cancels is rounded where its operands were, by FMA or not).
::testing::AssertionResult close(const std::vector<float>& want, const std::vector<float>& got,
                                 float ulps, const std::string& what) {
  if (want.size() != got.size()) return ::testing::AssertionFailure() << what << ": sizes";
  for (std::size_t i = 0; i < want.size(); ++i) {
    const float scale = std::max({std::fabs(want[i]), std::fabs(got[i]), 4.0f});
    const float tol = ulps * scale * 1.2e-7f;
    if (!(std::fabs(want[i] - got[i]) <= tol) &&
        !(std::isnan(want[i]) && std::isnan(got[i])))
      return ::testing::AssertionFailure()
             << what << " [" << i << "]: baseline " << want[i] << ", this level " << got[i];
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult same_bits(const std::vector<float>& want, const std::vector<float>& got,
                                     const std::string& what) {
  if (want.size() != got.size() ||
      std::memcmp(want.data(), got.data(), want.size() * sizeof(float)) != 0)
    return ::testing::AssertionFailure() << what << ": other bits than the baseline's";
  return ::testing::AssertionSuccess();
}

const char* name(CpuIsa l) { return cpu_isa_name(l); }

TEST(IsaLevels, TheProcessRunsAtTheDetectedLevelOrEpochCpuIsas) {
  const char* env = std::getenv("EPOCH_CPU_ISA");
  if (env != nullptr && *env != '\0')
    EXPECT_STREQ(cpu_isa_name(active_cpu_isa()), env);
  else
    EXPECT_EQ(active_cpu_isa(), detected_cpu_isa());
  EXPECT_EQ(active_cpu_isa_index(), static_cast<int>(active_cpu_isa()));
  EXPECT_FALSE(cpu_model_name().empty());
}

TEST(IsaLevels, ElementwiseAndActivations) {
  if (higher_levels().empty()) GTEST_SKIP() << "this CPU runs the baseline level alone";
  for (const std::int64_t n : {1, 7, 15, 17, 33, 100003}) {
    const std::vector<float> a = randoms(n, 1), b = randoms(n, 2, 0.5f, 3.0f);
    const auto run = [&](CpuIsa l, auto& kernel, auto&&... args) {
      std::vector<float> y(static_cast<std::size_t>(n));
      kernel.version(l)(args..., y.data(), n);
      return y;
    };
    for (const CpuIsa l : higher_levels()) {
      const std::string at = std::string(name(l)) + " n=" + std::to_string(n);
      EXPECT_TRUE(same_bits(run(CpuIsa::x86_64, cpu::relu_forward, a.data()),
                            run(l, cpu::relu_forward, a.data()), "relu " + at));
      EXPECT_TRUE(close(run(CpuIsa::x86_64, cpu::sigmoid_forward, a.data()),
                        run(l, cpu::sigmoid_forward, a.data()), 4, "sigmoid " + at));
      EXPECT_TRUE(close(run(CpuIsa::x86_64, cpu::tanh_forward, a.data()),
                        run(l, cpu::tanh_forward, a.data()), 4, "tanh " + at));
      for (const kernels::BinaryOp op : {kernels::BinaryOp::add, kernels::BinaryOp::mul,
                                         kernels::BinaryOp::div}) {
        std::vector<float> y0(a.size()), y1(a.size());
        cpu::binary_same_shape.version(CpuIsa::x86_64)(op, a.data(), b.data(), y0.data(), n);
        cpu::binary_same_shape.version(l)(op, a.data(), b.data(), y1.data(), n);
        EXPECT_TRUE(same_bits(y0, y1, "binary " + at));
      }
      std::vector<float> y0 = b, y1 = b;
      cpu::axpy.version(CpuIsa::x86_64)(y0.data(), a.data(), n, 0.37f);
      cpu::axpy.version(l)(y1.data(), a.data(), n, 0.37f);
      EXPECT_TRUE(close(y0, y1, 2, "axpy " + at));
      EXPECT_NEAR(cpu::sum.version(CpuIsa::x86_64)(a.data(), n), cpu::sum.version(l)(a.data(), n),
                  1e-9 * static_cast<double>(n))
          << "sum " << at;
      EXPECT_NEAR(cpu::squared_norm.version(CpuIsa::x86_64)(a.data(), n),
                  cpu::squared_norm.version(l)(a.data(), n), 1e-9 * static_cast<double>(n))
          << "squared norm " << at;
    }
  }
}

TEST(IsaLevels, Optimizers) {
  if (higher_levels().empty()) GTEST_SKIP() << "this CPU runs the baseline level alone";
  const std::int64_t n = 4099;
  const std::vector<float> g = randoms(n, 3), p0 = randoms(n, 4), m0 = randoms(n, 5, -0.1f, 0.1f),
                           v0 = randoms(n, 6, 0.0f, 0.01f);
  for (const CpuIsa l : higher_levels()) {
    std::vector<std::vector<float>> out;
    for (const CpuIsa level : {CpuIsa::x86_64, l}) {
      std::vector<float> p = p0, m = m0, v = v0, buf = m0;
      cpu::adam_step.version(level)(p.data(), g.data(), m.data(), v.data(), n, 1e-3f, 0.9f,
                                    0.999f, 1e-7f, 0.01f, true, 1e-2f, 0.03f);
      cpu::sgd_step.version(level)(p.data(), g.data(), buf.data(), n, 0.1f, 0.9f, 1e-4f, true);
      out.push_back(p);
    }
    EXPECT_TRUE(close(out[0], out[1], 8, std::string("adam + sgd at ") + name(l)));
  }
}

TEST(IsaLevels, LossesNormsAndLinear) {
  if (higher_levels().empty()) GTEST_SKIP() << "this CPU runs the baseline level alone";
  const std::int64_t N = 5, C = 11, HW = 23, K = 13;
  const std::vector<float> x = randoms(N * C * HW, 7), gamma = randoms(C, 8, 0.5f, 1.5f),
                           beta = randoms(C, 9), logits = randoms(N * K, 10);
  std::vector<std::int32_t> labels(N);
  for (std::int64_t i = 0; i < N; ++i) labels[static_cast<std::size_t>(i)] = (3 * i) % K;
  for (const CpuIsa l : higher_levels()) {
    std::vector<std::vector<float>> bn, lrn, probs, lin;
    std::vector<double> ce;
    for (const CpuIsa level : {CpuIsa::x86_64, l}) {
      std::vector<float> y(x.size()), rm(C, 0.0f), rv(C, 1.0f), sm(C), si(C);
      cpu::batch_norm_forward.version(level)(x.data(), gamma.data(), beta.data(), rm.data(),
                                             rv.data(), y.data(), sm.data(), si.data(), N, C, HW,
                                             true, 0.1f, 1e-5f, false);
      bn.push_back(y);
      std::vector<float> z(x.size());
      cpu::nchw::lrn_forward.version(level)(x.data(), z.data(), N, C, HW, 5, 1e-4f, 0.75f, 2.0f);
      lrn.push_back(z);
      std::vector<float> p(logits.size());
      ce.push_back(cpu::softmax_cross_entropy_forward.version(level)(logits.data(), labels.data(),
                                                                     p.data(), N, K));
      probs.push_back(p);
      std::vector<float> out(N * K);
      cpu::linear_forward.version(level)(x.data(), x.data() + 3, gamma.data(), out.data(), N, C,
                                         K > C ? C : K);
      lin.push_back(out);
    }
    const std::string at = name(l);
    EXPECT_TRUE(close(bn[0], bn[1], 16, "batch norm at " + at));
    EXPECT_TRUE(close(lrn[0], lrn[1], 16, "LRN at " + at));
    EXPECT_TRUE(close(probs[0], probs[1], 8, "softmax at " + at));
    EXPECT_NEAR(ce[0], ce[1], 1e-6 * std::fabs(ce[0])) << at;
    EXPECT_TRUE(close(lin[0], lin[1], 64, "linear at " + at));
  }
}

TEST(IsaLevels, ConvolutionPoolingDropoutAndUpsampling) {
  if (higher_levels().empty()) GTEST_SKIP() << "this CPU runs the baseline level alone";
  kernels::Conv2dDims d;
  d.N = 2;
  d.C = 3;
  d.H = 9;
  d.W = 11;
  d.OC = 5;
  d.KH = d.KW = 3;
  d.pad_h = d.pad_w = 1;
  d.OH = 9;
  d.OW = 11;
  const std::vector<float> x = randoms(d.N * d.C * d.H * d.W, 11),
                           w = randoms(d.OC * d.C * 9, 12), b = randoms(d.OC, 13);
  kernels::Pool2dDims p;
  p.planes = d.N * d.C;
  p.H = d.H;
  p.W = d.W;
  p.KH = p.KW = 2;
  p.stride_h = p.stride_w = 2;
  p.OH = 4;
  p.OW = 5;
  for (const CpuIsa l : higher_levels()) {
    std::vector<std::vector<float>> conv, pool, drop, up;
    for (const CpuIsa level : {CpuIsa::x86_64, l}) {
      std::vector<float> y(d.N * d.OC * d.OH * d.OW);
      cpu::conv2d_forward.version(level)(d, x.data(), w.data(), b.data(), y.data());
      conv.push_back(y);
      std::vector<float> py(p.planes * p.OH * p.OW);
      std::vector<std::int32_t> idx(py.size());
      cpu::max_pool2d_forward.version(level)(p, x.data(), py.data(), idx.data());
      pool.push_back(py);
      std::vector<float> dy(x.size()), mask(x.size());
      cpu::dropout_forward.version(level)(x.data(), dy.data(), mask.data(),
                                          static_cast<std::int64_t>(x.size()), 0.3f, 77, 5);
      drop.push_back(mask);
      std::vector<float> u(x.size() * 4);
      cpu::upsample_nearest2x_forward.version(level)(x.data(), u.data(), d.N, d.C, d.H, d.W);
      up.push_back(u);
    }
    const std::string at = name(l);
    EXPECT_TRUE(close(conv[0], conv[1], 64, "convolution at " + at));
    EXPECT_TRUE(same_bits(pool[0], pool[1], "max pooling at " + at));
    EXPECT_TRUE(same_bits(drop[0], drop[1], "dropout's mask at " + at));
    EXPECT_TRUE(same_bits(up[0], up[1], "upsampling at " + at));
  }
}

}  // namespace
}  // namespace epoch
