// oneDNN batch norm and LRN against the reference kernels (cpu::batch_norm_*, cpu::lrn_*) on
// random inputs: training and eval, running-statistics updates, (N, C) and (N, C, HW) inputs.
#include <gtest/gtest.h>

#include <cstdint>
#include <tuple>

#include "cpu/norm_cpu.h"
#include "testing/testing.h"

#if EPOCH_WITH_ONEDNN
#include "cpu/norm_onednn.h"
#endif

namespace epoch {
namespace {

#if EPOCH_WITH_ONEDNN

// (N, C, HW)
class OnednnBatchNorm : public ::testing::TestWithParam<std::tuple<int, int, int>> {};

TEST_P(OnednnBatchNorm, TrainingAndEvalMatchReference) {
  const auto [N, C, HW] = GetParam();
  const Shape xs{N, C, HW};
  // An offset and a spread per element keep the statistics away from 0 and 1.
  const Tensor x = testing::random_tensor(xs, 41, -1.0f, 3.0f);
  const Tensor gamma = testing::random_tensor({C}, 42, 0.5f, 1.5f);
  const Tensor beta = testing::random_tensor({C}, 43), dy = testing::random_tensor(xs, 44);
  const Tensor rm0 = testing::random_tensor({C}, 45);
  const Tensor rv0 = testing::random_tensor({C}, 46, 0.5f, 2.0f);
  for (bool training : {true, false}) {
    Tensor rm_ref = rm0.clone(), rv_ref = rv0.clone(), rm = rm0.clone(), rv = rv0.clone();
    Tensor y_ref = Tensor::empty(xs), mean_ref = Tensor::empty({C}), inv_ref = Tensor::empty({C});
    Tensor y = Tensor::full(xs, 7.0f), mean = Tensor::full({C}, 7.0f);
    Tensor inv = Tensor::full({C}, 7.0f);
    cpu::batch_norm_forward(x.f32(), gamma.f32(), beta.f32(), rm_ref.f32(), rv_ref.f32(),
                            y_ref.f32(), mean_ref.f32(), inv_ref.f32(), N, C, HW, training, 0.1f,
                            1e-5f);
    cpu::onednn::batch_norm_forward(x.f32(), gamma.f32(), beta.f32(), rm.f32(), rv.f32(), y.f32(),
                                    mean.f32(), inv.f32(), N, C, HW, training, 0.1f, 1e-5f);
    EXPECT_TRUE(testing::allclose(y, y_ref, 1e-4f, 1e-4f)) << "y, training " << training;
    EXPECT_TRUE(testing::allclose(mean, mean_ref, 1e-5f, 1e-4f)) << "save_mean";
    EXPECT_TRUE(testing::allclose(inv, inv_ref, 1e-5f, 1e-4f)) << "save_invstd";
    EXPECT_TRUE(testing::allclose(rm, rm_ref, 1e-5f, 1e-4f)) << "running_mean";
    EXPECT_TRUE(testing::allclose(rv, rv_ref, 1e-5f, 1e-4f)) << "running_var";

    Tensor dx_ref = Tensor::empty(xs), dg_ref = Tensor::empty({C}), db_ref = Tensor::empty({C});
    Tensor dx = Tensor::full(xs, 7.0f), dg = Tensor::full({C}, 7.0f), db = Tensor::full({C}, 7.0f);
    cpu::batch_norm_backward(dy.f32(), x.f32(), gamma.f32(), mean_ref.f32(), inv_ref.f32(),
                             dx_ref.f32(), dg_ref.f32(), db_ref.f32(), N, C, HW, training);
    cpu::onednn::batch_norm_backward(dy.f32(), x.f32(), gamma.f32(), mean.f32(), inv.f32(),
                                     dx.f32(), dg.f32(), db.f32(), N, C, HW, training);
    EXPECT_TRUE(testing::allclose(dx, dx_ref, 1e-4f, 1e-3f)) << "dx, training " << training;
    EXPECT_TRUE(testing::allclose(dg, dg_ref, 1e-4f, 1e-4f)) << "dgamma";
    EXPECT_TRUE(testing::allclose(db, db_ref, 1e-4f, 1e-4f)) << "dbeta";
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, OnednnBatchNorm,
                         ::testing::Values(std::make_tuple(3, 5, 1), std::make_tuple(1, 4, 9),
                                           std::make_tuple(3, 17, 13),
                                           std::make_tuple(8, 32, 49)));

// (N, C, HW, size)
class OnednnLrn : public ::testing::TestWithParam<std::tuple<int, int, int, int>> {};

TEST_P(OnednnLrn, ForwardAndBackwardMatchReference) {
  const auto [N, C, HW, size] = GetParam();
  const Shape xs{N, C, HW};
  const Tensor x = testing::random_tensor(xs, 51, -2.0f, 2.0f), dy = testing::random_tensor(xs, 52);
  // A large alpha so the normalization really changes the values.
  const float alpha = 0.5f, beta = 0.75f, k = 2.0f;
  Tensor y_ref = Tensor::empty(xs), y = Tensor::full(xs, 7.0f);
  cpu::lrn_forward(x.f32(), y_ref.f32(), N, C, HW, size, alpha, beta, k);
  cpu::onednn::lrn_forward(x.f32(), y.f32(), N, C, HW, size, alpha, beta, k);
  EXPECT_TRUE(testing::allclose(y, y_ref, 1e-5f, 1e-4f)) << "forward";
  Tensor dx_ref = Tensor::empty(xs), dx = Tensor::full(xs, 7.0f);
  cpu::lrn_backward(dy.f32(), x.f32(), y_ref.f32(), dx_ref.f32(), N, C, HW, size, alpha, beta, k);
  cpu::onednn::lrn_backward(dy.f32(), x.f32(), y.f32(), dx.f32(), N, C, HW, size, alpha, beta, k);
  EXPECT_TRUE(testing::allclose(dx, dx_ref, 1e-5f, 1e-4f)) << "dx";
}

INSTANTIATE_TEST_SUITE_P(Shapes, OnednnLrn,
                         ::testing::Values(std::make_tuple(1, 7, 9, 5), std::make_tuple(3, 4, 5, 3),
                                           std::make_tuple(2, 16, 25, 5),
                                           std::make_tuple(2, 3, 4, 1),
                                           std::make_tuple(2, 20, 9, 9),
                                           std::make_tuple(2, 32, 9, 9),
                                           std::make_tuple(1, 17, 4, 7),
                                           std::make_tuple(2, 33, 4, 5),
                                           std::make_tuple(2, 64, 16, 9)));

TEST(OnednnLrnErrors, EvenWindowThrows) {
  const Tensor x = testing::random_tensor({1, 4, 2}, 53);
  Tensor y = Tensor::empty({1, 4, 2});
  EXPECT_THROW(cpu::onednn::lrn_forward(x.f32(), y.f32(), 1, 4, 2, 4, 1e-4f, 0.75f, 1.0f),
               InvalidArgument);
}

#else

TEST(OnednnNorm, SkippedWithoutOnednn) { GTEST_SKIP() << "this build has no oneDNN"; }

#endif

}  // namespace
}  // namespace epoch
