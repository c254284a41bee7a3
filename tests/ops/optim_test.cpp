// The fused optimizer update ops: each equals its CPU kernel bit for bit on flat tensors, and
// mismatched or missing state buffers are refused before anything is written.
#include "epoch/ops/optim.h"

#include <gtest/gtest.h>

#include <vector>

#include "cpu/optim_cpu.h"
#include "testing/testing.h"

namespace epoch {
namespace {

constexpr std::int64_t kN = 1000;

std::vector<float> values(const Tensor& t) { return t.to_vector(); }

TEST(OptimOps, SgdEqualsItsKernel) {
  Tensor p = testing::random_tensor({kN}, 1), buf = testing::random_tensor({kN}, 2);
  const Tensor g = testing::random_tensor({kN}, 3);
  std::vector<float> p_ref = values(p), buf_ref = values(buf);
  cpu::sgd_step(p_ref.data(), g.f32(), buf_ref.data(), kN, 0.1f, 0.9f, 0.01f, true);
  ops::sgd_step_(p, g, buf,
                 {.lr = 0.1f, .momentum = 0.9f, .weight_decay = 0.01f, .nesterov = true});
  EXPECT_EQ(values(p), p_ref);
  EXPECT_EQ(values(buf), buf_ref);
}

TEST(OptimOps, AdamEqualsItsKernel) {
  Tensor p = testing::random_tensor({kN}, 1), m = testing::random_tensor({kN}, 2);
  Tensor v = testing::random_tensor({kN}, 3, 0.0f, 1.0f);
  const Tensor g = testing::random_tensor({kN}, 4);
  std::vector<float> p_ref = values(p), m_ref = values(m), v_ref = values(v);
  cpu::adam_step(p_ref.data(), g.f32(), m_ref.data(), v_ref.data(), kN, 1e-3f, 0.9f, 0.999f, 1e-8f,
                 0.01f, true, 0.01f, 0.0447f);
  ops::adam_step_(p, g, m, v,
                  {.lr = 1e-3f,
                   .beta1 = 0.9f,
                   .beta2 = 0.999f,
                   .eps = 1e-8f,
                   .weight_decay = 0.01f,
                   .decoupled = true,
                   .step_size = 0.01f,
                   .sqrt_bias2 = 0.0447f});
  EXPECT_EQ(values(p), p_ref);
  EXPECT_EQ(values(m), m_ref);
  EXPECT_EQ(values(v), v_ref);
}

TEST(OptimOps, CenteredRmspropWithMomentumEqualsItsKernel) {
  Tensor p = testing::random_tensor({kN}, 1), sq = testing::random_tensor({kN}, 2, 0.5f, 1.0f);
  Tensor ga = testing::random_tensor({kN}, 3, -0.1f, 0.1f), buf = testing::random_tensor({kN}, 4);
  const Tensor g = testing::random_tensor({kN}, 5);
  std::vector<float> p_ref = values(p), sq_ref = values(sq), ga_ref = values(ga),
                     buf_ref = values(buf);
  cpu::rmsprop_step(p_ref.data(), g.f32(), sq_ref.data(), ga_ref.data(), buf_ref.data(), kN, 0.01f,
                    0.99f, 1e-8f, 0.001f, 0.9f, false);
  ops::rmsprop_step_(
      p, g, sq, ga, buf,
      {.lr = 0.01f, .alpha = 0.99f, .eps = 1e-8f, .weight_decay = 0.001f, .momentum = 0.9f});
  EXPECT_EQ(values(p), p_ref);
  EXPECT_EQ(values(sq), sq_ref);
  EXPECT_EQ(values(ga), ga_ref);
  EXPECT_EQ(values(buf), buf_ref);
}

TEST(OptimOps, RefusesMismatchedOrMissingBuffers) {
  Tensor p = testing::random_tensor({kN}, 1), none;
  const std::vector<float> before = values(p);
  Tensor short_buf = testing::random_tensor({kN - 1}, 2);
  const Tensor g = testing::random_tensor({kN}, 3), short_g = testing::random_tensor({kN - 1}, 4);
  EXPECT_THROW(ops::sgd_step_(p, short_g, none, {.lr = 0.1f}), InvalidArgument);
  EXPECT_THROW(ops::sgd_step_(p, g, none, {.lr = 0.1f, .momentum = 0.9f}), InvalidArgument);
  EXPECT_THROW(ops::sgd_step_(p, g, short_buf, {.lr = 0.1f, .momentum = 0.9f}), InvalidArgument);
  Tensor m = testing::random_tensor({kN}, 5);
  EXPECT_THROW(ops::adam_step_(p, g, m, short_buf, {.lr = 0.1f}), InvalidArgument);
  EXPECT_THROW(ops::rmsprop_step_(p, g, short_buf, none, none, {.lr = 0.1f}), InvalidArgument);
  EXPECT_EQ(values(p), before);
}

}  // namespace
}  // namespace epoch
