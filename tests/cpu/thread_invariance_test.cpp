// CpuKernels::strict gives the same bits at every thread count: every entry of the parity
// table (testing/parity_cases.cpp), forward and backward, at 1, 2, 3 and 4 threads, bit for
// bit (its agreement with the reference kernels is the parity test's strict_* entries); and
// the ops whose reductions oneDNN splits across threads only at larger sizes, at the zoo's
// sizes.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "epoch/ops/backend.h"
#include "epoch/ops/conv2d.h"
#include "epoch/ops/linear.h"
#include "epoch/ops/norm.h"
#include "epoch/ops/pool.h"
#include "testing/parity.h"
#include "testing/testing.h"

namespace epoch::testing::parity {
namespace {

class ThreadInvariance : public ::testing::TestWithParam<Param> {};

TEST_P(ThreadInvariance, SameBitsAtOneToFourThreads) { check_thread_invariance(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Strict, ThreadInvariance,
                         ::testing::ValuesIn(params_for_backend("strict")), param_name);

// The op's outputs under the given kernels and thread count.
using Run = std::function<std::vector<Tensor>()>;
std::vector<Tensor> run_with(ops::CpuKernels kernels, int threads, const Run& run) {
  const ops::ContextGuard context(ops::Context{kernels, threads});
  std::vector<Tensor> out = run();
  for (Tensor& t : out) t = t.defined() ? t.contiguous() : t;
  return out;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() &&
         std::memcmp(a.f32(), b.f32(), static_cast<std::size_t>(a.numel()) * 4) == 0;
}

// Expects bit-equal outputs at 1 to 4 threads under `kernels`; returns false (without failing)
// when they differ and `expect` is false (the probe of the fast kernels).
bool invariant(ops::CpuKernels kernels, const Run& run, bool expect) {
  const std::vector<Tensor> one = run_with(kernels, 1, run);
  for (int threads = 2; threads <= 4; ++threads) {
    const std::vector<Tensor> many = run_with(kernels, threads, run);
    for (std::size_t i = 0; i < one.size(); ++i) {
      if (!one[i].defined()) continue;
      if (same_bits(many[i], one[i])) continue;
      if (expect) ADD_FAILURE() << "output " << i << " at " << threads << " threads differs";
      return false;
    }
  }
  return true;
}

struct ZooOp {
  std::string name;
  Run run;
};

std::vector<ZooOp> zoo_ops() {
  std::vector<ZooOp> ops_list;
  {  // cifar10-keras's second convolution, training batch 32
    const Tensor x = random_tensor({32, 32, 30, 30}, 1), w = random_tensor({32, 32, 3, 3}, 2);
    const Tensor dy = random_tensor({32, 32, 28, 28}, 3);
    ops_list.push_back({"conv2d_backward", [=] {
                          const ops::Conv2dGrads g =
                              ops::conv2d_backward(dy, x, w, true, ops::Conv2dParams{}, true);
                          return std::vector<Tensor>{g.dx, g.dw, g.db};
                        }});
  }
  {  // a ResNet batch norm, batch 8
    const Tensor x = random_tensor({8, 64, 56, 56}, 4), dy = random_tensor({8, 64, 56, 56}, 5);
    const Tensor gamma = random_tensor({64}, 6), beta = random_tensor({64}, 7);
    ops_list.push_back({"batch_norm", [=] {
                          Tensor rm = Tensor::zeros({64}), rv = Tensor::full({64}, 1.0f);
                          const ops::BatchNormResult f =
                              ops::batch_norm_forward(x, gamma, beta, rm, rv, true, 0.1f, 1e-5f);
                          const ops::BatchNormGrads g =
                              ops::batch_norm_backward(dy, x, gamma, f, true);
                          return std::vector<Tensor>{f.y, f.save_mean, f.save_invstd, rm,
                                                     rv,  g.dx,        g.dgamma,      g.dbeta};
                        }});
  }
  {  // AlexNet's first dense layer at batch 4, and a dense layer at batch 512
    for (const auto& [n, in, out] : {std::tuple{4, 9216, 1024}, std::tuple{512, 784, 256}}) {
      const Tensor x = random_tensor({n, in}, 8), w = random_tensor({out, in}, 9);
      const Tensor b = random_tensor({out}, 10), dy = random_tensor({n, out}, 11);
      ops_list.push_back({"linear_n" + std::to_string(n), [=] {
                            const Tensor y = ops::linear_forward(x, w, b);
                            const ops::LinearGrads g = ops::linear_backward(dy, x, w, true);
                            return std::vector<Tensor>{y, g.dx, g.dw, g.db};
                          }});
    }
  }
  {  // products in every transpose, tiled along the rows and along the columns
    for (const auto& [m, n, k] : {std::tuple{300, 130, 150}, std::tuple{90, 260, 200}})
      for (bool ta : {false, true})
        for (bool tb : {false, true}) {
          const Tensor a = random_tensor(ta ? Shape{k, m} : Shape{m, k}, 15);
          const Tensor b = random_tensor(tb ? Shape{n, k} : Shape{k, n}, 16);
          ops_list.push_back(
              {"matmul_m" + std::to_string(m) + (ta ? "_ta" : "") + (tb ? "_tb" : ""),
               [=] { return std::vector<Tensor>{ops::matmul(a, b, ta, tb)}; }});
        }
  }
  {  // AlexNet's first two convolutions, a ResNet's last stage, a batch of 1, a ResNet-50 1x1
     // bottleneck and first layer, forward and backward
    struct ConvCase {
      std::string name;
      Shape x, w;
      ops::Conv2dParams p;
    };
    const std::vector<ConvCase> convs = {
        {"alexnet_conv1",
         {8, 3, 224, 224},
         {64, 3, 11, 11},
         {.stride_h = 4, .stride_w = 4, .pad_h = 2, .pad_w = 2}},
        {"alexnet_conv2", {8, 64, 27, 27}, {192, 64, 5, 5}, {.pad_h = 2, .pad_w = 2}},
        {"resnet18_layer4", {8, 512, 7, 7}, {512, 512, 3, 3}, {.pad_h = 1, .pad_w = 1}},
        {"batch1_conv", {1, 96, 32, 40}, {192, 96, 3, 3}, {.pad_h = 1, .pad_w = 1}},
        {"resnet50_1x1", {4, 256, 56, 56}, {64, 256, 1, 1}, {}},
        {"resnet50_conv1",
         {4, 3, 224, 224},
         {64, 3, 7, 7},
         {.stride_h = 2, .stride_w = 2, .pad_h = 3, .pad_w = 3}}};
    for (const ConvCase& c : convs) {
      const Tensor x = random_tensor(c.x, 17), w = random_tensor(c.w, 18);
      const Tensor b = random_tensor({c.w[0]}, 19);
      const ops::Conv2dParams p = c.p;
      ops_list.push_back({c.name, [=] {
                            const Tensor y = ops::conv2d_forward(x, w, b, p);
                            const Tensor dy = random_tensor(y.shape(), 20);
                            const ops::Conv2dGrads g =
                                ops::conv2d_backward(dy, x, w, true, p, true);
                            return std::vector<Tensor>{y, g.dx, g.dw, g.db};
                          }});
    }
  }
  {  // LRN and max pooling at cifar10-tf's sizes, batch 32
    const Tensor x = random_tensor({32, 64, 24, 24}, 12), dy = random_tensor({32, 64, 24, 24}, 13);
    ops_list.push_back({"lrn", [=] {
                          const ops::LrnParams p{5, 1e-4f, 0.75f, 1.0f};
                          const Tensor y = ops::lrn_forward(x, p);
                          return std::vector<Tensor>{y, ops::lrn_backward(dy, x, y, p)};
                        }});
    ops_list.push_back({"max_pool", [=] {
                          ops::Pool2dParams p;
                          const ops::MaxPoolResult f = ops::max_pool2d_forward(x, p);
                          const Tensor g = random_tensor(f.y.shape(), 14);
                          return std::vector<Tensor>{f.y, ops::max_pool2d_backward(g, x, f, p)};
                        }});
  }
  return ops_list;
}

TEST(ThreadInvarianceAtZooSizes, StrictGivesTheSameBitsAtOneToFourThreads) {
  if (!ops::onednn_available()) GTEST_SKIP() << "this build has no oneDNN";
  for (const ZooOp& op : zoo_ops()) {
    SCOPED_TRACE(op.name);
    invariant(ops::CpuKernels::strict, op.run, true);
  }
}

// Which fast kernels strict must change: the ones whose bits move with the thread count (a
// record, not an expectation: oneDNN may change its partitions).
TEST(ThreadInvarianceAtZooSizes, FastKernelsThatDependOnTheThreadCount) {
  if (!ops::onednn_available()) GTEST_SKIP() << "this build has no oneDNN";
  for (const ZooOp& op : zoo_ops()) {
    const bool same = invariant(ops::CpuKernels::fast, op.run, false);
    std::printf("fast %-16s %s\n", op.name.c_str(), same ? "invariant" : "depends on threads");
  }
}

}  // namespace
}  // namespace epoch::testing::parity
