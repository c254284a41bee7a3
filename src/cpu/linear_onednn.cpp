// oneDNN matmul (see linear_onednn.h). Every product is one cached matmul primitive on the
// caller's row-major buffers (or, under Split::fixed_tiles, one per tile of the output, on
// the tile's rows or columns in place); transposes and tiles are expressed as strides, so
// nothing is copied. The
// bias gradient is a column sum in a fixed order (the reference kernel). Each call names the
// implementation oneDNN chose (kernels::note_impl) for a KernelTrace.
#include "cpu/linear_onednn.h"

#include <algorithm>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "cpu/fixed_parts.h"
#include "cpu/linear_cpu.h"
#include "cpu/onednn_context.h"

namespace epoch::cpu::onednn {
namespace {

using dnnl::memory;

// (rows, cols) f32 with row stride ld, or the transpose of a (cols, rows) matrix of row
// stride ld.
memory::desc matrix_md(std::int64_t rows, std::int64_t cols, bool transposed, std::int64_t ld) {
  return memory::desc({rows, cols}, memory::data_type::f32,
                      transposed ? memory::dims{1, ld} : memory::dims{ld, 1});
}

// c (M, N) = op(a) op(b) [+ bias (1, N)] [+ c] [then relu], on matrices of row strides lda,
// ldb and ldc (a tile of a larger product: ld past its width).
struct Product {
  bool trans_a = false, trans_b = false;
  std::int64_t M = 0, N = 0, K = 0;
  std::int64_t lda = 0, ldb = 0, ldc = 0;
  bool bias = false, accumulate = false, relu = false;
};

// The product over whole, densely stored matrices.
Product dense(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K) {
  return {.trans_a = trans_a,
          .trans_b = trans_b,
          .M = M,
          .N = N,
          .K = K,
          .lda = trans_a ? M : K,
          .ldb = trans_b ? K : N,
          .ldc = N};
}

struct MatmulBundle {
  dnnl::matmul prim;
  memory::desc a, b, c, bias;
  std::string impl;  // impl_name() of the primitive
};

std::shared_ptr<const MatmulBundle> matmul_bundle(const Product& p) {
  Key key("matmul");
  key.add({p.trans_a, p.trans_b, p.M, p.N, p.K, p.lda, p.ldb, p.ldc, p.bias, p.accumulate, p.relu});
  return cached<MatmulBundle>(key, [&] {
    MatmulBundle m;
    m.a = matrix_md(p.M, p.K, p.trans_a, p.lda);
    m.b = matrix_md(p.K, p.N, p.trans_b, p.ldb);
    m.c = matrix_md(p.M, p.N, false, p.ldc);
    if (p.bias) m.bias = plain_md({1, p.N});
    dnnl::primitive_attr attr = primitive_attr();
    dnnl::post_ops ops;
    if (p.accumulate) ops.append_sum(1.0f);
    if (p.relu) ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    if (p.accumulate || p.relu) attr.set_post_ops(ops);
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

// Runs the dense product p (M, N, K > 0) split as asked. Split::fixed_tiles cuts c along its
// longer side into cpu::fixed_tiles, each a single-threaded product over its rows of op(a) or
// its columns of op(b) (and its slice of the bias): every element one thread's whole sum.
void run_split(const Product& p, const float* a, const float* b, const float* bias, float* c,
               Split split) {
  const std::int64_t work = p.M * p.N * p.K;
  if (split == Split::onednn || work < SerialIfSmall::kSerialWork) {
    const SerialIfSmall serial(work);  // a small product is single-threaded either way
    return run(*matmul_bundle(p), a, b, bias, c);
  }
  const std::vector<Part> tiles = fixed_tiles(std::max(p.M, p.N));
  if (tiles.size() == 1) {
    const OneThread one;
    return run(*matmul_bundle(p), a, b, bias, c);
  }
  const bool by_rows = p.M >= p.N;
  for_each_part(tiles.size(), [&](std::size_t i) {
    const Part& t = tiles[i];
    Product q = p;
    if (by_rows) {
      q.M = t.count;
      const float* at = a + (p.trans_a ? t.begin : t.begin * p.lda);
      run(*matmul_bundle(q), at, b, bias, c + t.begin * p.ldc);
    } else {
      q.N = t.count;
      const float* bt = b + (p.trans_b ? t.begin * p.ldb : t.begin);
      run(*matmul_bundle(q), a, bt, bias != nullptr ? bias + t.begin : nullptr, c + t.begin);
    }
  });
}

}  // namespace

void gemm(bool trans_a, bool trans_b, std::int64_t M, std::int64_t N, std::int64_t K,
          const float* a, const float* b, float* c, bool accumulate, Split split) {
  if (M == 0 || N == 0) return;
  if (K == 0) {
    if (!accumulate) std::fill(c, c + M * N, 0.0f);
    return;
  }
  guarded("gemm (oneDNN)", [&] {
    Product p = dense(trans_a, trans_b, M, N, K);
    p.accumulate = accumulate;
    run_split(p, a, b, nullptr, c, split);
  });
}

void linear_forward(const float* x, const float* w, const float* b, float* y, std::int64_t N,
                    std::int64_t IN, std::int64_t OUT, bool relu, Split split) {
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
    // y (N, OUT) = x (N, IN) w^T (IN, OUT) + b
    Product p = dense(false, true, N, OUT, IN);
    p.bias = b != nullptr;
    p.relu = relu;
    run_split(p, x, w, b, y, split);
  });
}

void linear_backward(const float* dy, const float* x, const float* w, float* dx, float* dw,
                     float* db, std::int64_t N, std::int64_t IN, std::int64_t OUT, Split split) {
  // dw (OUT, IN) = dy^T (OUT, N) x (N, IN)
  gemm(true, false, OUT, IN, N, dy, x, dw, false, split);
  // dx (N, IN) = dy (N, OUT) w (OUT, IN)
  if (dx != nullptr) gemm(false, false, N, IN, OUT, dy, w, dx, false, split);
  if (db != nullptr) {
    kernels::note_impl("epoch:bias_sum");
    cpu::bias_add_backward(dy, db, N, OUT, 1);
  }
}

}  // namespace epoch::cpu::onednn
