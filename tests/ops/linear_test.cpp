// Matrix products: matmul in all four transpose combinations against a naive triple loop
// (shapes crossing the kernel's tile edges), the dense layer and bias add (values and gradient
// checks), thread-count independence and bad arguments.
#include "epoch/ops/linear.h"

#include <gtest/gtest.h>

#include "epoch/autograd/functions.h"
#include "epoch/ops/backend.h"
#include "testing/testing.h"

namespace epoch {
namespace {

// op(a) op(b) one element at a time, in double.
Tensor naive_matmul(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  const std::int64_t M = ta ? a.size(1) : a.size(0), K = ta ? a.size(0) : a.size(1);
  const std::int64_t N = tb ? b.size(0) : b.size(1);
  Tensor c = Tensor::empty({M, N});
  for (std::int64_t i = 0; i < M; ++i)
    for (std::int64_t j = 0; j < N; ++j) {
      double s = 0.0;
      for (std::int64_t k = 0; k < K; ++k) {
        const float av = ta ? a.f32()[k * M + i] : a.f32()[i * K + k];
        const float bv = tb ? b.f32()[j * K + k] : b.f32()[k * N + j];
        s += static_cast<double>(av) * bv;
      }
      c.f32()[i * N + j] = static_cast<float>(s);
    }
  return c;
}

TEST(Linear, MatmulHandComputed) {
  ops::CpuKernelsGuard reference(ops::CpuKernels::reference);
  const Tensor a = Tensor::from_vector({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor b = Tensor::from_vector({3, 2}, {7, 8, 9, 10, 11, 12});
  EXPECT_TRUE(testing::allclose(ops::matmul(a, b),
                                Tensor::from_vector({2, 2}, {58, 64, 139, 154})));
  EXPECT_TRUE(testing::allclose(ops::matmul(a, a, false, true),
                                Tensor::from_vector({2, 2}, {14, 32, 32, 77})));
  EXPECT_TRUE(testing::allclose(ops::matmul(a, a, true, false),
                                Tensor::from_vector({3, 3}, {17, 22, 27, 22, 29, 36, 27, 36, 45})));
}

TEST(Linear, MatmulAllTransposesMatchNaiveLoop) {
  ops::CpuKernelsGuard reference(ops::CpuKernels::reference);
  const std::int64_t M = 37, N = 300, K = 150;  // crosses the 16 x 256 x 128 tiles
  std::uint64_t seed = 40;
  for (const bool ta : {false, true})
    for (const bool tb : {false, true}) {
      const Tensor a = testing::random_tensor(ta ? Shape{K, M} : Shape{M, K}, ++seed);
      const Tensor b = testing::random_tensor(tb ? Shape{N, K} : Shape{K, N}, ++seed);
      const Tensor c = ops::matmul(a, b, ta, tb);
      EXPECT_EQ(c.shape(), Shape({M, N}));
      EXPECT_TRUE(testing::allclose(c, naive_matmul(a, b, ta, tb), 1e-4f, 1e-4f))
          << "transpose_a=" << ta << " transpose_b=" << tb;
    }
  // Degenerate sizes: K = 1 and a single row or column.
  const Tensor col = testing::random_tensor({5, 1}, 50), row = testing::random_tensor({1, 7}, 51);
  EXPECT_TRUE(testing::allclose(ops::matmul(col, row), naive_matmul(col, row, false, false)));
  EXPECT_TRUE(testing::allclose(ops::matmul(row, row, false, true),
                                naive_matmul(row, row, false, true)));
}

TEST(Linear, MatmulDoesNotDependOnThreadCount) {
  ops::CpuKernelsGuard reference(ops::CpuKernels::reference);
  const Tensor a = testing::random_tensor({130, 200}, 60);
  const Tensor b = testing::random_tensor({200, 270}, 61);
  const int threads = ops::num_threads();
  ops::set_num_threads(1);
  const std::vector<float> one = ops::matmul(a, b).to_vector();
  ops::set_num_threads(std::max(2, threads));
  const std::vector<float> many = ops::matmul(a, b).to_vector();
  ops::set_num_threads(threads);
  EXPECT_EQ(one, many);
}

TEST(Linear, ForwardBackwardHandComputed) {
  ops::CpuKernelsGuard reference(ops::CpuKernels::reference);
  const Tensor x = Tensor::from_vector({2, 2}, {1, 2, -1, 3});
  const Tensor w = Tensor::from_vector({3, 2}, {1, 0, 0, 1, 1, 1});
  const Tensor b = Tensor::from_vector({3}, {0.5f, 0, -1});
  EXPECT_TRUE(testing::allclose(ops::linear_forward(x, w, b),
                                Tensor::from_vector({2, 3}, {1.5f, 2, 2, -0.5f, 3, 1})));
  const Tensor dy = Tensor::from_vector({2, 3}, {1, 0, 2, 0, 1, -1});
  const ops::LinearGrads g = ops::linear_backward(dy, x, w, true);
  EXPECT_TRUE(testing::allclose(g.dx, Tensor::from_vector({2, 2}, {3, 2, -1, 0})));
  EXPECT_TRUE(testing::allclose(g.dw, Tensor::from_vector({3, 2}, {1, 2, -1, 3, 3, 1})));
  EXPECT_TRUE(testing::allclose(g.db, Tensor::from_vector({3}, {1, 1, 1})));
  const ops::LinearGrads lean = ops::linear_backward(dy, x, w, false, false);
  EXPECT_FALSE(lean.dx.defined());
  EXPECT_FALSE(lean.db.defined());
  EXPECT_TRUE(testing::allclose(lean.dw, g.dw));
}

TEST(Linear, Gradchecks) {
  ops::CpuKernelsGuard reference(ops::CpuKernels::reference);
  Tensor x = testing::random_tensor({5, 7}, 70).set_requires_grad(true);
  Tensor w = testing::random_tensor({4, 7}, 71).set_requires_grad(true);
  Tensor b = testing::random_tensor({4}, 72).set_requires_grad(true);
  EXPECT_TRUE(testing::gradcheck(
      [](const std::vector<Tensor>& in) { return linear(in[0], in[1], in[2]); }, {x, w, b}));
  EXPECT_TRUE(testing::gradcheck(
      [](const std::vector<Tensor>& in) { return linear(in[0], in[1], Tensor()); }, {x, w}));
  Tensor m = testing::random_tensor({7, 3}, 73).set_requires_grad(true);
  EXPECT_TRUE(testing::gradcheck(
      [](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); }, {x, m}));
  Tensor x4 = testing::random_tensor({2, 3, 4, 5}, 74).set_requires_grad(true);
  Tensor c = testing::random_tensor({3}, 75).set_requires_grad(true);
  EXPECT_TRUE(testing::gradcheck(
      [](const std::vector<Tensor>& in) { return bias_add(in[0], in[1]); }, {x4, c}));
  Tensor x2 = testing::random_tensor({6, 3}, 76).set_requires_grad(true);
  EXPECT_TRUE(testing::gradcheck(
      [](const std::vector<Tensor>& in) { return bias_add(in[0], in[1]); }, {x2, c}));
}

TEST(Linear, BiasAddValues) {
  ops::CpuKernelsGuard reference(ops::CpuKernels::reference);
  const Tensor x = Tensor::from_vector({1, 2, 2}, {1, 2, 3, 4});
  const Tensor b = Tensor::from_vector({2}, {10, -10});
  EXPECT_TRUE(testing::allclose(ops::bias_add_forward(x, b),
                                Tensor::from_vector({1, 2, 2}, {11, 12, -7, -6})));
  const Tensor dy = Tensor::from_vector({2, 2, 1}, {1, 2, 3, 4});
  EXPECT_TRUE(testing::allclose(ops::bias_add_backward(dy), Tensor::from_vector({2}, {4, 6})));
}

TEST(Linear, BadArgumentsThrow) {
  const Tensor a = testing::random_tensor({3, 4}, 1), b = testing::random_tensor({5, 4}, 2);
  EXPECT_THROW(ops::matmul(a, b), InvalidArgument);
  EXPECT_THROW(ops::matmul(a, b, true, true), InvalidArgument);
  EXPECT_THROW(ops::matmul(a.view({12}), b), InvalidArgument);
  EXPECT_THROW(ops::matmul(Tensor::zeros({3, 4}, DType::i32), b, false, true), InvalidArgument);
  EXPECT_THROW(ops::linear_forward(a, testing::random_tensor({5, 3}, 3), Tensor()),
               InvalidArgument);
  EXPECT_THROW(ops::linear_forward(a, b, testing::random_tensor({4}, 4)), InvalidArgument);
  EXPECT_THROW(ops::linear_backward(testing::random_tensor({3, 4}, 5), a, b, true),
               InvalidArgument);
  EXPECT_THROW(ops::bias_add_forward(a, testing::random_tensor({3}, 6)), InvalidArgument);
  EXPECT_THROW(ops::bias_add_forward(a.view({12}), testing::random_tensor({12}, 7)),
               InvalidArgument);
  EXPECT_THROW(ops::bias_add_backward(a.view({12})), InvalidArgument);
}

}  // namespace
}  // namespace epoch
