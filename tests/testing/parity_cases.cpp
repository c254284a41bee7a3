// The table of the backend-parity harness (parity.h): every op with a reference kernel and a
// fast or CUDA kernel, on the shapes the backends must agree on, with per-op tolerances.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "epoch/ops/activation.h"
#include "epoch/ops/conv2d.h"
#include "epoch/ops/dropout.h"
#include "epoch/ops/elementwise.h"
#include "epoch/ops/linear.h"
#include "epoch/ops/loss.h"
#include "epoch/ops/norm.h"
#include "epoch/ops/pool.h"
#include "epoch/ops/shape_ops.h"
#include "testing/parity.h"
#include "testing/testing.h"

namespace epoch::testing::parity {
namespace {

using In = std::vector<Tensor>;

// Tolerances are the looser of what the oneDNN and the CUDA parity tests allowed for an op.
constexpr Tolerance kConvFwd{1e-4f, 1e-3f}, kConvGrad{2e-4f, 1e-3f};
constexpr Tolerance kConvDx{1e-4f, 1e-3f}, kConvDb{2e-4f, 1e-4f};
constexpr Tolerance kGemm{1e-4f, 1e-4f};
constexpr Tolerance kBnY{1e-4f, 1e-4f}, kBnStats{1e-5f, 1e-4f}, kBnDx{1e-4f, 1e-3f};
constexpr Tolerance kLrn{1e-5f, 1e-4f};
constexpr Tolerance kPool{1e-6f, 1e-5f};
constexpr Tolerance kPointwise{1e-6f, 1e-5f};
constexpr Tolerance kDefault{1e-5f, 1e-4f};  // testing::allclose's defaults

// The parts written one after the other: a test-name fragment.
template <typename... Parts>
std::string str(const Parts&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}

std::string dims(const Shape& s) {
  if (s.empty()) return "scalar";
  std::ostringstream os;
  for (std::size_t i = 0; i < s.size(); ++i) os << (i > 0 ? "x" : "") << s[i];
  return os.str();
}

// "0.5" -> "0p5", so that a parameter reads the same in a test name.
std::string num(float v) {
  std::ostringstream os;
  os << v;
  std::string s = os.str();
  std::replace(s.begin(), s.end(), '.', 'p');
  std::replace(s.begin(), s.end(), '-', 'm');
  return s;
}

// x (a CPU tensor) with every value moved at least `gap` away from each kink, so that two
// backends cannot fall on different sides of one.
Tensor away_from(Tensor x, std::initializer_list<float> kinks, float gap = 0.01f) {
  float* p = x.f32();
  for (std::int64_t i = 0; i < x.numel(); ++i)
    for (float k : kinks)
      if (std::fabs(p[i] - k) < gap) p[i] = p[i] < k ? k - gap : k + gap;
  return x;
}

Tensor labels_for(std::int64_t N, std::int64_t K) {
  std::vector<std::int32_t> v(static_cast<std::size_t>(N));
  for (std::int64_t i = 0; i < N; ++i)
    v[static_cast<std::size_t>(i)] = static_cast<std::int32_t>((i * 7 + 3) % K);
  return Tensor::from_ints({N}, v);
}

// ---- convolution ----------------------------------------------------------------------------

ops::Conv2dParams conv(std::int64_t sh, std::int64_t sw, std::int64_t ph, std::int64_t pw,
                       std::int64_t dil = 1, std::int64_t groups = 1) {
  ops::Conv2dParams p;
  p.stride_h = sh, p.stride_w = sw, p.pad_h = ph, p.pad_w = pw;
  p.dilation_h = p.dilation_w = dil, p.groups = groups;
  return p;
}

void add_conv2d(std::vector<OpCase>& out) {
  for (const ConvShape& s : conv2d_shapes()) {
    const ops::Conv2dParams& p = s.p;
    OpCase c;
    c.op = "conv2d";
    c.name = str("n", s.N, "c", s.C, "h", s.H, "w", s.W, "_oc", s.OC, "k", s.KH, "x", s.KW, "_s",
                 p.stride_h, "x", p.stride_w, "p", p.pad_h, "x", p.pad_w, "d", p.dilation_h, "g",
                 p.groups, s.bias ? "_bias" : "");
    c.inputs = [s](std::uint64_t seed) {
      return In{random_tensor({s.N, s.C, s.H, s.W}, seed),
                random_tensor({s.OC, s.C / s.p.groups, s.KH, s.KW}, seed + 1),
                s.bias ? random_tensor({s.OC}, seed + 2) : Tensor()};
    };
    c.forward = [p](In& in) { return Outputs{{"y", ops::conv2d_forward(in[0], in[1], in[2], p)}}; };
    c.backward = [p, bias = s.bias](const In& in, const Outputs&, const Tensor& dy) {
      const ops::Conv2dGrads g = ops::conv2d_backward(dy, in[0], in[1], bias, p);
      const ops::Conv2dGrads f = ops::conv2d_backward(dy, in[0], in[1], bias, p, false);
      return Outputs{{"dx", g.dx},
                     {"dw", g.dw},
                     {"db", g.db},
                     {"first_layer_dx", f.dx},
                     {"first_layer_dw", f.dw},
                     {"first_layer_db", f.db}};
    };
    c.forward_tol = kConvFwd;
    c.backward_tol = kConvGrad;
    c.output_tol = {{"dx", kConvDx}, {"db", kConvDb}, {"first_layer_db", kConvDb}};
    // oneDNN's convolutions stay within rtol 1e-4 of the reference; cuDNN's need 1e-3. Winograd
    // (epoch's own below AVX-512, on the cases with 32 input channels) rounds differently: up to
    // 1.2e-4 from the reference on y and dx here, values up to about 20.
    c.backend_tol = {{"onednn", {4e-4f, 1e-4f}},
                     {"onednn/dw", {2e-4f, 1e-4f}},
                     {"onednn/db", {2e-4f, 1e-4f}},
                     {"onednn/first_layer_dw", {2e-4f, 1e-4f}},
                     {"onednn/first_layer_db", {2e-4f, 1e-4f}}};
    out.push_back(c);
  }
}

// ---- matrix products ------------------------------------------------------------------------

void add_matmul_linear(std::vector<OpCase>& out) {
  for (const MatmulShape& s : matmul_shapes()) {
    OpCase c;
    c.op = "matmul";
    c.name = str("m", s.M, "n", s.N, "k", s.K, s.trans_a ? "_ta" : "", s.trans_b ? "_tb" : "");
    c.inputs = [s](std::uint64_t seed) {
      return In{random_tensor(s.trans_a ? Shape{s.K, s.M} : Shape{s.M, s.K}, seed),
                random_tensor(s.trans_b ? Shape{s.N, s.K} : Shape{s.K, s.N}, seed + 1)};
    };
    c.forward = [s](In& in) {
      return Outputs{{"c", ops::matmul(in[0], in[1], s.trans_a, s.trans_b)}};
    };
    c.forward_tol = kGemm;
    out.push_back(c);
  }

  // (N, IN, OUT), with and without a bias: the oneDNN grid (odd sizes, batch 1 and 3, one
  // output, one input), the fast-path op test, the CUDA test.
  struct LinearShape {
    std::int64_t N, IN, OUT;
  };
  for (const LinearShape& s : std::vector<LinearShape>{{1, 5, 3},
                                                       {3, 17, 10},
                                                       {64, 3136, 128},
                                                       {3, 128, 1},
                                                       {7, 1, 9},
                                                       {5, 33, 7},
                                                       {19, 33, 12},
                                                       {150, 40, 70},
                                                       {40, 120, 150}})
    for (bool bias : {true, false}) {
      OpCase c;
      c.op = "linear";
      c.name = str("n", s.N, "in", s.IN, "out", s.OUT, bias ? "_bias" : "");
      c.inputs = [s, bias](std::uint64_t seed) {
        return In{random_tensor({s.N, s.IN}, seed), random_tensor({s.OUT, s.IN}, seed + 1),
                  bias ? random_tensor({s.OUT}, seed + 2) : Tensor()};
      };
      c.forward = [](In& in) { return Outputs{{"y", ops::linear_forward(in[0], in[1], in[2])}}; };
      c.backward = [bias](const In& in, const Outputs&, const Tensor& dy) {
        const ops::LinearGrads g = ops::linear_backward(dy, in[0], in[1], bias);
        const ops::LinearGrads f = ops::linear_backward(dy, in[0], in[1], bias, false);
        return Outputs{{"dx", g.dx},
                       {"dw", g.dw},
                       {"db", g.db},
                       {"first_layer_dx", f.dx},
                       {"first_layer_dw", f.dw},
                       {"first_layer_db", f.db}};
      };
      c.forward_tol = c.backward_tol = kGemm;
      out.push_back(c);
    }

  for (const Shape& xs : std::vector<Shape>{{4, 6, 5, 3}, {7, 5}}) {  // (N, C): inner size 1
    OpCase c;
    c.op = "bias_add";
    c.name = dims(xs);
    c.inputs = [xs](std::uint64_t seed) {
      return In{random_tensor(xs, seed), random_tensor({xs[1]}, seed + 1)};
    };
    c.forward = [](In& in) { return Outputs{{"y", ops::bias_add_forward(in[0], in[1])}}; };
    c.backward = [](const In&, const Outputs&, const Tensor& dy) {
      return Outputs{{"db", ops::bias_add_backward(dy)}};
    };
    c.forward_tol = c.backward_tol = kDefault;
    out.push_back(c);
  }
}

// ---- normalization --------------------------------------------------------------------------

void add_norm(std::vector<OpCase>& out) {
  // (N, C) and (N, C, H, W): 1 to 9000 values per channel (three reduction chunks of the CUDA
  // kernel), C below, at and past 16.
  const std::vector<Shape> bn_shapes = {{3, 5},        {1, 4, 3, 3},   {3, 17, 13, 1},
                                        {8, 32, 7, 7}, {3, 4, 5, 6},   {16, 10},
                                        {4, 3, 5, 7},  {10, 2, 30, 30}};
  for (bool training : {true, false})
    for (const Shape& xs : bn_shapes) {
      OpCase c;
      c.op = training ? "batch_norm_train" : "batch_norm_eval";
      c.name = dims(xs);
      c.inputs = [xs, training](std::uint64_t seed) {
        const std::int64_t C = xs[1];
        // Training: a mean offset from 0 by more than the spread, so that the two-pass variance
        // matters.
        const float lo = training ? 1.0f : -1.0f, hi = training ? 4.0f : 3.0f;
        return In{random_tensor(xs, seed, lo, hi), random_tensor({C}, seed + 1, 0.5f, 1.5f),
                  random_tensor({C}, seed + 2), random_tensor({C}, seed + 3),
                  random_tensor({C}, seed + 4, 0.5f, 2.0f)};
      };
      c.forward = [training](In& in) {
        const ops::BatchNormResult r =
            ops::batch_norm_forward(in[0], in[1], in[2], in[3], in[4], training, 0.1f, 1e-5f);
        return Outputs{{"y", r.y},
                       {"save_mean", r.save_mean},
                       {"save_invstd", r.save_invstd},
                       {"running_mean", in[3]},
                       {"running_var", in[4]}};
      };
      c.backward = [training](const In& in, const Outputs& fwd, const Tensor& dy) {
        const ops::BatchNormResult r{get(fwd, "y"), get(fwd, "save_mean"), get(fwd, "save_invstd")};
        const ops::BatchNormGrads g = ops::batch_norm_backward(dy, in[0], in[1], r, training);
        return Outputs{{"dx", g.dx}, {"dgamma", g.dgamma}, {"dbeta", g.dbeta}};
      };
      c.forward_tol = kBnY;
      c.backward_tol = kBnY;
      const Tolerance stats = training ? kBnStats : kExact;  // eval copies the running ones
      c.output_tol = {{"save_mean", stats},
                      {"save_invstd", kBnStats},
                      {"running_mean", stats},
                      {"running_var", stats},
                      {"dx", kBnDx}};
      out.push_back(c);
    }

  // (N, C, H, W, size, alpha, beta, k): windows odd, even, 1 and wider than C; C below, at and
  // past 16 and multiples of it (oneDNN's channels-last backward is wrong for some: the op
  // runs epoch's NCHW kernel there, as wherever oneDNN has only reference code); cifar10-tf's
  // layer; betas other than 0.75 (the NCHW kernel's vectorized power).
  struct LrnCase {
    Shape x;
    ops::LrnParams p;
    float lo, hi;
  };
  const std::vector<LrnCase> lrn_cases = {{{1, 7, 3, 3}, {5, 0.5f, 0.75f, 2.0f}, -2, 2},
                                          {{3, 4, 1, 5}, {3, 0.5f, 0.75f, 2.0f}, -2, 2},
                                          {{2, 16, 5, 5}, {5, 0.5f, 0.75f, 2.0f}, -2, 2},
                                          {{2, 3, 2, 2}, {1, 0.5f, 0.75f, 2.0f}, -2, 2},
                                          {{2, 20, 3, 3}, {9, 0.5f, 0.75f, 2.0f}, -2, 2},
                                          {{2, 32, 3, 3}, {9, 0.5f, 0.75f, 2.0f}, -2, 2},
                                          {{1, 17, 2, 2}, {7, 0.5f, 0.75f, 2.0f}, -2, 2},
                                          {{2, 33, 2, 2}, {5, 0.5f, 0.75f, 2.0f}, -2, 2},
                                          {{2, 64, 4, 4}, {9, 0.5f, 0.75f, 2.0f}, -2, 2},
                                          {{3, 4, 5, 6}, {5, 0.5f, 0.75f, 2.0f}, -2, 2},
                                          {{3, 7, 5, 6}, {1, 0.5f, 0.75f, 2.0f}, -2, 2},
                                          {{3, 7, 5, 6}, {4, 0.5f, 0.75f, 2.0f}, -2, 2},
                                          {{3, 7, 5, 6}, {5, 0.5f, 0.75f, 2.0f}, -2, 2},
                                          {{3, 7, 5, 6}, {9, 0.5f, 0.75f, 2.0f}, -2, 2},
                                          {{2, 3, 4, 4}, {7, 1.0f, 0.75f, 1.0f}, -1.5f, 1.5f},
                                          {{4, 64, 12, 12}, {9, 1e-3f, 0.75f, 1.0f}, -2, 2},
                                          {{2, 24, 5, 3}, {7, 0.5f, 0.75f, 2.0f}, -2, 2},
                                          {{2, 13, 3, 5}, {3, 0.5f, 0.5f, 1.0f}, -2, 2},
                                          {{1, 10, 7, 7}, {9, 1.0f, 1.0f, 2.0f}, -2, 2},
                                          {{3, 9, 2, 9}, {5, 2.0f, 0.6f, 0.5f}, -2, 2}};
  for (const LrnCase& l : lrn_cases) {
    OpCase c;
    c.op = "lrn";
    c.name = str(dims(l.x), "_size", l.p.size, "_a", num(l.p.alpha), "b", num(l.p.beta), "k",
                 num(l.p.k));
    c.inputs = [l](std::uint64_t seed) { return In{random_tensor(l.x, seed, l.lo, l.hi)}; };
    c.forward = [p = l.p](In& in) { return Outputs{{"y", ops::lrn_forward(in[0], p)}}; };
    c.backward = [p = l.p](const In& in, const Outputs& fwd, const Tensor& dy) {
      return Outputs{{"dx", ops::lrn_backward(dy, in[0], get(fwd, "y"), p)}};
    };
    c.forward_tol = c.backward_tol = kLrn;
    out.push_back(c);
  }
}

// ---- pooling --------------------------------------------------------------------------------

ops::Pool2dParams pool(std::int64_t kh, std::int64_t kw, std::int64_t sh, std::int64_t sw,
                       std::int64_t pt, std::int64_t pb, std::int64_t pl, std::int64_t pr) {
  ops::Pool2dParams p;
  p.kernel_h = kh, p.kernel_w = kw, p.stride_h = sh, p.stride_w = sw;
  p.pad_top = pt, p.pad_bottom = pb, p.pad_left = pl, p.pad_right = pr;
  return p;
}

std::string pool_name(const Shape& x, const ops::Pool2dParams& p) {
  return str(dims(x), "_k", p.kernel_h, "x", p.kernel_w, "s", p.stride_h, "x", p.stride_w, "_pad",
             p.pad_top, p.pad_bottom, p.pad_left, p.pad_right);
}

OpCase max_pool_case(const std::string& name, const ops::Pool2dParams& p,
                     std::function<std::vector<Tensor>(std::uint64_t)> inputs) {
  OpCase c;
  c.op = "max_pool2d";
  c.name = name;
  c.inputs = std::move(inputs);
  c.forward = [p](In& in) {
    const ops::MaxPoolResult r = ops::max_pool2d_forward(in[0], p);
    Outputs o{{"y", r.y}, {"workspace", r.indices}};
    if (r.indices.dtype() == DType::i32) o.push_back({"argmax", r.indices});  // h*W+w
    return o;
  };
  c.backward = [p](const In& in, const Outputs& fwd, const Tensor& dy) {
    const ops::MaxPoolResult r{get(fwd, "y"), get(fwd, "workspace")};
    return Outputs{{"dx", ops::max_pool2d_backward(dy, in[0], r, p)}};
  };
  c.forward_tol = kExact;  // a maximum is one of the inputs
  c.backward_tol = kPool;
  c.saved = {"workspace"};
  c.optional = {"argmax"};
  return c;
}

void add_pool(std::vector<OpCase>& out) {
  struct PoolCase {
    Shape x;
    ops::Pool2dParams p;
  };
  std::vector<PoolCase> grid = {
      // windows, strides, asymmetric paddings and odd sizes; 2x2/2 tiles (epoch's NCHW kernel
      // on the fast path), C of 16 and 32
      {{3, 4, 8, 8}, pool(2, 2, 2, 2, 0, 0, 0, 0)},
      {{1, 3, 9, 7}, pool(2, 2, 2, 2, 0, 0, 0, 0)},
      {{2, 5, 9, 11}, pool(3, 3, 2, 2, 1, 1, 1, 1)},
      {{3, 2, 7, 9}, pool(2, 2, 2, 2, 0, 1, 0, 1)},
      {{2, 3, 6, 7}, pool(3, 3, 1, 1, 1, 1, 1, 1)},
      {{1, 17, 10, 6}, pool(3, 2, 2, 1, 0, 2, 1, 0)},
      {{2, 32, 28, 28}, pool(2, 2, 2, 2, 0, 0, 0, 0)},
      {{3, 16, 13, 13}, pool(3, 3, 2, 2, 0, 0, 0, 0)},
      {{2, 3, 9, 10}, pool(3, 3, 3, 3, 0, 0, 0, 0)},
      {{1, 4, 8, 9}, pool(2, 3, 2, 3, 0, 0, 0, 0)},
      // the fast-path op test: 2x2/2, 3x3/2 padded, TensorFlow "same" 2x2/2 on odd sizes
      {{3, 5, 9, 8}, pool(2, 2, 2, 2, 0, 0, 0, 0)},
      {{3, 5, 9, 8}, pool(3, 3, 2, 2, 1, 1, 1, 1)},
      {{3, 5, 9, 8}, pool(2, 2, 2, 2, 0, 1, 0, 1)},
      // the CUDA test: plain, TensorFlow "same" 3x3/2 on an even size, overlapping 3x3/1
      {{2, 3, 10, 10}, pool(2, 2, 2, 2, 0, 0, 0, 0)},
      {{2, 3, 10, 10}, pool(3, 3, 2, 2, 0, 1, 0, 1)},
      {{2, 3, 10, 10}, pool(3, 3, 1, 1, 1, 1, 1, 1)},
      // cifar10-tf's pools (TensorFlow "same" 3x3/2) and more windows epoch's NCHW kernel takes
      // where oneDNN has only its simple code: odd windows, strides 3 and 1, padding
      {{4, 64, 24, 24}, pool(3, 3, 2, 2, 0, 1, 0, 1)},
      {{4, 64, 12, 12}, pool(3, 3, 2, 2, 0, 1, 0, 1)},
      {{2, 5, 11, 13}, pool(5, 3, 3, 2, 2, 1, 1, 2)},
      {{1, 3, 7, 9}, pool(2, 2, 1, 1, 0, 1, 1, 0)}};
  for (const PoolCase& g : grid) {
    out.push_back(max_pool_case(pool_name(g.x, g.p), g.p, [x = g.x](std::uint64_t seed) {
      return In{random_tensor(x, seed)};
    }));
    for (bool include_pad : {true, false}) {
      ops::Pool2dParams p = g.p;
      p.count_include_pad = include_pad;
      OpCase c;
      c.op = "avg_pool2d";
      c.name = pool_name(g.x, p) + (include_pad ? "_incl" : "_excl");
      c.inputs = [x = g.x](std::uint64_t seed) { return In{random_tensor(x, seed)}; };
      c.forward = [p](In& in) { return Outputs{{"y", ops::avg_pool2d_forward(in[0], p)}}; };
      c.backward = [p](const In& in, const Outputs&, const Tensor& dy) {
        return Outputs{{"dx", ops::avg_pool2d_backward(dy, in[0].shape(), p)}};
      };
      c.forward_tol = c.backward_tol = kPool;
      out.push_back(c);
    }
  }

  // NaN and infinities take the slow path of the hand-written 2x2 kernel and of the 4x4
  // tile; the first NaN of a window wins everywhere.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<std::pair<std::int64_t, std::vector<float>>> special = {
      {2, {1, nan, 3, 2, 5, 6, nan, 7, -inf, inf, 0, 1, 4, nan, -inf, 2}},
      {4, {1, 2, 3, 4, 5, nan, 7, 8, 9, 10, nan, 12, 13, 14, 15, 16}}};
  for (const auto& [k, values] : special) {
    OpCase c = max_pool_case(str("nan_inf_4x4_k", k), pool(k, k, k, k, 0, 0, 0, 0),
                             [values = values](std::uint64_t) {
                               return In{Tensor::from_vector({1, 1, 4, 4}, values)};
                             });
    c.backward_tol = kExact;
    out.push_back(c);
  }

