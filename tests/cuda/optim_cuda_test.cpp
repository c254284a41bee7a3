// CUDA optimizer updates against the CPU kernels: every optimizer and option set runs three
// steps on the same parameters and gradients on both devices; parameters and the named state
// (moments, buffers, host-side step counters) must agree, also after resuming from CPU state.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cuda/cuda_testing.h"
#include "epoch/optim/optimizer.h"
#include "testing/testing.h"

namespace epoch {
namespace {

using testing::allclose;
using testing::on_cuda;
using testing::random_tensor;
using OptimCuda = testing::CudaParityTest;

constexpr float kAtol = 1e-6f, kRtol = 1e-5f;

// Shapes below, at and well above one 256-thread block.
const std::vector<Shape> kShapes = {{7}, {16, 16}, {5, 301}};

std::vector<optim::OptimizerConfig> configs() {
  std::vector<optim::OptimizerConfig> out;
  auto add = [&](const std::string& name, auto&& edit) {
    optim::OptimizerConfig c = optim::optimizer_defaults(name);
    c.lr = 0.05f;
    edit(c);
    out.push_back(c);
  };
  add("sgd", [](optim::OptimizerConfig&) {});
  add("sgd", [](optim::OptimizerConfig& c) {
    c.momentum = 0.9f;
    c.weight_decay = 0.01f;
  });
  add("sgd", [](optim::OptimizerConfig& c) {
    c.momentum = 0.8f;
    c.nesterov = true;
  });
  add("adam", [](optim::OptimizerConfig&) {});
  add("adam", [](optim::OptimizerConfig& c) { c.weight_decay = 0.02f; });
  add("adamw", [](optim::OptimizerConfig& c) { c.weight_decay = 0.1f; });
  add("rmsprop", [](optim::OptimizerConfig&) {});
  add("rmsprop", [](optim::OptimizerConfig& c) {
    c.momentum = 0.9f;
    c.weight_decay = 0.01f;
  });
  add("rmsprop", [](optim::OptimizerConfig& c) {
    c.centered = true;
    c.momentum = 0.5f;
  });
  return out;
}

std::string describe(const optim::OptimizerConfig& c) {
  return std::string(optimizer_name(c.kind)) + " momentum " + std::to_string(c.momentum) +
         " nesterov " + std::to_string(c.nesterov) + " wd " + std::to_string(c.weight_decay) +
         " centered " + std::to_string(c.centered);
}

// The same starting parameters on device d.
optim::NamedTensors make_params(Device d) {
  optim::NamedTensors params;
  for (std::size_t i = 0; i < kShapes.size(); ++i)
    params.emplace_back(std::string("p").append(std::to_string(i)),
                        random_tensor(kShapes[i], 900 + i).to(d).set_requires_grad(true));
  return params;
}

// Gradients of step t (1-based) for every parameter, on device d.
void set_grads(optim::NamedTensors& params, int t, Device d) {
  for (std::size_t i = 0; i < params.size(); ++i)
    params[i].second.set_grad(
        random_tensor(kShapes[i], 1000 + 10 * static_cast<std::uint64_t>(t) + i, -2.0f, 2.0f)
            .to(d));
}

::testing::AssertionResult same_state(const optim::NamedTensors& a, const optim::NamedTensors& e) {
  if (a.size() != e.size()) return ::testing::AssertionFailure() << "state sizes differ";
  for (std::size_t k = 0; k < a.size(); ++k) {
    if (a[k].first != e[k].first)
      return ::testing::AssertionFailure() << a[k].first << " vs " << e[k].first;
    if (!a[k].second.device().is_cpu())
      return ::testing::AssertionFailure() << a[k].first << " is not a host copy";
    if (e[k].second.dtype() == DType::i32) {
      if (a[k].second.data<std::int32_t>()[0] != e[k].second.data<std::int32_t>()[0])
        return ::testing::AssertionFailure() << a[k].first << " counters differ";
      continue;
    }
    ::testing::AssertionResult r = allclose(a[k].second, e[k].second, kAtol, kRtol);
    if (!r) return r << " (" << a[k].first << ")";
  }
  return ::testing::AssertionSuccess();
}

TEST_F(OptimCuda, ThreeStepsMatchCpu) {
  for (const optim::OptimizerConfig& c : configs()) {
    SCOPED_TRACE(describe(c));
    optim::NamedTensors cpu_params = make_params(Device::cpu());
    optim::NamedTensors cuda_params = make_params(Device::cuda());
    auto cpu_opt = optim::make_optimizer(c, cpu_params);
    auto cuda_opt = optim::make_optimizer(c, cuda_params);
    for (int t = 1; t <= 3; ++t) {
      set_grads(cpu_params, t, Device::cpu());
      set_grads(cuda_params, t, Device::cuda());
      cpu_opt->step();
      cuda_opt->step();
      for (std::size_t i = 0; i < cpu_params.size(); ++i) {
        ASSERT_TRUE(cuda_params[i].second.device().is_cuda());
        EXPECT_TRUE(allclose(cuda_params[i].second, cpu_params[i].second, kAtol, kRtol))
            << "step " << t << ", " << cpu_params[i].first;
      }
    }
    EXPECT_EQ(cuda_opt->steps(), 3);
    EXPECT_TRUE(same_state(cuda_opt->state(), cpu_opt->state()));
  }
}

TEST_F(OptimCuda, ParametersWithoutGradientsKeepTheirState) {
  // Adam's per-parameter step counters live on the host: a parameter skipped in a step must
  // keep its counter (and bias correction) on both devices alike.
  optim::OptimizerConfig c = optim::optimizer_defaults("adam");
  optim::NamedTensors cpu_params = make_params(Device::cpu());
  optim::NamedTensors cuda_params = make_params(Device::cuda());
  auto cpu_opt = optim::make_optimizer(c, cpu_params);
  auto cuda_opt = optim::make_optimizer(c, cuda_params);
  for (int t = 1; t <= 3; ++t) {
    set_grads(cpu_params, t, Device::cpu());
    set_grads(cuda_params, t, Device::cuda());
    if (t == 2) {  // parameter 1 has no gradient in step 2
      cpu_params[1].second.set_grad(Tensor());
      cuda_params[1].second.set_grad(Tensor());
    }
    cpu_opt->step();
    cuda_opt->step();
  }
  for (std::size_t i = 0; i < cpu_params.size(); ++i)
    EXPECT_TRUE(allclose(cuda_params[i].second, cpu_params[i].second, kAtol, kRtol));
  EXPECT_TRUE(same_state(cuda_opt->state(), cpu_opt->state()));
}

TEST_F(OptimCuda, ResumesFromCpuState) {
  // Two steps on the CPU, the state loaded into a CUDA optimizer, one more step on each.
  for (const optim::OptimizerConfig& c : configs()) {
    SCOPED_TRACE(describe(c));
    optim::NamedTensors cpu_params = make_params(Device::cpu());
    auto cpu_opt = optim::make_optimizer(c, cpu_params);
    for (int t = 1; t <= 2; ++t) {
      set_grads(cpu_params, t, Device::cpu());
      cpu_opt->step();
    }
    optim::NamedTensors cuda_params;
    for (const auto& [name, p] : cpu_params)
      cuda_params.emplace_back(name, p.detach().to(Device::cuda()).set_requires_grad(true));
    auto cuda_opt = optim::make_optimizer(c, cuda_params);
    cuda_opt->load_state(cpu_opt->state());
    EXPECT_EQ(cuda_opt->steps(), 2);
    set_grads(cpu_params, 3, Device::cpu());
    set_grads(cuda_params, 3, Device::cuda());
    cpu_opt->step();
    cuda_opt->step();
    for (std::size_t i = 0; i < cpu_params.size(); ++i)
      EXPECT_TRUE(allclose(cuda_params[i].second, cpu_params[i].second, kAtol, kRtol));
    EXPECT_TRUE(same_state(cuda_opt->state(), cpu_opt->state()));
  }
}

TEST_F(OptimCuda, HandValues) {
  // SGD with momentum 0.9, lr 0.1, constant gradient 1: buffers 1, 1.9, 2.71.
  Tensor p = on_cuda(Tensor::from_vector({2}, {1.0f, -1.0f})).set_requires_grad(true);
  optim::Sgd opt({{"p", p}}, 0.1f, 0.9f);
  for (int t = 0; t < 3; ++t) {
    p.set_grad(on_cuda(Tensor::full({2}, 1.0f)));
    opt.step();
  }
  EXPECT_TRUE(allclose(p, Tensor::from_vector({2}, {1.0f - 0.561f, -1.0f - 0.561f}), 1e-6f));
}

TEST_F(OptimCuda, GradientOnAnotherDeviceIsRejected) {
  Tensor p = on_cuda(random_tensor({3}, 950)).set_requires_grad(true);
  optim::Adam opt({{"p", p}}, 0.01f);
  p.set_grad(random_tensor({3}, 951));
  EXPECT_THROW(opt.step(), InvalidArgument);
}

}  // namespace
}  // namespace epoch
