// Matrix products, the dense layer and the channel bias add: argument checks and dispatch by
// device (reference kernels in cpu/linear_cpu.h; oneDNN first on the CPU when use_onednn()).
#include "epoch/ops/linear.h"

#include "cpu/activation_cpu.h"
#include "cpu/linear_cpu.h"
#include "ops/dispatch.h"

#if EPOCH_WITH_ONEDNN
#include "cpu/linear_onednn.h"
#include "ops/batch_parts.h"
#endif

#if EPOCH_WITH_CUDA
#include "cuda/activation_cuda.h"
#include "cuda/linear_cuda.h"
#endif

namespace epoch::ops {
namespace {

// (outer, C, inner) view of an (N, C, ...) tensor.
struct ChannelView {
  std::int64_t outer, C, inner;
};
ChannelView channel_view(const char* op, const Shape& shape) {
  EPOCH_CHECK(shape.size() >= 2, op, ": x must be (N, C, ...), got ", shape_str(shape));
  std::int64_t inner = 1;
  for (std::size_t d = 2; d < shape.size(); ++d) inner *= shape[d];
  return {shape[0], shape[1], inner};
}

#if EPOCH_WITH_ONEDNN
// Strict's products over fixed output tiles, each one thread's (the same bits at every thread
// count); the others as oneDNN splits them.
cpu::onednn::Split onednn_split() {
  return cpu_kernels() == CpuKernels::strict ? cpu::onednn::Split::fixed_tiles
                                             : cpu::onednn::Split::onednn;
}
#endif

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b) {
  check_f32("matmul", "a", a);
  check_f32("matmul", "b", b);
  EPOCH_CHECK(a.ndim() == 2 && b.ndim() == 2, "matmul: a ", shape_str(a.shape()), " and b ",
              shape_str(b.shape()), " must both be 2-D");
  const std::int64_t M = transpose_a ? a.size(1) : a.size(0);
  const std::int64_t K = transpose_a ? a.size(0) : a.size(1);
  const std::int64_t Kb = transpose_b ? b.size(1) : b.size(0);
  const std::int64_t N = transpose_b ? b.size(0) : b.size(1);
  EPOCH_CHECK(K == Kb, "matmul: inner dimensions differ: op(a) is (", M, ", ", K,
              ") and op(b) is (", Kb, ", ", N, ") (a ", shape_str(a.shape()), ", b ",
              shape_str(b.shape()), ", transpose_a=", transpose_a, ", transpose_b=", transpose_b,
              ")");
  const Device dev = common_device("matmul", a, b);
  const Tensor ac = a.contiguous(), bc = b.contiguous();
  Tensor c = Tensor::empty({M, N}, DType::f32, dev);
  const bool ta = transpose_a, tb = transpose_b;
  dispatch("matmul", dev, {
    .cpu = [&] { cpu::gemm(ta, tb, M, N, K, ac.f32(), bc.f32(), c.f32(), false); },
#if EPOCH_WITH_ONEDNN
    .fast =
        [&] {
          cpu::onednn::gemm(ta, tb, M, N, K, ac.f32(), bc.f32(), c.f32(), false, onednn_split());
        },
    .strict_ok = true,  // under strict, over fixed tiles of the output
#endif
#if EPOCH_WITH_CUDA
        .cuda = [&] { cuda::gemm(ta, tb, M, N, K, ac.f32(), bc.f32(), c.f32()); },
#endif
  });
  return c;
}

Tensor linear_forward(const Tensor& x, const Tensor& w, const Tensor& b, bool relu) {
  check_f32("linear_forward", "x", x);
  check_f32("linear_forward", "w", w);
  if (b.defined()) check_f32("linear_forward", "b", b);
  EPOCH_CHECK(x.ndim() == 2 && w.ndim() == 2 && x.size(1) == w.size(1),
              "linear_forward: x must be (N, IN) and w (OUT, IN), got x ", shape_str(x.shape()),
              " and w ", shape_str(w.shape()));
  const std::int64_t N = x.size(0), IN = x.size(1), OUT = w.size(0);
  EPOCH_CHECK(!b.defined() || b.shape() == Shape{OUT}, "linear_forward: b must be (", OUT,
              "), got ", shape_str(b.shape()));
  const Device dev = common_device("linear_forward", x, w, b);
  const Tensor xc = x.contiguous(), wc = w.contiguous();
  const Tensor bc = b.defined() ? b.contiguous() : Tensor();
  Tensor y = Tensor::empty({N, OUT}, DType::f32, dev);
  const float* bp = bc.defined() ? bc.f32() : nullptr;
  dispatch("linear_forward", dev, {
    .cpu =
        [&] {
          cpu::linear_forward(xc.f32(), wc.f32(), bp, y.f32(), N, IN, OUT);
          if (relu) cpu::relu_forward(y.f32(), y.f32(), y.numel());
        },
#if EPOCH_WITH_ONEDNN
    .fast =
        [&] {
          cpu::onednn::linear_forward(xc.f32(), wc.f32(), bp, y.f32(), N, IN, OUT, relu,
                                      onednn_split());
        },
    .strict_ok = true,  // as matmul
#endif
#if EPOCH_WITH_CUDA
        .cuda = [&] {
          cuda::linear_forward(xc.f32(), wc.f32(), bp, y.f32(), N, IN, OUT);
          if (relu) cuda::relu_forward(y.f32(), y.f32(), y.numel());
        },
#endif
  });
  return y;
}

LinearGrads linear_backward(const Tensor& dy, const Tensor& x, const Tensor& w, bool has_bias,
                            bool need_dx, const Tensor& dw_into) {
  check_f32("linear_backward", "dy", dy);
  check_f32("linear_backward", "x", x);
  check_f32("linear_backward", "w", w);
  EPOCH_CHECK(x.ndim() == 2 && w.ndim() == 2 && x.size(1) == w.size(1),
              "linear_backward: x must be (N, IN) and w (OUT, IN), got x ", shape_str(x.shape()),
              " and w ", shape_str(w.shape()));
  const std::int64_t N = x.size(0), IN = x.size(1), OUT = w.size(0);
  EPOCH_CHECK(dy.shape() == Shape({N, OUT}), "linear_backward: dy must be (", N, ", ", OUT,
              "), got ", shape_str(dy.shape()));
  const Device dev = common_device("linear_backward", dy, x, w);
  const Tensor dyc = dy.contiguous(), xc = x.contiguous(), wc = w.contiguous();
  LinearGrads g;
  if (need_dx) g.dx = Tensor::empty(x.shape(), DType::f32, dev);
  if (dw_into.defined()) {
    EPOCH_CHECK(dw_into.shape() == w.shape() && dw_into.dtype() == DType::f32 &&
                    dw_into.device() == dev && dw_into.is_contiguous(),
                "linear_backward: dw_into must be a contiguous f32 ", shape_str(w.shape()),
                " on the device of w, got ", shape_str(dw_into.shape()));
    g.dw = dw_into;
  } else {
    g.dw = Tensor::empty(w.shape(), DType::f32, dev);
  }
  if (has_bias) g.db = Tensor::empty({OUT}, DType::f32, dev);
  float* dx = need_dx ? g.dx.f32() : nullptr;
  float* db = has_bias ? g.db.f32() : nullptr;
  dispatch("linear_backward", dev, {
    .cpu =
        [&] {
          cpu::linear_backward(dyc.f32(), xc.f32(), wc.f32(), dx, g.dw.f32(), db, N, IN, OUT);
        },
#if EPOCH_WITH_ONEDNN
    .fast =
        [&] {
          // Under --perturb order, over the batch's fixed partition with a shuffled sum.
          const std::optional<std::uint64_t> order_key = next_perturb_order_key();
          if (!order_key)
            return cpu::onednn::linear_backward(dyc.f32(), xc.f32(), wc.f32(), dx, g.dw.f32(), db,
                                                N, IN, OUT, onednn_split());
          sum_over_parts(N, {g.dw.f32(), g.dw.numel()}, {db, has_bias ? OUT : 0}, order_key,
                         [&](const cpu::Part& part, float* dwp, float* dbp) {
                           cpu::onednn::linear_backward(
                               dyc.f32() + part.begin * OUT, xc.f32() + part.begin * IN, wc.f32(),
                               dx != nullptr ? dx + part.begin * IN : nullptr, dwp, dbp, part.count,
                               IN, OUT);
                         });
        },
    .strict_ok = true,  // as matmul
#endif
#if EPOCH_WITH_CUDA
        .cuda = [&] {
          cuda::linear_backward(dyc.f32(), xc.f32(), wc.f32(), dx, g.dw.f32(), db, N, IN, OUT);
        },
#endif
  });
  return g;
}

Tensor bias_add_forward(const Tensor& x, const Tensor& b) {
  check_f32("bias_add_forward", "x", x);
  check_f32("bias_add_forward", "b", b);
  const ChannelView v = channel_view("bias_add_forward", x.shape());
  EPOCH_CHECK(b.shape() == Shape{v.C}, "bias_add_forward: b must be (", v.C, ") for x ",
              shape_str(x.shape()), ", got ", shape_str(b.shape()));
  const Device dev = common_device("bias_add_forward", x, b);
  const Tensor xc = x.contiguous(), bc = b.contiguous();
  Tensor y = Tensor::empty(x.shape(), DType::f32, dev);
  dispatch("bias_add_forward", dev, {
    .cpu = [&] { cpu::bias_add_forward(xc.f32(), bc.f32(), y.f32(), v.outer, v.C, v.inner); },
#if EPOCH_WITH_CUDA
    .cuda = [&] { cuda::bias_add_forward(xc.f32(), bc.f32(), y.f32(), v.outer, v.C, v.inner); },
#endif
  });
  return y;
}

Tensor bias_add_backward(const Tensor& dy) {
  check_f32("bias_add_backward", "dy", dy);
  const ChannelView v = channel_view("bias_add_backward", dy.shape());
  const Tensor dyc = dy.contiguous();
  const Device dev = dy.device();
  Tensor db = Tensor::empty({v.C}, DType::f32, dev);
  dispatch("bias_add_backward", dev, {
    .cpu = [&] { cpu::bias_add_backward(dyc.f32(), db.f32(), v.outer, v.C, v.inner); },
#if EPOCH_WITH_CUDA
    .cuda = [&] { cuda::bias_add_backward(dyc.f32(), db.f32(), v.outer, v.C, v.inner); },
#endif
  });
  return db;
}

}  // namespace epoch::ops
