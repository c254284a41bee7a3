// Optimizers: first updates against hand-computed values and an independent double-precision
// scalar version of each published update rule, minimizing a quadratic, bit-identical resume
// from saved state, thread-count independence, and bad arguments.
#include "epoch/optim/optimizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "epoch/autograd/functions.h"
#include "epoch/ops/backend.h"
#include "epoch/optim/schedule.h"
#include "testing/testing.h"

namespace epoch::optim {
namespace {

using Vec = std::vector<double>;

Tensor param(std::initializer_list<float> values) {
  return Tensor::from_vector({static_cast<std::int64_t>(values.size())}, values)
      .set_requires_grad(true);
}

Tensor grad_of(const Vec& g) {
  std::vector<float> f(g.begin(), g.end());
  return Tensor::from_vector({static_cast<std::int64_t>(f.size())}, f);
}

::testing::AssertionResult near(const Tensor& actual, const Vec& expected, double tol = 1e-5) {
  const std::vector<float> a = actual.to_vector();
  if (a.size() != expected.size()) return ::testing::AssertionFailure() << "size mismatch";
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::abs(a[i] - expected[i]) > tol * std::max(1.0, std::abs(expected[i])))
      return ::testing::AssertionFailure()
             << "element " << i << ": got " << a[i] << ", expected " << expected[i];
  return ::testing::AssertionSuccess();
}

// Three steps with these gradients (one row per step) on a 3-element parameter.
const std::vector<Vec> kGrads = {{0.5, -1.0, 2.0}, {0.25, 2.0, -0.5}, {-1.0, 0.5, 1.5}};
const Vec kStart = {1.0, -2.0, 0.5};

// Runs three steps of `opt` over p with kGrads and checks each against ref(p, g, t) in double.
void expect_matches_reference(Optimizer& opt, Tensor& p,
                              const std::function<void(Vec&, const Vec&, int)>& ref) {
  Vec expected = kStart;
  for (int t = 1; t <= 3; ++t) {
    p.set_grad(grad_of(kGrads[t - 1]));
    opt.step();
    ref(expected, kGrads[t - 1], t);
    EXPECT_TRUE(near(p, expected)) << "step " << t;
  }
  EXPECT_EQ(opt.steps(), 3);
}

Tensor start_param() {
  return param({static_cast<float>(kStart[0]), static_cast<float>(kStart[1]),
                static_cast<float>(kStart[2])});
}

// --- hand-computed values --------------------------------------------------------------------

TEST(Sgd, PlainStepsMatchHandValues) {
  Tensor p = param({1.0f, -2.0f});
  Sgd opt({{"p", p}}, 0.1f);
  const std::vector<Vec> grads = {{0.5, -1.0}, {0.25, 2.0}, {-1.0, 0.5}};
  const std::vector<Vec> expected = {{0.95, -1.9}, {0.925, -2.1}, {1.025, -2.15}};
  for (int t = 0; t < 3; ++t) {
    p.set_grad(grad_of(grads[t]));
    opt.step();
    EXPECT_TRUE(near(p, expected[t], 1e-6)) << "step " << t + 1;
  }
}

TEST(Sgd, MomentumAndNesterovMatchHandValues) {
  // Constant gradient 1, lr 0.1, momentum 0.9: buffers 1, 1.9, 2.71.
  Tensor a = param({0.0f}), b = param({0.0f});
  Sgd heavy({{"a", a}}, 0.1f, 0.9f);
  Sgd nesterov({{"b", b}}, 0.1f, 0.9f, /*nesterov=*/true);
  const Vec heavy_expected = {-0.1, -0.29, -0.561};        // p -= 0.1 * buf
  const Vec nesterov_expected = {-0.19, -0.461, -0.8049};  // p -= 0.1 * (1 + 0.9 * buf)
  for (int t = 0; t < 3; ++t) {
    a.set_grad(grad_of({1.0}));
    b.set_grad(grad_of({1.0}));
    heavy.step();
    nesterov.step();
    EXPECT_TRUE(near(a, {heavy_expected[t]}, 1e-6)) << "step " << t + 1;
    EXPECT_TRUE(near(b, {nesterov_expected[t]}, 1e-6)) << "step " << t + 1;
  }
}

TEST(Sgd, WeightDecayIsAddedToTheGradient) {
  // d = g + 0.5 * p = 0 + 0.5 * 2 = 1, p = 2 - 0.1 = 1.9; then d = 0.95, p = 1.805.
  Tensor p = param({2.0f});
  Sgd opt({{"p", p}}, 0.1f, 0.0f, false, 0.5f);
  p.set_grad(grad_of({0.0}));
  opt.step();
  EXPECT_TRUE(near(p, {1.9}, 1e-6));
  opt.step();
  EXPECT_TRUE(near(p, {1.805}, 1e-6));
}

TEST(Sgd, WeightDecayCanBeLimitedToNamedParameters) {
  Tensor a = param({2.0f}), b = param({2.0f});
  OptimizerConfig c = optimizer_defaults("sgd");
  c.lr = 0.1f;
  c.weight_decay = 0.5f;
  c.decay_only = {"dense."};
  auto opt = make_optimizer(c, {{"dense.weight", a}, {"conv.weight", b}});
  a.set_grad(grad_of({0.0}));
  b.set_grad(grad_of({0.0}));
  opt->step();
  EXPECT_TRUE(near(a, {1.9}, 1e-6));  // decayed
  EXPECT_TRUE(near(b, {2.0}, 1e-6));  // not
  c.decay_only = {"nothing."};
  EXPECT_THROW(make_optimizer(c, {{"dense.weight", param({1.0f})}}), ConfigError);
}

// Caffe's lr_mult: a parameter's learning rate times its multiplier, for every optimizer; 0
// freezes it; a prefix that names nothing or a bad entry is refused.
TEST(Optimizer, LearningRateMultipliersScaleEachParametersRate) {
  for (const OptimizerKind kind : {OptimizerKind::sgd, OptimizerKind::adam, OptimizerKind::rmsprop,
                                   OptimizerKind::lars, OptimizerKind::lamb}) {
    SCOPED_TRACE(optimizer_name(kind));
    OptimizerConfig c = optimizer_defaults(kind);
    c.weight_decay = 0.0f;
    const auto moved = [&](const std::vector<std::string>& mult) {
      OptimizerConfig m = c;
      m.lr_mult = mult;
      Tensor w = param({1.0f, -2.0f}), b = param({0.5f});
      auto opt = make_optimizer(m, {{"fc.weight", w}, {"fc.bias", b}});
      w.set_grad(grad_of({0.3, -0.2}));
      b.set_grad(grad_of({0.4}));
      opt->step();
      return std::vector<double>{w.to_vector()[0] - 1.0, b.to_vector()[0] - 0.5};
    };
    const std::vector<double> plain = moved({}), doubled = moved({"fc.bias=2"});
    const std::vector<double> frozen = moved({"fc.weight=0", "fc.bias=1"});
    EXPECT_EQ(doubled[0], plain[0]);
    EXPECT_NEAR(doubled[1], 2.0 * plain[1], 1e-6);
    EXPECT_EQ(frozen[0], 0.0);
    EXPECT_EQ(frozen[1], plain[1]);
  }
  OptimizerConfig c;
  c.lr_mult = {"nothing=2"};
  EXPECT_THROW(make_optimizer(c, {{"w", param({1.0f})}}), ConfigError);
  c.lr_mult = {"w=two"};
  EXPECT_THROW(make_optimizer(c, {{"w", param({1.0f})}}), ConfigError);
  c.lr_mult = {"w=-1"};
  EXPECT_THROW(make_optimizer(c, {{"w", param({1.0f})}}), ConfigError);
}

TEST(Adam, FirstStepMovesByLrTimesSign) {
  // After bias correction m/sqrt(v) = g/|g|: the first step is lr * |g| / (|g| + eps).
  Tensor p = param({1.0f, -2.0f, 0.5f});
  Adam opt({{"p", p}}, 0.1f);
  p.set_grad(grad_of({0.5, -4.0, 1e-3}));
  opt.step();
  EXPECT_TRUE(near(p, {0.9, -1.9, 0.4}, 1e-5));
}

TEST(Adamw, DecayIsDecoupledFromTheGradient) {
  // Zero gradient: Adam's moments stay 0, so only p *= 1 - lr * wd acts: 2 * (1 - 0.1 * 0.5).
  Tensor p = param({2.0f});
  Adam opt({{"p", p}}, 0.1f, 0.9f, 0.999f, 1e-8f, 0.5f, /*decoupled=*/true);
  p.set_grad(grad_of({0.0}));
  opt.step();
  EXPECT_TRUE(near(p, {1.9}, 1e-6));
  opt.step();
  EXPECT_TRUE(near(p, {1.805}, 1e-6));
}

TEST(Rmsprop, FirstStepMatchesHandValue) {
  // sq = (1 - 0.99) * g^2 = 0.01 * 4, avg = 0.2: p -= 0.01 * 2 / 0.2 = 0.1.
  Tensor p = param({1.0f});
  Rmsprop opt({{"p", p}}, 0.01f);
  p.set_grad(grad_of({2.0}));
  opt.step();
  EXPECT_TRUE(near(p, {0.9}, 1e-6));
}

// --- Keras's own updates (tests/optim/keras_optimizers.json, written by Keras 3) -----------

// Adam, AdamW and RMSprop (plain and centered) with keras_epsilon take Keras's three steps
// (epsilon 0.1, where Keras adds it: to sqrt(v) before Adam's bias correction, inside RMSprop's
// square root); PyTorch's placement of the same epsilon does not.
TEST(KerasEpsilon, AdamAdamwAndRmspropStepAsKerasDoes) {
  std::ifstream in(std::string(EPOCH_SOURCE_DIR) + "/tests/optim/keras_optimizers.json");
  const nlohmann::json keras = nlohmann::json::parse(in);
  const Vec start = keras["start"].get<Vec>();
  for (const char* name : {"adam", "adamw", "rmsprop", "rmsprop_centered"}) {
    for (const bool keras_epsilon : {true, false}) {
      SCOPED_TRACE(std::string(name) + (keras_epsilon ? " keras epsilon" : " torch epsilon"));
      const nlohmann::json& k = keras[name];
      const auto f = [&](const char* key) { return k["config"][key].get<float>(); };
      Tensor p = param({static_cast<float>(start[0]), static_cast<float>(start[1]),
                        static_cast<float>(start[2])});
      std::unique_ptr<Optimizer> opt;
      if (std::string(name).starts_with("adam"))
        opt = std::make_unique<Adam>(NamedTensors{{"p", p}}, f("learning_rate"), f("beta_1"),
                                     f("beta_2"), f("epsilon"),
                                     k["config"]["weight_decay"].is_null() ? 0.0f : f("weight_decay"),
                                     std::string(name) == "adamw", keras_epsilon);
      else
        opt = std::make_unique<Rmsprop>(NamedTensors{{"p", p}}, f("learning_rate"), f("rho"),
                                        f("epsilon"), 0.0f, 0.0f,
                                        k["config"]["centered"].get<bool>(), keras_epsilon);
      bool all_near = true;
      for (std::size_t t = 0; t < 3; ++t) {
        p.set_grad(grad_of(keras["grads"][t].get<Vec>()));
        opt->step();
        const ::testing::AssertionResult r = near(p, k["steps"][t].get<Vec>(), 2e-6);
        if (keras_epsilon) EXPECT_TRUE(r) << "step " << t + 1;
        all_near = all_near && r;
      }
      if (!keras_epsilon) EXPECT_FALSE(all_near) << "PyTorch's epsilon gave Keras's steps";
    }
  }
}

// --- independent scalar references (the published update rules, in double) -----------------

struct SgdRef {
  double lr, momentum, wd;
  bool nesterov;
  Vec buf;
  void operator()(Vec& p, const Vec& g, int t) {
    buf.resize(p.size());
    for (std::size_t i = 0; i < p.size(); ++i) {
      double d = g[i] + wd * p[i];
      if (momentum != 0.0) {
        buf[i] = t == 1 ? d : momentum * buf[i] + d;
        d = nesterov ? d + momentum * buf[i] : buf[i];
      }
      p[i] -= lr * d;
    }
  }
};

struct AdamRef {
  double lr, beta1, beta2, eps, wd;
  bool decoupled;
  Vec m, v;
  void operator()(Vec& p, const Vec& g, int t) {
    m.resize(p.size(), 0.0);
    v.resize(p.size(), 0.0);
    for (std::size_t i = 0; i < p.size(); ++i) {
      double d = g[i];
      if (decoupled)
        p[i] *= 1.0 - lr * wd;
      else
        d += wd * p[i];
      m[i] = beta1 * m[i] + (1.0 - beta1) * d;
      v[i] = beta2 * v[i] + (1.0 - beta2) * d * d;
      const double m_hat = m[i] / (1.0 - std::pow(beta1, t));
      const double v_hat = v[i] / (1.0 - std::pow(beta2, t));
      p[i] -= lr * m_hat / (std::sqrt(v_hat) + eps);
    }
  }
};

struct RmspropRef {
  double lr, alpha, eps, wd, momentum;
  bool centered;
  Vec sq, ga, buf;
  void operator()(Vec& p, const Vec& g, int) {
    sq.resize(p.size(), 0.0);
    ga.resize(p.size(), 0.0);
    buf.resize(p.size(), 0.0);
    for (std::size_t i = 0; i < p.size(); ++i) {
      const double d = g[i] + wd * p[i];
      sq[i] = alpha * sq[i] + (1.0 - alpha) * d * d;
      double var = sq[i];
      if (centered) {
        ga[i] = alpha * ga[i] + (1.0 - alpha) * d;
        var -= ga[i] * ga[i];
      }
      const double step = d / (std::sqrt(var) + eps);
      if (momentum > 0.0) {
        buf[i] = momentum * buf[i] + step;
        p[i] -= lr * buf[i];
      } else {
        p[i] -= lr * step;
      }
    }
  }
};

TEST(Sgd, ThreeStepsMatchScalarReference) {
  struct Case {
    float momentum, wd;
    bool nesterov;
  };
  for (const Case c : {Case{0.0f, 0.0f, false}, Case{0.0f, 0.1f, false}, Case{0.9f, 0.0f, false},
                       Case{0.9f, 0.1f, false}, Case{0.8f, 0.0f, true}, Case{0.8f, 0.05f, true}}) {
    SCOPED_TRACE(::testing::Message()
                 << "momentum " << c.momentum << " wd " << c.wd << " nesterov " << c.nesterov);
    Tensor p = start_param();
    Sgd opt({{"p", p}}, 0.05f, c.momentum, c.nesterov, c.wd);
    expect_matches_reference(opt, p, SgdRef{0.05, c.momentum, c.wd, c.nesterov, {}});
  }
}

TEST(Adam, ThreeStepsMatchScalarReference) {
  for (const bool decoupled : {false, true}) {
    for (const float wd : {0.0f, 0.1f}) {
      SCOPED_TRACE(::testing::Message() << "decoupled " << decoupled << " wd " << wd);
      Tensor p = start_param();
      Adam opt({{"p", p}}, 0.01f, 0.8f, 0.95f, 1e-3f, wd, decoupled);
      expect_matches_reference(opt, p, AdamRef{0.01, 0.8, 0.95, 1e-3, wd, decoupled, {}, {}});
    }
  }
}

TEST(Rmsprop, ThreeStepsMatchScalarReference) {
  struct Case {
    float wd, momentum;
    bool centered;
  };
  for (const Case c : {Case{0.0f, 0.0f, false}, Case{0.1f, 0.0f, false}, Case{0.0f, 0.9f, false},
                       Case{0.0f, 0.0f, true}, Case{0.1f, 0.5f, true}}) {
    SCOPED_TRACE(::testing::Message()
                 << "wd " << c.wd << " momentum " << c.momentum << " centered " << c.centered);
    Tensor p = start_param();
    Rmsprop opt({{"p", p}}, 0.01f, 0.9f, 1e-3f, c.wd, c.momentum, c.centered);
    expect_matches_reference(opt, p,
                             RmspropRef{0.01, 0.9, 1e-3, c.wd, c.momentum, c.centered, {}, {}, {}});
  }
}

// LARS and LAMB on one layer: a (2, 3) weight, adapted per tensor, and a (3) bias, which is
// left out of the trust ratio and of weight decay. The references work on whole tensors.
const std::vector<Vec> kLayerGrads = {{0.5, -1.0, 2.0, 0.1, 0.0, -0.3},
                                      {0.25, 2.0, -0.5, -0.2, 0.4, 0.1},
                                      {-1.0, 0.5, 1.5, 0.3, -0.1, 0.2}};
const Vec kLayerStart = {1.0, -2.0, 0.5, 0.3, 0.0, -0.7};
const std::vector<Vec> kBiasGrads = {{0.2, -0.4, 0.1}, {-0.3, 0.1, 0.5}, {0.05, 0.2, -0.1}};
const Vec kBiasStart = {0.1, -0.1, 0.2};

double norm(const Vec& v) {
  double s = 0.0;
  for (double x : v) s += x * x;
  return std::sqrt(s);
}

struct LarsRef {  // You, Gitman and Ginsburg, Algorithm 1, with Intel-Caffe's momentum form
  double lr, momentum, wd, eta;
  bool adapted;
  Vec v;
  void operator()(Vec& p, const Vec& g, int) {
    v.resize(p.size(), 0.0);
    const double decay = adapted ? wd : 0.0;
    const double wn = norm(p), gn = norm(g);
    const double local = adapted && wn > 0 && gn > 0 ? eta * wn / (gn + decay * wn) : 1.0;
    for (std::size_t i = 0; i < p.size(); ++i) {
      v[i] = momentum * v[i] + lr * local * (g[i] + decay * p[i]);
      p[i] -= v[i];
    }
  }
};

struct LambRef {  // You et al. 2019, Algorithm 2, phi = identity
  double lr, beta1, beta2, eps, wd;
  bool adapted;
  Vec m, v;
  void operator()(Vec& p, const Vec& g, int t) {
    m.resize(p.size(), 0.0);
    v.resize(p.size(), 0.0);
    const double decay = adapted ? wd : 0.0;
    Vec r(p.size());
    for (std::size_t i = 0; i < p.size(); ++i) {
      m[i] = beta1 * m[i] + (1.0 - beta1) * g[i];
      v[i] = beta2 * v[i] + (1.0 - beta2) * g[i] * g[i];
      const double m_hat = m[i] / (1.0 - std::pow(beta1, t));
      const double v_hat = v[i] / (1.0 - std::pow(beta2, t));
      r[i] = m_hat / (std::sqrt(v_hat) + eps) + decay * p[i];
    }
    const double wn = norm(p), rn = norm(r);
    const double ratio = adapted && wn > 0 && rn > 0 ? wn / rn : 1.0;
    for (std::size_t i = 0; i < p.size(); ++i) p[i] -= lr * ratio * r[i];
  }
};

Tensor tensor_of(const Vec& v, const Shape& shape) {
  return Tensor::from_vector(shape, std::vector<float>(v.begin(), v.end()));
}

// Three steps of `opt` over a (2, 3) weight and a (3) bias, each checked against its reference.
template <typename Ref>
void expect_layer_matches(Optimizer& opt, Tensor& w, Tensor& b, Ref w_ref, Ref b_ref) {
  Vec we = kLayerStart, be = kBiasStart;
  for (int t = 1; t <= 3; ++t) {
    w.set_grad(tensor_of(kLayerGrads[t - 1], {2, 3}));
    b.set_grad(tensor_of(kBiasGrads[t - 1], {3}));
    opt.step();
    w_ref(we, kLayerGrads[t - 1], t);
    b_ref(be, kBiasGrads[t - 1], t);
    EXPECT_TRUE(near(w, we)) << "weight, step " << t;
    EXPECT_TRUE(near(b, be)) << "bias, step " << t;
  }
}

TEST(Lars, ThreeStepsMatchScalarReferenceAndLeaveBiasesUnscaled) {
  for (const float wd : {0.0f, 0.05f}) {
    SCOPED_TRACE(::testing::Message() << "wd " << wd);
    Tensor w = tensor_of(kLayerStart, {2, 3}).set_requires_grad(true);
    Tensor b = tensor_of(kBiasStart, {3}).set_requires_grad(true);
    Lars opt({{"w", w}, {"b", b}}, 0.5f, 0.9f, wd, 0.02f);
    expect_layer_matches(opt, w, b, LarsRef{0.5, 0.9, wd, 0.02, true, {}},
                         LarsRef{0.5, 0.9, wd, 0.02, false, {}});
  }
}

TEST(Lamb, ThreeStepsMatchScalarReferenceAndLeaveBiasesUnscaled) {
  for (const float wd : {0.0f, 0.1f}) {
    SCOPED_TRACE(::testing::Message() << "wd " << wd);
    Tensor w = tensor_of(kLayerStart, {2, 3}).set_requires_grad(true);
    Tensor b = tensor_of(kBiasStart, {3}).set_requires_grad(true);
    Lamb opt({{"w", w}, {"b", b}}, 0.01f, 0.8f, 0.95f, 1e-3f, wd);
    expect_layer_matches(opt, w, b, LambRef{0.01, 0.8, 0.95, 1e-3, wd, true, {}, {}},
                         LambRef{0.01, 0.8, 0.95, 1e-3, wd, false, {}, {}});
  }
}

TEST(Lars, FirstStepByHand) {
  // w = (3, 4): ||w|| = 5; g = (0, 1): ||g|| = 1; wd 0, eta 0.1: local lr 0.1 * 5 / 1 = 0.5;
  // lr 2: v = 2 * 0.5 * g = (0, 1), w = (3, 3).
  Tensor w = Tensor::from_vector({1, 2}, {3.0f, 4.0f}).set_requires_grad(true);
  Lars opt({{"w", w}}, 2.0f, 0.9f, 0.0f, 0.1f);
  w.set_grad(Tensor::from_vector({1, 2}, {0.0f, 1.0f}));
  opt.step();
  EXPECT_TRUE(near(w, {3.0, 3.0}));
}

TEST(LarsAndLamb, AZeroWeightOrGradientTakesTrustRatioOne) {
  // A zero weight (a freshly zeroed layer): LARS moves it by lr * g, LAMB by lr * r.
  Tensor w = Tensor::zeros({2, 2}).set_requires_grad(true);
  Lars lars({{"w", w}}, 0.1f, 0.0f, 0.0f, 0.001f);
  w.set_grad(Tensor::from_vector({2, 2}, {1.0f, -1.0f, 2.0f, 0.0f}));
  lars.step();
  EXPECT_TRUE(near(w, {-0.1, 0.1, -0.2, 0.0}));
  Tensor u = Tensor::zeros({2, 2}).set_requires_grad(true);
  Lamb lamb({{"u", u}}, 0.1f, 0.9f, 0.999f, 1e-6f, 0.0f);
  u.set_grad(Tensor::from_vector({2, 2}, {1.0f, -1.0f, 2.0f, 0.0f}));
  lamb.step();  // first step: r = g / (|g| + eps) = sign(g)
  EXPECT_TRUE(near(u, {-0.1, 0.1, -0.1, 0.0}, 1e-4));
}

bool same_bits(const Tensor& a, const Tensor& b);  // below

// 0.5 * sum((w - c)^2) for a (4, 4) weight: LARS and LAMB adapt it as a layer.
Tensor layer_loss(const Tensor& w) {
  static const Tensor c = testing::random_tensor({4, 4}, 14, -1.0f, 1.0f);
  const Tensor d = sub(w, c);
  return affine(sum(mul(d, d)), 0.5f);
}

TEST(LarsAndLamb, ResumeBitIdenticallyOnALayer) {
  for (const char* name : {"lars", "lamb"}) {
    SCOPED_TRACE(name);
    OptimizerConfig c = optimizer_defaults(name);
    c.lr = std::string(name) == "lars" ? 5.0f : 0.05f;
    const auto run = [&](Optimizer& opt, Tensor& w, int steps) {
      for (int t = 0; t < steps; ++t) {
        opt.zero_grad();
        layer_loss(w).backward();
        opt.step();
      }
    };
    Tensor w = testing::random_tensor({4, 4}, 22, -2.0f, 2.0f).set_requires_grad(true);
    const float initial = layer_loss(w).item();
    auto first = make_optimizer(c, {{"w", w}});
    run(*first, w, 4);
    const NamedTensors saved = first->state();
    const Tensor saved_w = w.detach().clone();
    run(*first, w, 4);
    EXPECT_LT(layer_loss(w).item(), initial) << "it descends";
    Tensor w2 = saved_w.clone().set_requires_grad(true);
    auto second = make_optimizer(c, {{"w", w2}});
    second->load_state(saved);
    run(*second, w2, 4);
    EXPECT_TRUE(same_bits(w, w2));
  }
}

// --- optimizer mechanics ---------------------------------------------------------------------

TEST(Optimizer, SkipsParametersWithoutGradientAndZeroesGradients) {
  Tensor a = param({1.0f, 2.0f}), b = param({3.0f});
  Adam opt({{"a", a}, {"b", b}}, 0.1f);
  a.set_grad(grad_of({1.0, 1.0}));
  opt.step();
  EXPECT_TRUE(near(b, {3.0}, 0.0));
  EXPECT_TRUE(near(a, {0.9, 1.9}, 1e-5));
  EXPECT_EQ(opt.steps(), 1);
  for (const auto& [name, t] : opt.state()) {
    if (name == "adam.param_step.b") {
      EXPECT_EQ(t.data<std::int32_t>()[0], 0);
    }
  }
  // b gets its first update later: its own bias correction starts at step 1 again.
  b.set_grad(grad_of({-2.0}));
  opt.zero_grad();
  EXPECT_TRUE(near(a.grad(), {0.0, 0.0}, 0.0));
  EXPECT_TRUE(near(b.grad(), {0.0}, 0.0));
  b.set_grad(grad_of({-2.0}));
  opt.step();
  EXPECT_TRUE(near(b, {3.1}, 1e-5));
}

TEST(Optimizer, LearningRateCanBeChanged) {
  Tensor p = param({1.0f});
  Sgd opt({{"p", p}}, 0.1f);
  opt.set_lr(0.5f);
  EXPECT_EQ(opt.lr(), 0.5f);
  p.set_grad(grad_of({1.0}));
  opt.step();
  EXPECT_TRUE(near(p, {0.5}, 1e-6));
  EXPECT_THROW(opt.set_lr(-1.0f), InvalidArgument);
  EXPECT_THROW(opt.set_lr(std::nanf("")), InvalidArgument);
}

TEST(Optimizer, DefaultsFollowPytorch) {
  EXPECT_FLOAT_EQ(optimizer_defaults("sgd").lr, 0.01f);
  EXPECT_FLOAT_EQ(optimizer_defaults("adam").lr, 0.001f);
  EXPECT_FLOAT_EQ(optimizer_defaults("adam").weight_decay, 0.0f);
  EXPECT_FLOAT_EQ(optimizer_defaults("adamw").weight_decay, 0.01f);
  EXPECT_FLOAT_EQ(optimizer_defaults("rmsprop").alpha, 0.99f);
  for (const char* name : {"sgd", "adam", "adamw", "rmsprop", "lars", "lamb"}) {
    Tensor p = param({1.0f});
    auto opt = make_optimizer(optimizer_defaults(name), {{"p", p}});
    EXPECT_EQ(opt->name(), name);
  }
}

// 0.5 * sum(h * (x - c)^2) with curvatures h in [0.5, 2].
Tensor quadratic(const Tensor& x) {
  static const Tensor h = testing::random_tensor({16}, 11, 0.5f, 2.0f);
  static const Tensor c = testing::random_tensor({16}, 12, -1.0f, 1.0f);
  const Tensor d = sub(x, c);
  return affine(sum(mul(h, mul(d, d))), 0.5f);
}

void train(Optimizer& opt, Tensor& x, int steps, const LrSchedule* schedule = nullptr,
           int first_step = 0) {
  for (int t = 0; t < steps; ++t) {
    if (schedule) opt.set_lr(schedule->lr_at(first_step + t));
    opt.zero_grad();
    quadratic(x).backward();
    opt.step();
  }
}

OptimizerConfig config(const std::string& name, float lr) {
  OptimizerConfig c = optimizer_defaults(name);
  c.lr = lr;
  return c;
}

std::vector<OptimizerConfig> configs_to_try() {
  OptimizerConfig sgd = config("sgd", 0.1f), nesterov = config("sgd", 0.05f);
  nesterov.momentum = 0.9f;
  nesterov.nesterov = true;
  nesterov.weight_decay = 1e-4f;
  OptimizerConfig adam = config("adam", 0.05f), adamw = config("adamw", 0.05f);
  adam.weight_decay = 1e-4f;
  OptimizerConfig rms = config("rmsprop", 0.05f), rms_centered = config("rmsprop", 0.05f);
  rms_centered.centered = true;
  rms_centered.momentum = 0.5f;
  OptimizerConfig lars = config("lars", 0.1f), lamb = config("lamb", 0.05f);
  return {sgd, nesterov, adam, adamw, rms, rms_centered, lars, lamb};
}

TEST(Optimizer, EachMinimizesAQuadratic) {
  ScheduleConfig sc;
  sc.kind = ScheduleKind::cosine;
  sc.total_steps = 300;
  for (const OptimizerConfig& c : configs_to_try()) {
    SCOPED_TRACE(optimizer_name(c.kind));
    Tensor x = testing::random_tensor({16}, 13, -3.0f, 3.0f).set_requires_grad(true);
    const float initial = quadratic(x).item();
    auto opt = make_optimizer(c, {{"x", x}});
    sc.base_lr = c.lr;
    const auto schedule = make_schedule(sc);
    train(*opt, x, 300, schedule.get());
    const float final_loss = quadratic(x).item();
    EXPECT_LT(final_loss, initial / 100.0f) << "initial " << initial << " final " << final_loss;
  }
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.raw(), b.raw(), static_cast<std::size_t>(a.numel()) * 4) == 0;
}

