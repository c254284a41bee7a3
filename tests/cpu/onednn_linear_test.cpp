// oneDNN GEMM and dense layer against the reference kernels (cpu::gemm, cpu::linear_*) on
// random inputs: every transpose combination, accumulation, odd sizes, batch 1 and 3.
#include <gtest/gtest.h>

#include <cstdint>
#include <tuple>

#include "cpu/linear_cpu.h"
#include "testing/testing.h"

#if EPOCH_WITH_ONEDNN
#include "cpu/linear_onednn.h"
#endif

namespace epoch {
namespace {

#if EPOCH_WITH_ONEDNN

// (M, N, K)
class OnednnGemm : public ::testing::TestWithParam<std::tuple<int, int, int>> {};

TEST_P(OnednnGemm, EveryTransposeAndAccumulateMatchReference) {
  const auto [M, N, K] = GetParam();
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (bool acc : {false, true}) {
        const Tensor a = testing::random_tensor(ta ? Shape{K, M} : Shape{M, K}, 21);
        const Tensor b = testing::random_tensor(tb ? Shape{N, K} : Shape{K, N}, 22);
        const Tensor c0 = testing::random_tensor({M, N}, 23);
        Tensor c_ref = c0.clone(), c = c0.clone();
        cpu::gemm(ta, tb, M, N, K, a.f32(), b.f32(), c_ref.f32(), acc);
        cpu::onednn::gemm(ta, tb, M, N, K, a.f32(), b.f32(), c.f32(), acc);
        EXPECT_TRUE(testing::allclose(c, c_ref, 1e-4f, 1e-4f))
            << "trans_a " << ta << " trans_b " << tb << " accumulate " << acc;
      }
}

INSTANTIATE_TEST_SUITE_P(Shapes, OnednnGemm,
                         ::testing::Values(std::make_tuple(1, 1, 1), std::make_tuple(3, 5, 7),
                                           std::make_tuple(17, 33, 9),
                                           std::make_tuple(64, 128, 300),
                                           std::make_tuple(2, 10, 129)));

TEST(OnednnGemm, SmallProductByHand) {
  const Tensor a = Tensor::from_vector({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor b = Tensor::from_vector({3, 2}, {1, -1, 0, 2, -2, 1});
  Tensor c = Tensor::full({2, 2}, 1.0f);
  cpu::onednn::gemm(false, false, 2, 2, 3, a.f32(), b.f32(), c.f32(), true);
  EXPECT_TRUE(testing::allclose(c, Tensor::from_vector({2, 2}, {-4, 7, -7, 13})));
}

// (N, IN, OUT)
class OnednnLinear : public ::testing::TestWithParam<std::tuple<int, int, int>> {};

TEST_P(OnednnLinear, ForwardAndGradientsMatchReference) {
  const auto [N, IN, OUT] = GetParam();
  const Tensor x = testing::random_tensor({N, IN}, 31), w = testing::random_tensor({OUT, IN}, 32);
  const Tensor b = testing::random_tensor({OUT}, 33), dy = testing::random_tensor({N, OUT}, 34);
  for (bool bias : {true, false}) {
    const float* bp = bias ? b.f32() : nullptr;
    Tensor y_ref = Tensor::empty({N, OUT}), y = Tensor::full({N, OUT}, 7.0f);
    cpu::linear_forward(x.f32(), w.f32(), bp, y_ref.f32(), N, IN, OUT);
    cpu::onednn::linear_forward(x.f32(), w.f32(), bp, y.f32(), N, IN, OUT);
    EXPECT_TRUE(testing::allclose(y, y_ref, 1e-4f, 1e-4f)) << "forward, bias " << bias;

    Tensor dx_ref = Tensor::empty({N, IN}), dw_ref = Tensor::empty({OUT, IN});
    Tensor db_ref = Tensor::empty({OUT});
    cpu::linear_backward(dy.f32(), x.f32(), w.f32(), dx_ref.f32(), dw_ref.f32(),
                         bias ? db_ref.f32() : nullptr, N, IN, OUT);
    Tensor dx = Tensor::full({N, IN}, 7.0f), dw = Tensor::full({OUT, IN}, 7.0f);
    Tensor db = Tensor::full({OUT}, 7.0f);
    cpu::onednn::linear_backward(dy.f32(), x.f32(), w.f32(), dx.f32(), dw.f32(),
                                 bias ? db.f32() : nullptr, N, IN, OUT);
    EXPECT_TRUE(testing::allclose(dx, dx_ref, 1e-4f, 1e-4f)) << "dx";
    EXPECT_TRUE(testing::allclose(dw, dw_ref, 1e-4f, 1e-4f)) << "dw";
    if (bias) {
      EXPECT_TRUE(testing::allclose(db, db_ref, 1e-4f, 1e-4f)) << "db";
    }
    Tensor dw2 = Tensor::full({OUT, IN}, 7.0f);
    cpu::onednn::linear_backward(dy.f32(), x.f32(), w.f32(), nullptr, dw2.f32(), nullptr, N, IN,
                                 OUT);
    EXPECT_TRUE(testing::allclose(dw2, dw_ref, 1e-4f, 1e-4f)) << "dw without dx";
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, OnednnLinear,
                         ::testing::Values(std::make_tuple(1, 5, 3), std::make_tuple(3, 17, 10),
                                           std::make_tuple(64, 3136, 128),
                                           std::make_tuple(3, 128, 1),
                                           std::make_tuple(7, 1, 9)));

#else

TEST(OnednnLinear, SkippedWithoutOnednn) { GTEST_SKIP() << "this build has no oneDNN"; }

#endif

}  // namespace
}  // namespace epoch