  for (const Shape& xs : std::vector<Shape>{{3, 5, 7, 9}, {2, 16, 1, 1}}) {
    OpCase c;
    c.op = "global_avg_pool2d";
    c.name = dims(xs);
    c.inputs = [xs](std::uint64_t seed) { return In{random_tensor(xs, seed)}; };
    c.forward = [](In& in) { return Outputs{{"y", ops::global_avg_pool2d_forward(in[0])}}; };
    c.backward = [](const In& in, const Outputs&, const Tensor& dy) {
      return Outputs{{"dx", ops::global_avg_pool2d_backward(dy, in[0].shape())}};
    };
    c.forward_tol = kPool;
    c.backward_tol = kDefault;
    out.push_back(c);
  }
}

// ---- activations ----------------------------------------------------------------------------

// A pointwise op y = f(x) whose backward reads x (reads_y false) or y.
OpCase pointwise(const std::string& op, const std::string& name,
                 std::function<Tensor(std::uint64_t)> x, std::function<Tensor(const Tensor&)> f,
                 std::function<Tensor(const Tensor&, const Tensor&)> df, bool reads_y,
                 Tolerance tol) {
  OpCase c;
  c.op = op;
  c.name = name;
  c.inputs = [x](std::uint64_t seed) { return In{x(seed)}; };
  c.forward = [f](In& in) { return Outputs{{"y", f(in[0])}}; };
  if (df)
    c.backward = [df, reads_y](const In& in, const Outputs& fwd, const Tensor& dy) {
      return Outputs{{"dx", df(dy, reads_y ? get(fwd, "y") : in[0])}};
    };
  c.forward_tol = c.backward_tol = tol;
  return c;
}

void add_activations(std::vector<OpCase>& out) {
  const auto off_zero = [](std::uint64_t seed) {
    return random_away_from_zero({7, 33}, seed, 0.05f, 6.0f);
  };
  out.push_back(
      pointwise("relu", "7x33", off_zero, ops::relu_forward, ops::relu_backward, false, kDefault));
  out.push_back(pointwise("sigmoid", "7x33", off_zero, ops::sigmoid_forward, ops::sigmoid_backward,
                          true, kPointwise));
  out.push_back(
      pointwise("tanh", "7x33", off_zero, ops::tanh_forward, ops::tanh_backward, true, kPointwise));
  // The vectorized sigmoid of the fast path over its whole useful range, through saturation
  // and the flush to 0 below -87 (forward only: 1 - y loses every digit there).
  out.push_back(pointwise("sigmoid", "ramp_m120_to_120",
                          [](std::uint64_t) {
                            std::vector<float> xs;
                            for (float v = -120.0f; v <= 120.0f; v += 0.0137f) xs.push_back(v);
                            xs.push_back(0.0f);
                            xs.push_back(-0.0f);
                            return Tensor::from_vector({static_cast<std::int64_t>(xs.size())}, xs);
                          },
                          ops::sigmoid_forward, nullptr, true, {1e-30f, 1e-6f}));

  // Kinks: 0.2x + 0.5 is 0 or 1 at x = -2.5, 2.5; 0.5x + 0.1 at -0.2, 1.8; the clip bounds.
  const auto off_kinks = [](std::uint64_t seed) {
    return away_from(random_tensor({5, 41}, seed, -4.0f, 4.0f),
                     {-2.5f, 2.5f, -0.2f, 1.8f, -1.5f, 2.0f});
  };
  out.push_back(pointwise(
      "hard_sigmoid", "5x41_slope0p2_offset0p5", off_kinks,
      [](const Tensor& x) { return ops::hard_sigmoid_forward(x); },
      [](const Tensor& dy, const Tensor& x) { return ops::hard_sigmoid_backward(dy, x); }, false,
      kPointwise));
  out.push_back(pointwise(
      "hard_sigmoid", "5x41_slope0p5_offset0p1", off_kinks,
      [](const Tensor& x) { return ops::hard_sigmoid_forward(x, 0.5f, 0.1f); },
      [](const Tensor& dy, const Tensor& x) {
        return ops::hard_sigmoid_backward(dy, x, 0.5f, 0.1f);
      },
      false, kPointwise));
  out.push_back(pointwise(
      "clip", "5x41_m1p5_to_2", off_kinks,
      [](const Tensor& x) { return ops::clip_forward(x, -1.5f, 2.0f); },
      [](const Tensor& dy, const Tensor& x) { return ops::clip_backward(dy, x, -1.5f, 2.0f); },
      false, kDefault));

  for (std::int64_t K : {1, 10, 32, 1000})  // below, at and above a warp's 32 lanes
    out.push_back(pointwise("softmax", str("9x", K),
                            [K](std::uint64_t seed) {
                              return random_tensor({9, K}, seed, -8.0f, 8.0f);
                            },
                            ops::softmax_forward, nullptr, true, {1e-7f, 1e-5f}));
}

// ---- losses ---------------------------------------------------------------------------------

void add_losses(std::vector<OpCase>& out) {
  for (std::int64_t K : {2, 10, 100}) {
    OpCase c;
    c.op = "softmax_cross_entropy";
    c.name = str("37x", K);
    c.inputs = [K](std::uint64_t seed) {
      return In{random_tensor({37, K}, seed, -5.0f, 5.0f), labels_for(37, K)};
    };
    c.forward = [](In& in) {
      const ops::SoftmaxCrossEntropyResult r = ops::softmax_cross_entropy_forward(in[0], in[1]);
      return Outputs{{"loss", r.loss}, {"probs", r.probs}};
    };
    c.backward = [](const In& in, const Outputs& fwd, const Tensor&) {
      return Outputs{
          {"dlogits", ops::softmax_cross_entropy_backward(0.7f, get(fwd, "probs"), in[1])}};
    };
    c.forward_tol = {1e-6f, 1e-5f};
    c.backward_tol = {1e-7f, 1e-5f};
    c.output_tol = {{"probs", {1e-7f, 1e-5f}}};
    out.push_back(c);
  }

  using Fwd = Tensor (*)(const Tensor&, const Tensor&);
  using Bwd = Tensor (*)(float, const Tensor&, const Tensor&);
  struct PairLoss {
    const char* op;
    Fwd f;
    Bwd df;
  };
  for (const PairLoss& l :
       {PairLoss{"bce_with_logits", ops::bce_with_logits_forward, ops::bce_with_logits_backward},
        PairLoss{"mse", ops::mse_forward, ops::mse_backward},
        PairLoss{"l1", ops::l1_forward, ops::l1_backward}})
    // Below one block, across several blocks and past the 1024-block cap of the reduction.
    for (std::int64_t n : {1, 1000, 300001}) {
      OpCase c;
      c.op = l.op;
      c.name = str(n);
      c.inputs = [n](std::uint64_t seed) {
        return In{random_tensor({n}, seed, -3.0f, 3.0f), random_tensor({n}, seed + 1, 0.0f, 1.0f)};
      };
      c.forward = [f = l.f](In& in) { return Outputs{{"loss", f(in[0], in[1])}}; };
      c.backward = [df = l.df](const In& in, const Outputs&, const Tensor&) {
        return Outputs{{"dx", df(1.3f, in[0], in[1])}};
      };
      c.forward_tol = {1e-6f, 1e-5f};
      // Gradients scale with 1.3 / n; sigmoid(x) - t may cancel, so allow an absolute error of
      // a few float ulps of that scale.
      c.backward_tol = {1e-6f * 1.3f / static_cast<float>(n), 1e-5f};
      out.push_back(c);
    }
}

// ---- dropout, shape ops, elementwise --------------------------------------------------------

void add_dropout(std::vector<OpCase>& out) {
  for (float p : {0.0f, 0.25f, 0.5f, 0.9f}) {
    OpCase c;
    c.op = "dropout";
    c.name = "17x59_p" + num(p);  // 1003 elements: the last Philox group of four is incomplete
    c.inputs = [](std::uint64_t seed) { return In{random_tensor({17, 59}, seed)}; };
    c.forward = [p](In& in) {
      const ops::DropoutResult r = ops::dropout_forward(in[0], p, 42, 7);
      return Outputs{{"y", r.y}, {"mask", r.mask}};
    };
    c.backward = [](const In&, const Outputs& fwd, const Tensor& dy) {
      return Outputs{{"dx", ops::dropout_backward(dy, get(fwd, "mask"))}};
    };
    c.forward_tol = c.backward_tol = kExact;  // the same mask from the same (seed, key, index)
    out.push_back(c);
  }
}

void add_shape_ops(std::vector<OpCase>& out) {
  for (const Shape& xs : std::vector<Shape>{{1, 1, 1, 1}, {2, 3, 5, 7}, {3, 4, 16, 33}}) {
    OpCase c;
    c.op = "upsample_nearest2x";
    c.name = dims(xs);
    c.inputs = [xs](std::uint64_t seed) { return In{random_tensor(xs, seed)}; };
    c.forward = [](In& in) { return Outputs{{"y", ops::upsample_nearest2x_forward(in[0])}}; };
    c.backward = [](const In&, const Outputs&, const Tensor& dy) {
      return Outputs{{"dx", ops::upsample_nearest2x_backward(dy)}};
    };
    c.forward_tol = c.backward_tol = kExact;  // the same additions in the same order
    out.push_back(c);
  }

  // Concat along dimensions 0, 1 and 3 (strided device copies), and slices of the results.
  struct Join {
    std::int64_t dim;
    Shape a, b;
  };
  for (const Join& j : std::vector<Join>{{0, {1, 2, 4, 5}, {3, 2, 4, 5}},
                                         {1, {3, 2, 4, 5}, {3, 5, 4, 5}},
                                         {3, {3, 2, 4, 2}, {3, 2, 4, 5}}}) {
    OpCase c;
    c.op = "concat";
    c.name = str(dims(j.a), "_", dims(j.b), "_dim", j.dim);
    c.inputs = [j](std::uint64_t seed) {
      return In{random_tensor(j.a, seed), random_tensor(j.b, seed + 1)};
    };
    c.forward = [dim = j.dim](In& in) { return Outputs{{"y", ops::concat({in[0], in[1]}, dim)}}; };
    c.forward_tol = kExact;
    out.push_back(c);

    Shape joined = j.a;
    joined[static_cast<std::size_t>(j.dim)] += j.b[static_cast<std::size_t>(j.dim)];
    const std::int64_t length = joined[static_cast<std::size_t>(j.dim)] - 2;
    OpCase s;
    s.op = "slice";
    s.name = str(dims(joined), "_dim", j.dim, "_from1_len", length);
    s.inputs = [joined](std::uint64_t seed) { return In{random_tensor(joined, seed)}; };
    s.forward = [dim = j.dim, length](In& in) {
      return Outputs{{"y", ops::slice(in[0], dim, 1, length)}};
    };
    s.backward = [dim = j.dim](const In& in, const Outputs&, const Tensor& dy) {
      return Outputs{{"dx", ops::slice_backward(dy, in[0].shape(), dim, 1)}};
    };
    s.forward_tol = s.backward_tol = kExact;
    out.push_back(s);
  }
}

void add_elementwise(std::vector<OpCase>& out) {
  struct SumTo {
    Shape x, target;
  };
  for (const SumTo& s : std::vector<SumTo>{
           {{4, 5}, {}},                    // everything, few values: a thread per output
           {{16, 10}, {10}},                // a bias over the batch
           {{16, 10}, {16, 1}},             // over the last dimension
           {{6, 3, 20, 20}, {1, 3, 1, 1}},  // per channel over N, H, W: a block per output
           {{6, 3, 20, 20}, {3, 1, 1}},     // the same, target with fewer dimensions
           {{6, 3, 20, 20}, {6, 1, 20, 1}},
           {{2, 300, 2}, {300, 1}},    // many outputs, few inputs each
           {{70000, 2}, {70000, 1}},   // more outputs than the block kernel takes
           {{300, 1, 4}, {1, 4}},      // a size-1 dimension between reduced and kept ones
           {{3, 0, 4}, {1, 0, 4}}}) {  // empty
    OpCase c;
    c.op = "sum_to_shape";
    c.name = dims(s.x) + "_to_" + dims(s.target);
    c.inputs = [x = s.x](std::uint64_t seed) { return In{random_tensor(x, seed)}; };
    c.forward = [target = s.target](In& in) {
      return Outputs{{"y", ops::sum_to_shape(in[0], target)}};
    };
    c.forward_tol = {1e-6f, 1e-6f};
    out.push_back(c);
  }

  using Binary = Tensor (*)(const Tensor&, const Tensor&);
  struct BinaryOp {
    const char* op;
    Binary f;
  };
  struct Operands {
    Shape a, b;
  };
  for (const BinaryOp& b : {BinaryOp{"add", ops::add}, BinaryOp{"sub", ops::sub},
                            BinaryOp{"mul", ops::mul}, BinaryOp{"div", ops::div}})
    // The same shape (the contiguous kernel), per-channel and two-sided broadcasting, a scalar.
    for (const Operands& s : std::vector<Operands>{
             {{7, 33}, {7, 33}}, {{4, 3, 5, 6}, {1, 3, 1, 1}}, {{5, 1, 7}, {4, 1}}, {{3, 4}, {}}}) {
      OpCase c;
      c.op = b.op;
      c.name = dims(s.a) + "_" + dims(s.b);
      c.inputs = [s](std::uint64_t seed) {  // b off zero: a divisor
        return In{random_tensor(s.a, seed), random_away_from_zero(s.b, seed + 1, 0.1f)};
      };
      c.forward = [f = b.f](In& in) { return Outputs{{"y", f(in[0], in[1])}}; };
      c.forward_tol = kPointwise;
      out.push_back(c);
    }

  const auto one_input = [&](const std::string& op, const Shape& xs, std::function<Outputs(In&)> f,
                             Tolerance tol) {
    OpCase c;
    c.op = op;
    c.name = dims(xs);
    c.inputs = [xs](std::uint64_t seed) {
      return In{random_tensor(xs, seed), random_tensor(xs, seed + 1)};
    };
    c.forward = std::move(f);
    c.forward_tol = tol;
    out.push_back(c);
  };
  for (const Shape& xs : std::vector<Shape>{{1003}, {3, 5, 7, 9}}) {
    one_input(
        "affine_scalar", xs,
        [](In& in) {
          return Outputs{{"y", ops::affine_scalar(in[0], 1.7f, -0.3f)}};
        },
        kPointwise);
    one_input(
        "axpy", xs,
        [](In& in) {
          ops::axpy_(in[0], in[1], 0.7f);
          return Outputs{{"y", in[0]}};
        },
        kPointwise);
    one_input(
        "scale", xs,
        [](In& in) {
          ops::scale_(in[0], -2.5f);
          return Outputs{{"y", in[0]}};
        },
        kPointwise);
    one_input(
        "fill", xs,
        [](In& in) {
          ops::fill_(in[0], 3.25f);
          return Outputs{{"y", in[0]}};
        },
        kExact);
    one_input(
        "mean", xs,
        [](In& in) {
          return Outputs{{"y", ops::mean(in[0])}};
        },
        kPointwise);
  }
  for (const Shape& xs : std::vector<Shape>{{1}, {1003}, {300001}})
    one_input("sum", xs, [](In& in) { return Outputs{{"y", ops::sum(in[0])}}; }, {1e-5f, 1e-5f});
}

}  // namespace