TEST(Optimizer, ResumingFromSavedStateIsBitIdentical) {
  ScheduleConfig sc;
  sc.kind = ScheduleKind::cosine;
  sc.warmup_steps = 3;
  sc.total_steps = 10;
  for (const OptimizerConfig& c : configs_to_try()) {
    SCOPED_TRACE(optimizer_name(c.kind));
    sc.base_lr = c.lr;
    const auto schedule = make_schedule(sc);
    Tensor x = testing::random_tensor({16}, 21, -2.0f, 2.0f).set_requires_grad(true);
    Tensor unused = param({1.0f, 2.0f});  // never gets a gradient
    auto first = make_optimizer(c, {{"x", x}, {"unused", unused}});
    train(*first, x, 5, schedule.get());
    const NamedTensors saved = first->state();
    const Tensor saved_x = x.detach().clone();
    train(*first, x, 5, schedule.get(), 5);

    Tensor y = saved_x.clone().set_requires_grad(true);
    Tensor unused2 = param({1.0f, 2.0f});
    auto second = make_optimizer(c, {{"x", y}, {"unused", unused2}});
    second->load_state(saved);
    EXPECT_EQ(second->steps(), 5);
    train(*second, y, 5, schedule.get(), 5);

    EXPECT_TRUE(same_bits(x, y));
    EXPECT_FALSE(same_bits(x, saved_x));
    EXPECT_EQ(first->steps(), second->steps());
    const NamedTensors s1 = first->state(), s2 = second->state();
    ASSERT_EQ(s1.size(), s2.size());
    for (std::size_t i = 0; i < s1.size(); ++i) {
      EXPECT_EQ(s1[i].first, s2[i].first);
      EXPECT_TRUE(same_bits(s1[i].second, s2[i].second)) << s1[i].first;
    }
  }
}

