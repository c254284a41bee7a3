// oneDNN matmul (see linear_onednn.h). Every product is one cached matmul primitive on the
// caller's row-major buffers; transposes are expressed as strides, so nothing is copied. The
// bias gradient is a column sum in a fixed order (the reference kernel). Each call names the
// implementation oneDNN chose (kernels::note_impl) for a KernelTrace.
#include "cpu/linear_onednn.h"

#include <algorithm>
#include <memory>
#include <string>
#include <unordered_map>

#include "cpu/linear_cpu.h"
#include "cpu/onednn_context.h"

namespace epoch::cpu::onednn {
namespace {

using dnnl::memory;

// (rows, cols) f32, stored row-major, or as the transpose of a row-major (cols, rows) matrix.
memory::desc matrix_md(std::int64_t rows, std::int64_t cols, bool transposed) {
  return memory::desc({rows, cols}, memory::data_type::f32,
                      transposed ? memory::dims{1, rows} : memory::dims{cols, 1});
}

struct MatmulBundle {
  dnnl::matmul prim;
  memory::desc a, b, c, bias;
  std::string impl;  // impl_name() of the primitive
};

// c (M, N) = op(a) op(b) [+ bias (1, N)] [+ c].
std::shared_ptr<const MatmulBundle> matmul_bundle(bool trans_a, bool trans_b, std::int64_t M,
                                                  std::int64_t N, std::int64_t K, bool bias,
                                                  bool accumulate, bool relu = false) {
  Key key("matmul");
  key.add({trans_a, trans_b, M, N, K, bias, accumulate, relu});
  return cached<MatmulBundle>(key, [&] {
    MatmulBundle m;
    m.a = matrix_md(M, K, trans_a);
    m.b = matrix_md(K, N, trans_b);
    m.c = plain_md({M, N});
    if (bias) m.bias = plain_md({1, N});
    dnnl::primitive_attr attr = primitive_attr();
    dnnl::post_ops ops;
    if (accumulate) ops.append_sum(1.0f);
    if (relu) ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    if (accumulate || relu) attr.set_post_ops(ops);
    dnnl::matmul::desc desc(m.a, m.b, m.bias, m.c);
    const dnnl::matmul::primitive_desc pd(desc, attr, engine());
    m.impl = impl_name(pd);
    m.prim = dnnl::matmul(pd);
    return m;
  });
}

void run(const MatmulBundle& m, const float* a, const float* b, const float* bias, float* c) {
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, wrap(m.a, a)}, {DNNL_ARG_WEIGHTS, wrap(m.b, b)}, {DNNL_ARG_DST, wrap(m.c, c)}};
  if (bias != nullptr) args.emplace(DNNL_ARG_BIAS, wrap(m.bias, bias));
  kernels::note_impl(m.impl);
  onednn::run(m.prim, std::move(args));
  stream().wait();
}

}  // namespace

void gemm(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K,
          const float* a, const float* b, float* c, bool accumulate) {
  if (M == 0 || N == 0) return;
  if (K == 0) {
    if (!accumulate) std::fill(c, c + M * N, 0.0f);
    return;
  }
  guarded("gemm (oneDNN)", [&] {
    const SerialIfSmall serial(M * N * K);
    run(*matmul_bundle(trans_a, trans_b, M, N, K, false, accumulate), a, b, nullptr, c);
  });
}

void linear_forward(const float* x, const float* w, const float* b, float* y, std::int64_t N,
                    std::int64_t IN, std::int64_t OUT, bool relu) {
  if (N == 0 || OUT == 0) return;
  if (IN == 0) {
    for (std::int64_t i = 0; i < N; ++i)
      for (std::int64_t o = 0; o < OUT; ++o) {
        const float v = b != nullptr ? b[o] : 0.0f;
        y[i * OUT + o] = relu && !(v > 0.0f) ? 0.0f : v;
      }
    return;
  }
  guarded("linear_forward (oneDNN)", [&] {
    const SerialIfSmall serial(N * IN * OUT);
    // y (N, OUT) = x (N, IN) w^T (IN, OUT) + b
    run(*matmul_bundle(false, true, N, OUT, IN, b != nullptr, false, relu), x, w, b, y);
  });
}

void linear_backward(const float* dy, const float* x, const float* w, float* dx, float* dw,
                     float* db, std::int64_t N, std::int64_t IN, std::int64_t OUT) {
  // dw (OUT, IN) = dy^T (OUT, N) x (N, IN)
  gemm(true, false, OUT, IN, N, dy, x, dw);
  // dx (N, IN) = dy (N, OUT) w (OUT, IN)
  if (dx != nullptr) gemm(false, false, N, IN, OUT, dy, w, dx);
  if (db != nullptr) {
    kernels::note_impl("epoch:bias_sum");
    cpu::bias_add_backward(dy, db, N, OUT, 1);
  }
}

}  // namespace epoch::cpu::onednn