const std::vector<ConvShape>& conv2d_shapes() {
  //                                        N  C   H   W  OC KH KW  stride pad  dil groups
  static const std::vector<ConvShape> shapes = {
      // the oneDNN grid: strides, padding, dilation, groups (depthwise too), 1x1, odd sizes,
      // channel counts that are and are not multiples of 16
      {3, 4, 9, 7, 5, 3, 3, conv(1, 1, 1, 1), true},
      {1, 3, 11, 10, 6, 3, 3, conv(2, 2, 1, 1), true},
      {2, 2, 10, 9, 3, 3, 3, conv(1, 1, 2, 2, 2), true},
      {3, 4, 8, 8, 6, 3, 3, conv(1, 1, 1, 1, 1, 2), true},
      {2, 4, 7, 9, 4, 3, 3, conv(1, 1, 1, 1, 1, 4), false},
      {3, 5, 6, 5, 7, 1, 1, conv(1, 1, 0, 0), false},
      {1, 3, 9, 12, 4, 2, 3, conv(1, 2, 0, 1), false},
      {2, 6, 9, 9, 5, 1, 1, conv(2, 2, 0, 0), true},
      {3, 1, 12, 12, 32, 3, 3, conv(1, 1, 1, 1), true},
      {2, 3, 13, 13, 32, 3, 3, conv(1, 1, 0, 0), true},
      {2, 32, 7, 7, 64, 3, 3, conv(1, 1, 1, 1), true},
      {1, 16, 10, 10, 16, 5, 5, conv(2, 2, 2, 2), true},
      {2, 32, 6, 6, 32, 3, 3, conv(1, 1, 1, 1, 1, 32), true},
      {2, 20, 9, 9, 24, 3, 3, conv(1, 1, 1, 1), true},
      {3, 17, 8, 8, 33, 3, 3, conv(2, 2, 1, 1), false},
      {2, 36, 7, 7, 40, 3, 3, conv(1, 1, 1, 1, 1, 2), true},
      {1, 48, 5, 5, 48, 1, 1, conv(1, 1, 0, 0), true},
      // the fast-path op test: 3x3 on 11x9, same, strided, dilated + grouped, 32 channels
      {3, 3, 11, 9, 8, 3, 3, conv(1, 1, 1, 1), true},
      {3, 4, 11, 9, 6, 3, 3, conv(2, 2, 1, 1), true},
      {3, 4, 11, 9, 6, 3, 3, conv(1, 1, 2, 2, 2, 2), true},
      {3, 32, 11, 9, 16, 3, 3, conv(1, 1, 0, 0), true},
      // the CUDA test: 3x3 same, strided 3x5 (2, 3), dilated without bias, grouped, 1x1
      {2, 3, 9, 8, 5, 3, 3, conv(1, 1, 1, 1), true},
      {3, 4, 11, 13, 6, 3, 5, conv(2, 3, 2, 0), true},
      {2, 2, 10, 10, 3, 3, 3, conv(1, 1, 1, 1, 2), false},
      {2, 4, 7, 7, 6, 3, 3, conv(1, 1, 1, 1, 1, 2), true},
      {4, 8, 5, 5, 16, 1, 1, conv(1, 1, 0, 0), true},
      // strict's weight gradient over output-channel tiles, the last tile short
      {1, 8, 10, 10, 72, 3, 3, conv(1, 1, 1, 1), true},
      {2, 16, 6, 6, 100, 1, 1, conv(1, 1, 0, 0), false},
  };
  return shapes;
}