TEST(Optimizer, StateHasStableNames) {
  Tensor w = param({1.0f, 2.0f});
  Adam adam({{"fc.w", w}}, 0.1f);
  std::vector<std::string> names;
  for (const auto& [name, t] : adam.state()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"adam.step", "adam.lr", "adam.exp_avg.fc.w",
                                             "adam.exp_avg_sq.fc.w", "adam.param_step.fc.w"}));
  Sgd sgd({{"fc.w", w}}, 0.1f, 0.9f);
  names.clear();
  for (const auto& [name, t] : sgd.state()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"sgd.step", "sgd.lr", "sgd.momentum_buffer.fc.w"}));
}

std::string load_error(Optimizer& opt, const NamedTensors& state) {
  try {
    opt.load_state(state);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no ConfigError)";
}

TEST(Optimizer, LoadingBadStateNamesTheEntry) {
  Tensor x = param({1.0f, 2.0f});
  Adam opt({{"x", x}}, 0.1f);
  x.set_grad(grad_of({1.0, 1.0}));
  opt.step();
  NamedTensors good = opt.state();

  NamedTensors missing;
  for (const auto& e : good)
    if (e.first != "adam.exp_avg_sq.x") missing.push_back(e);
  EXPECT_NE(load_error(opt, missing).find("'adam.exp_avg_sq.x' is missing"), std::string::npos);

  NamedTensors misshaped = good;
  for (auto& e : misshaped)
    if (e.first == "adam.exp_avg.x") e.second = Tensor::zeros({3});
  EXPECT_NE(load_error(opt, misshaped).find("'adam.exp_avg.x'"), std::string::npos);
  EXPECT_EQ(opt.steps(), 1);  // nothing was changed

  Sgd sgd({{"x", x}}, 0.1f, 0.9f);
  EXPECT_NE(load_error(sgd, good).find("'sgd.step' is missing"), std::string::npos);
}

