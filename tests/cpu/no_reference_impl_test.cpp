// No zoo model runs a slow implementation on the fast path: every model of the zoo takes one
// training step (forward, loss, backward, optimizer) and one inference forward under a
// KernelTrace, at batch 8 (2 for the ImageNet-size models) and at its recipe's and the benchmark's
// default batch where that is cheap (oneDNN's choice of implementation can depend on the sizes),
// and every record where ops::is_reference_impl holds fails the test, naming model, batch, phase,
// op and impl.
//
// CTest runs this test twice (tests/CMakeLists.txt): natively, and with ONEDNN_MAX_CPU_ISA=AVX2,
// the dispatch an AVX2-only machine gets. oneDNN reads that variable once, at its first use, so
// it must be set in the environment of the whole test process, not from inside a test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "epoch/autograd/autograd.h"
#include "epoch/bench/compute_bench.h"
#include "epoch/models/zoo.h"
#include "epoch/nn/layers.h"
#include "epoch/ops/activation.h"
#include "epoch/ops/backend.h"
#include "epoch/ops/linear.h"
#include "epoch/optim/optimizer.h"
#include "epoch/train/recipe.h"
#include "epoch/train/step.h"
#include "testing/testing.h"

namespace epoch {
namespace {

// The batches a model is checked at: 8, then its recipe's and the benchmark's default, each
// only while the forward pass of the batch stays under this many FLOPs (deep-cnn at 32 would
// take seconds on two cores).
constexpr double kCheapForwardFlops = 16e9;

std::vector<std::int64_t> batches_for(const models::ModelSpec& spec, std::int64_t flops) {
  // batch 8; 2 for the ImageNet-size models (over 1 GFLOP a sample), which run the same
  // layer kinds at every batch
  std::vector<std::int64_t> out{flops > 1000000000 ? 2 : 8};
  for (std::int64_t b : {train::recipe_for(spec.name).run.batch_size, bench::ComputeBenchConfig{}.batch_size}) {
    const bool seen = std::find(out.begin(), out.end(), b) != out.end();
    if (!seen && static_cast<double>(flops) * static_cast<double>(b) <= kCheapForwardFlops)
      out.push_back(b);
  }
  return out;
}

// "  batch 8, training: lrn_forward -> onednn:lrn_ref:any" for each slow record, once each.
void collect_slow(const std::vector<ops::KernelRecord>& records, const std::string& where,
                  std::vector<std::string>& slow) {
  for (const ops::KernelRecord& r : records) {
    if (!ops::is_reference_impl(r.impl)) continue;
    const std::string line = "  " + where + ": " + r.op + " -> " + r.impl;
    if (std::find(slow.begin(), slow.end(), line) == slow.end()) slow.push_back(line);
  }
}

#if EPOCH_WITH_ONEDNN
// The kernels of this change name themselves: the dense layer's oneDNN matmuls (and the bias
// gradient's column sum), and the vectorized sigmoid.
TEST(KernelTrace, DenseLayersAndSigmoidNameTheirKernels) {
  const ops::ContextGuard context(ops::Context{ops::CpuKernels::fast, 0});
  const Tensor x = testing::random_tensor({16, 64}, 1), w = testing::random_tensor({32, 64}, 2);
  const Tensor b = testing::random_tensor({32}, 3);
  ops::KernelTrace trace;
  const Tensor y = ops::linear_forward(x, w, b);
  (void)ops::linear_backward(y, x, w, true);
  (void)ops::matmul(x, w, false, true);
  (void)ops::sigmoid_forward(y);
  const auto& r = trace.records();
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].op, "linear_forward");
  EXPECT_EQ(r[0].impl.rfind("onednn:", 0), 0u) << r[0].impl;
  EXPECT_EQ(r[0].impl.find(" + "), std::string::npos) << r[0].impl;  // one matmul
  // dw and dx: two matmuls, then the bias gradient.
  EXPECT_EQ(r[1].impl.rfind("onednn:", 0), 0u) << r[1].impl;
  EXPECT_NE(r[1].impl.find(" + onednn:"), std::string::npos) << r[1].impl;
  EXPECT_NE(r[1].impl.find(" + epoch:bias_sum"), std::string::npos) << r[1].impl;
  EXPECT_EQ(r[2].op, "matmul");
  EXPECT_EQ(r[2].impl.rfind("onednn:", 0), 0u) << r[2].impl;
  EXPECT_EQ(r[3].impl, "epoch:sigmoid_vexp");
  for (const ops::KernelRecord& k : r) EXPECT_FALSE(ops::is_reference_impl(k.impl)) << k.impl;
}
#endif

class NoReferenceImpl : public ::testing::TestWithParam<std::string> {};

TEST_P(NoReferenceImpl, TrainingStepAndInference) {
#if !EPOCH_WITH_ONEDNN
  GTEST_SKIP() << "built without oneDNN: the reference kernels are the only CPU kernels";
#else
  const models::ModelSpec& spec = models::find_model(GetParam());
  const ops::ContextGuard context(ops::Context{ops::CpuKernels::fast, 0});
  std::vector<std::string> slow;
  std::shared_ptr<models::Model> model = models::build_model(spec.name);
  nn::initialize(*model, 1);
  train::Step step(*model, train::recipe_for(spec.name).optimizer, nullptr, 1);
  // A video model runs the same layers every frame: two frames of one clip show them all.
  Shape input = spec.input;
  if (spec.task == models::Task::frame_prediction) input[0] = 2;
  const std::vector<std::int64_t> batches = spec.task == models::Task::frame_prediction
                                                ? std::vector<std::int64_t>{1}
                                                : batches_for(spec, model->flops(input));
  for (const std::int64_t batch : batches) {
    Shape shape{batch};
    shape.insert(shape.end(), input.begin(), input.end());
    const Tensor x = testing::random_tensor(shape, 11, 0.0f, 1.0f);
    const std::int64_t classes = spec.task == models::Task::classification ? spec.outputs : 2;
    std::vector<std::int32_t> labels(static_cast<std::size_t>(batch));
    for (std::size_t i = 0; i < labels.size(); ++i)
      labels[i] = static_cast<std::int32_t>(i % static_cast<std::size_t>(classes));
    const Tensor y = Tensor::from_ints({batch}, labels);
    const std::string at = "batch " + std::to_string(batch);
    {
      model->train(true);
      ops::KernelTrace trace;
      const Tensor loss = step.run(x, y, 0, 0);
      EXPECT_TRUE(std::isfinite(loss.item())) << spec.name << " " << at;
      ASSERT_FALSE(trace.records().empty()) << spec.name << ": the trace saw no kernel";
      collect_slow(trace.records(), at + ", training", slow);
    }
    {
      model->train(false);
      autograd::NoGradGuard no_grad;
      ops::KernelTrace trace;
      (void)model->forward(x);
      collect_slow(trace.records(), at + ", inference", slow);
    }
  }
  std::ostringstream msg;
  for (const std::string& s : slow) msg << "\n" << s;
  EXPECT_TRUE(slow.empty()) << spec.name << " (oneDNN ISA " << ops::onednn_cpu_isa()
                            << ") ran reference implementations:" << msg.str();
#endif
}

std::vector<std::string> zoo_names() {
  std::vector<std::string> names;
  for (const models::ModelSpec& s : models::model_specs()) names.push_back(s.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(Zoo, NoReferenceImpl, ::testing::ValuesIn(zoo_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string n = info.param;
                           for (char& ch : n)
                             if (ch == '-') ch = '_';
                           return n;
                         });

}  // namespace
}  // namespace epoch
