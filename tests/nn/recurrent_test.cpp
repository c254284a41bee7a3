// ConvLstm2d: shapes, parameters and their initialization, bad inputs, the numerical gradient
// through several time steps, detaching the state, and the outputs and gradients of an unrolled
// PyTorch reference on the same weights (tests/nn/reference,
// bench/reference/convlstm_reference.py).
#include "epoch/nn/recurrent.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "epoch/autograd/autograd.h"
#include "epoch/autograd/functions.h"
#include "epoch/tensor/safetensors.h"
#include "testing/testing.h"

namespace epoch::nn {
namespace {

ConvLstmOptions peephole_options(std::int64_t h, std::int64_t w) {
  ConvLstmOptions o;
  o.peepholes = true;
  o.height = h;
  o.width = w;
  return o;
}

TEST(ConvLstm2d, ShapesParametersAndFlops) {
  ConvLstm2d cell(3, 4, peephole_options(5, 6));
  const NamedTensors params = cell.parameters();
  ASSERT_EQ(params.size(), 5u);
  EXPECT_EQ(params[0].first, "weight");
  EXPECT_EQ(params[0].second.shape(), (Shape{16, 7, 3, 3}));
  EXPECT_EQ(params[1].second.shape(), (Shape{16}));
  EXPECT_EQ(params[4].first, "output_peephole");
  EXPECT_EQ(params[4].second.shape(), (Shape{4, 5, 6}));
  EXPECT_EQ(cell.parameter_count(), 16 * 7 * 9 + 16 + 3 * 4 * 30);
  EXPECT_EQ(cell.output_shape({10, 3, 5, 6}), (Shape{10, 4, 5, 6}));
  // Per step: 2 x (16 x 5 x 6 outputs) x (7 x 3 x 3) multiply-adds; 10 steps.
  EXPECT_EQ(cell.flops({10, 3, 5, 6}), 10 * 2 * 16 * 30 * 63);
  EXPECT_EQ(cell.describe(), "ConvLSTM2d(3 -> 4, 3x3, peepholes 5x6)");
  EXPECT_EQ(ConvLstm2d(2, 8, {}).parameters().size(), 2u);
}

TEST(ConvLstm2d, InitializationStartsPeepholesAndBiasAtZero) {
  ConvLstm2d cell(3, 4, peephole_options(5, 6));
  initialize(cell, 11);
  for (const auto& [name, t] : cell.parameters()) {
    const std::vector<float> v = t.to_vector();
    float largest = 0.0f;
    for (float x : v) largest = std::max(largest, std::fabs(x));
    if (name == "weight")
      EXPECT_GT(largest, 0.0f) << name;
    else
      EXPECT_EQ(largest, 0.0f) << name;
  }
}

TEST(ConvLstm2d, AForgetBiasStartsTheForgetGateAloneThere) {
  ConvLstmOptions o = peephole_options(5, 6);
  o.forget_bias = 1.0f;
  ConvLstm2d cell(3, 4, o);
  initialize(cell, 11);
  const std::vector<float> b = cell.bias.to_vector();  // i, f, o, g: 4 each
  for (std::size_t k = 0; k < b.size(); ++k) EXPECT_EQ(b[k], k >= 4 && k < 8 ? 1.0f : 0.0f) << k;
  // A model's cells too: nn::initialize reaches every module.
  struct Holder : Module {
    std::shared_ptr<ConvLstm2d> inner;
    explicit Holder(const ConvLstmOptions& opts) : inner(std::make_shared<ConvLstm2d>(2, 3, opts)) {
      register_module("inner", inner);
    }
    Tensor forward(const Tensor& x) override { return x; }
    std::string describe() const override { return "holder"; }
  } holder(o);
  initialize(holder, 1);
  EXPECT_EQ(holder.inner->bias.to_vector()[3], 1.0f);
  EXPECT_EQ(holder.inner->bias.to_vector()[2], 0.0f);
}

TEST(ConvLstm2d, RefusesBadInputsWithOneLine) {
  ConvLstm2d cell(3, 4, peephole_options(5, 6));
  const LstmState s = cell.zero_state(2, 5, 6, Device::cpu());
  EXPECT_THROW(cell.step(Tensor::zeros({2, 2, 5, 6}), s), InvalidArgument);  // channels
  EXPECT_THROW(cell.step(Tensor::zeros({2, 3, 5, 7}), cell.zero_state(2, 5, 7, Device::cpu())),
               InvalidArgument);  // not the peepholes' size
  EXPECT_THROW(cell.step(Tensor::zeros({2, 3, 5, 6}), {s.h, Tensor()}), InvalidArgument);
  EXPECT_THROW(cell.step(Tensor::zeros({3, 3, 5, 6}), s), InvalidArgument);  // batch
  EXPECT_THROW(cell.forward(Tensor::zeros({2, 3, 5, 6})), InvalidArgument);  // not a sequence
  EXPECT_THROW(cell.apply({Tensor::zeros({2, 3, 5, 6}), s.h}), InvalidArgument);
  EXPECT_THROW(ConvLstm2d(3, 4, {.kernel = 4}), InvalidArgument);
  EXPECT_THROW(ConvLstm2d(3, 4, {.peepholes = true}), InvalidArgument);
  EXPECT_THROW(ConvLstm2d(3, 4, {.gate = Activation::relu}), InvalidArgument);
  try {
    cell.step(Tensor::zeros({2, 2, 5, 6}), s);
  } catch (const InvalidArgument& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    EXPECT_NE(what.find("(N, 3, H, W)"), std::string::npos) << what;
  }
}

// The hidden states of three steps and the last cell state, as one tensor, so the numerical
// gradient reaches every input through both paths of the state.
Tensor unroll(ConvLstm2d& cell, const std::vector<Tensor>& in) {
  cell.weight = in[3];
  cell.bias = in[4];
  if (in.size() > 5) {
    cell.input_peephole = in[5];
    cell.forget_peephole = in[6];
    cell.output_peephole = in[7];
  }
  const Tensor& x = in[0];
  const std::int64_t n = x.size(0), c = x.size(2), h = x.size(3), w = x.size(4);
  LstmState s{in[1], in[2]};
  std::vector<Tensor> out;
  for (std::int64_t t = 0; t < x.size(1); ++t) {
    s = cell.step(reshape(slice(x, 1, t, 1), {n, c, h, w}), s);
    out.push_back(flatten(s.h));
  }
  out.push_back(flatten(s.c));
  return concat(out, 1);
}

std::vector<Tensor> leaves(const ConvLstm2d& cell, std::int64_t n, std::int64_t t, std::int64_t h,
                           std::int64_t w, bool peepholes) {
  const std::int64_t in = cell.in_channels(), hid = cell.hidden_channels();
  std::vector<Tensor> v = {testing::random_tensor({n, t, in, h, w}, 1),
                           testing::random_tensor({n, hid, h, w}, 2, -0.5f, 0.5f),
                           testing::random_tensor({n, hid, h, w}, 3, -0.5f, 0.5f),
                           testing::random_tensor(cell.weight.shape(), 4, -0.4f, 0.4f),
                           testing::random_tensor(cell.bias.shape(), 5, -0.3f, 0.3f)};
  if (peepholes)
    for (std::uint64_t k = 6; k < 9; ++k)
      v.push_back(testing::random_tensor({hid, h, w}, k, -0.5f, 0.5f));
  for (Tensor& x : v) x.set_requires_grad(true);
  return v;
}

TEST(ConvLstm2d, GradientCheckThroughThreeStepsWithPeepholes) {
  ConvLstm2d cell(2, 3, peephole_options(4, 5));
  const auto f = [&](const std::vector<Tensor>& in) { return unroll(cell, in); };
  EXPECT_TRUE(testing::gradcheck(f, leaves(cell, 2, 3, 4, 5, true)));
}

TEST(ConvLstm2d, GradientCheckThroughThreeStepsWithHardSigmoidGates) {
  ConvLstm2d cell(2, 3, {.kernel = 3, .gate = Activation::hard_sigmoid});
  const auto f = [&](const std::vector<Tensor>& in) { return unroll(cell, in); };
  EXPECT_TRUE(testing::gradcheck(f, leaves(cell, 2, 3, 4, 4, false)));
}

TEST(ConvLstm2d, ASequenceIsItsStepsFromTheZeroState) {
  ConvLstm2d cell(2, 3, {});
  initialize(cell, 3);
  const Tensor x = testing::random_tensor({2, 4, 2, 5, 5}, 9);
  const Tensor seq = cell.forward(x);
  ASSERT_EQ(seq.shape(), (Shape{2, 4, 3, 5, 5}));
  LstmState s = cell.zero_state(2, 5, 5, Device::cpu());
  for (std::int64_t t = 0; t < 4; ++t) {
    s = cell.step(reshape(slice(x, 1, t, 1), {2, 2, 5, 5}), s);
    EXPECT_TRUE(testing::allclose(reshape(slice(seq, 1, t, 1), {2, 3, 5, 5}), s.h, 0.0f, 0.0f))
        << "step " << t;
  }
  const std::vector<Tensor> one = cell.apply({x});
  ASSERT_EQ(one.size(), 1u);
  EXPECT_TRUE(testing::allclose(one[0], seq, 0.0f, 0.0f));
}

TEST(ConvLstm2d, ADetachedStateStopsTheGradientAtTheWindow) {
  ConvLstm2d cell(2, 3, {});
  initialize(cell, 5);
  Tensor x0 = testing::random_tensor({1, 2, 4, 4}, 1), x1 = testing::random_tensor({1, 2, 4, 4}, 2);
  x0.set_requires_grad(true);
  x1.set_requires_grad(true);
  LstmState s = cell.step(x0, cell.zero_state(1, 4, 4, Device::cpu()));
  s = cell.step(x1, s.detach());
  sum(s.h).backward();
  EXPECT_TRUE(x1.grad().defined());
  EXPECT_FALSE(x0.grad().defined());  // the window before the detach gets nothing
  EXPECT_TRUE(cell.weight.grad().defined());
}

// The same weights, inputs and state as PyTorch's unrolled cell (float64 there): the hidden
// states, the last cell state and the gradient of every input and weight.
void compare_with_torch(const std::string& name, ConvLstm2d& cell) {
  const SafetensorsFile ref = load_safetensors(std::string(EPOCH_SOURCE_DIR) +
                                               "/tests/nn/reference/convlstm_torch.safetensors");
  const auto at = [&](const std::string& key) { return ref.at(name + "." + key); };
  std::vector<std::string> names = {"x", "h0", "c0", "weight", "bias"};
  if (ref.find(name + ".input_peephole") != nullptr)
    names.insert(names.end(), {"input_peephole", "forget_peephole", "output_peephole"});
  std::vector<Tensor> in;
  for (const std::string& k : names) {
    Tensor t = at(k).clone();
    t.set_requires_grad(true);
    in.push_back(t);
  }
  const Tensor out = unroll(cell, in);
  const std::int64_t n = in[0].size(0), steps = in[0].size(1);
  const Tensor hidden =
      reshape(slice(out, 1, 0, out.size(1) - in[2].numel() / n), at("hidden").shape());
  const Tensor c_last = reshape(slice(out, 1, out.size(1) - in[2].numel() / n, in[2].numel() / n),
                                at("c_last").shape());
  EXPECT_TRUE(testing::allclose(hidden, at("hidden"), 1e-5f, 1e-4f)) << name << " hidden";
  EXPECT_TRUE(testing::allclose(c_last, at("c_last"), 1e-5f, 1e-4f)) << name << " c_last";
  EXPECT_EQ(hidden.size(1), steps);
  add(sum(mul(hidden, at("r"))), sum(mul(c_last, at("rc")))).backward();
  for (std::size_t k = 0; k < names.size(); ++k)
    EXPECT_TRUE(testing::allclose(in[k].grad(), at("grad." + names[k]), 1e-5f, 1e-4f))
        << name << " gradient of " << names[k];
}

TEST(ConvLstm2d, MatchesAnUnrolledPyTorchCellWithPeepholes) {
  ConvLstm2d cell(3, 4, peephole_options(5, 6));
  compare_with_torch("peephole", cell);
}

TEST(ConvLstm2d, MatchesAnUnrolledPyTorchCellWithHardSigmoidGates) {
  ConvLstm2d cell(2, 3, {.kernel = 5, .gate = Activation::hard_sigmoid});
  compare_with_torch("hard", cell);
}

}  // namespace
}  // namespace epoch::nn