const std::vector<MatmulShape>& matmul_shapes() {
  static const std::vector<MatmulShape> shapes = [] {
    std::vector<MatmulShape> s;
    // (M, N, K): the oneDNN grid and the CUDA test's odd sizes that no tile divides
    for (const auto& [M, N, K] : std::vector<std::tuple<std::int64_t, std::int64_t, std::int64_t>>{
             {1, 1, 1}, {3, 5, 7}, {17, 33, 9}, {64, 128, 300}, {2, 10, 129}, {37, 23, 51}})
      for (bool ta : {false, true})
        for (bool tb : {false, true}) s.push_back({M, N, K, ta, tb});
    s.push_back({7, 5, 33, false, true});  // the fast-path op test: w x^T
    // strict's fixed tiles along the rows (M > N) and along the columns (N > M), the last
    // tile short, every transpose
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        s.push_back({200, 48, 40, ta, tb});
        s.push_back({40, 200, 48, ta, tb});
      }
    return s;
  }();
  return shapes;
}

const std::vector<OpCase>& cases() {
  static const std::vector<OpCase> table = [] {
    std::vector<OpCase> t;
    add_conv2d(t);
    add_matmul_linear(t);
    add_norm(t);
    add_pool(t);
    add_activations(t);
    add_losses(t);
    add_dropout(t);
    add_shape_ops(t);
    add_elementwise(t);
    return t;
  }();
  return table;
}

}  // namespace epoch::testing::parity