TEST(Optimizer, ResultsDoNotDependOnThreadCount) {
  const int threads = ops::num_threads();
  std::vector<Tensor> results;
  for (const int n : {1, 2}) {
    ops::set_num_threads(n);
    Tensor x = testing::random_tensor({100000}, 31).set_requires_grad(true);
    auto opt = make_optimizer(config("adamw", 0.01f), {{"x", x}});
    for (int t = 0; t < 3; ++t) {
      x.set_grad(testing::random_tensor({100000}, 40 + t));
      opt->step();
    }
    results.push_back(x.detach());
  }
  ops::set_num_threads(threads);
  EXPECT_TRUE(same_bits(results[0], results[1]));
}

// --- bad arguments ---------------------------------------------------------------------------

TEST(Optimizer, BadConfigThrows) {
  Tensor p = param({1.0f});
  try {
    (void)parse_optimizer("adagrad");
    ADD_FAILURE() << "no ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("sgd, adam, adamw, rmsprop, lars, lamb"),
              std::string::npos);
  }
  EXPECT_THROW(optimizer_defaults("adagrad"), ConfigError);

  auto with = [&](const char* name, const std::function<void(OptimizerConfig&)>& edit) {
    OptimizerConfig cfg = optimizer_defaults(name);
    edit(cfg);
    return [cfg, &p] { make_optimizer(cfg, {{"p", p}}); };
  };
  EXPECT_THROW(with("sgd", [](auto& x) { x.lr = -0.1f; })(), ConfigError);
  EXPECT_THROW(with("sgd", [](auto& x) { x.nesterov = true; })(), ConfigError);
  EXPECT_THROW(with("sgd", [](auto& x) { x.momentum = -0.5f; })(), ConfigError);
  EXPECT_THROW(with("adam", [](auto& x) { x.beta1 = 1.0f; })(), ConfigError);
  EXPECT_THROW(with("adamw", [](auto& x) { x.beta2 = -0.1f; })(), ConfigError);
  EXPECT_THROW(with("adam", [](auto& x) { x.eps = -1.0f; })(), ConfigError);
  EXPECT_THROW(with("adamw", [](auto& x) { x.weight_decay = std::nanf(""); })(), ConfigError);
  EXPECT_THROW(with("rmsprop", [](auto& x) { x.alpha = 1.5f; })(), ConfigError);
  EXPECT_THROW(with("lars", [](auto& x) { x.trust_coefficient = 0.0f; })(), ConfigError);
  EXPECT_THROW(with("lars", [](auto& x) { x.momentum = -0.1f; })(), ConfigError);
  EXPECT_THROW(with("lamb", [](auto& x) { x.beta1 = 1.0f; })(), ConfigError);
  EXPECT_THROW(with("lamb", [](auto& x) { x.weight_decay = -1.0f; })(), ConfigError);
}

TEST(Optimizer, BadParametersThrow) {
  Tensor p = param({1.0f}), q = param({2.0f});
  EXPECT_THROW(Sgd({{"p", p}, {"p", q}}, 0.1f), InvalidArgument);  // duplicate name
  EXPECT_THROW(Sgd({{"", p}}, 0.1f), InvalidArgument);
  EXPECT_THROW(Sgd({{"p", p}, {"q", p}}, 0.1f), InvalidArgument);  // same tensor twice
  EXPECT_THROW(Sgd({{"n", Tensor::from_vector({1}, {1.0f})}}, 0.1f), InvalidArgument);
  EXPECT_THROW(Sgd({{"u", Tensor()}}, 0.1f), InvalidArgument);
  Tensor non_leaf = affine(p, 2.0f);
  EXPECT_THROW(Sgd({{"y", non_leaf}}, 0.1f), InvalidArgument);
}

}  // namespace
}  // namespace epoch::optim
