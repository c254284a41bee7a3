// Batch norm and local response normalization: argument checks and dispatch by device
// (reference kernels in cpu/norm_cpu.h; oneDNN first on the CPU when use_onednn(); CUDA
// kernels in cuda/norm_cuda.h).
#include "epoch/ops/norm.h"

#include "cpu/norm_cpu.h"
#include "ops/dispatch.h"

#if EPOCH_WITH_ONEDNN
#include "cpu/batch_norm_fixed.h"
#include "cpu/norm_onednn.h"
#include "ops/relayout.h"
#endif
#if EPOCH_WITH_CUDA
#include "cuda/norm_cuda.h"
#endif

namespace epoch::ops {
namespace {

// (N, C, HW) view of an (N, C) or (N, C, H, W) batch-norm input.
struct BnDims {
  std::int64_t N, C, HW;
};
BnDims bn_dims(const char* op, const Tensor& x) {
  check_f32(op, "x", x);
  EPOCH_CHECK(x.ndim() == 2 || x.ndim() == 4, op, ": x must be (N, C) or (N, C, H, W), got ",
              shape_str(x.shape()));
  return {x.size(0), x.size(1), x.ndim() == 4 ? x.size(2) * x.size(3) : 1};
}

void check_per_channel(const char* op, const char* name, const Tensor& t, std::int64_t C) {
  check_f32(op, name, t);
  EPOCH_CHECK(t.shape() == Shape{C}, op, ": ", name, " must be (", C, "), got ",
              shape_str(t.shape()));
}

void check_lrn(const char* op, const Tensor& x, const LrnParams& p) {
  check_f32(op, "x", x);
  EPOCH_CHECK(x.ndim() == 4, op, ": x must be (N, C, H, W), got ", shape_str(x.shape()));
  EPOCH_CHECK(p.size >= 1, op, ": window size must be >= 1, got ", p.size);
}

}  // namespace

BatchNormResult batch_norm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                   Tensor& running_mean, Tensor& running_var, bool training,
                                   float momentum, float eps, bool unbiased_running_var) {
  const char* op = "batch_norm_forward";
  const BnDims d = bn_dims(op, x);
  check_per_channel(op, "gamma", gamma, d.C);
  check_per_channel(op, "beta", beta, d.C);
  check_per_channel(op, "running_mean", running_mean, d.C);
  check_per_channel(op, "running_var", running_var, d.C);
  EPOCH_CHECK(running_mean.is_contiguous() && running_var.is_contiguous(), op,
              ": running statistics are updated in place and must be contiguous");
  EPOCH_CHECK(eps >= 0.0f && momentum >= 0.0f && momentum <= 1.0f, op, ": eps ", eps,
              " must be >= 0 and momentum ", momentum, " in [0, 1]");
  EPOCH_CHECK(!training || d.N * d.HW > 1, op,
              ": training needs more than one value per channel, got x ", shape_str(x.shape()));
  const Device dev = common_device(op, x, gamma, beta, running_mean, running_var);
  const Tensor gc = gamma.contiguous(), bc = beta.contiguous();
  BatchNormResult r;
  r.save_mean = Tensor::empty({d.C}, DType::f32, dev);
  r.save_invstd = Tensor::empty({d.C}, DType::f32, dev);
  // The reference and CUDA kernels take and give row-major tensors.
  const auto plain = [&](auto&& kernel) {
    const Tensor xc = x.contiguous();
    r.y = Tensor::empty(x.shape(), DType::f32, dev);
    kernel(xc.f32(), r.y.f32());
  };
  dispatch(op, dev, {
    .cpu =
        [&] {
          plain([&](const float* xp, float* yp) {
            cpu::batch_norm_forward(xp, gc.f32(), bc.f32(), running_mean.f32(), running_var.f32(),
                                    yp, r.save_mean.f32(), r.save_invstd.f32(), d.N, d.C, d.HW,
                                    training, momentum, eps, unbiased_running_var);
          });
        },
#if EPOCH_WITH_ONEDNN
    .fast =
        [&] {  // activations kept blocked stay so: y in x's layout
          const Tensor xc = x.is_blocked() ? x : x.contiguous();
          r.y = empty_like(xc);
          const auto kernel = cpu_kernels() == CpuKernels::strict
                                  ? cpu::fixed_order::batch_norm_forward.active()
                                  : cpu::onednn::batch_norm_forward;
          kernel(activation_f32(xc), gc.f32(), bc.f32(), running_mean.f32(), running_var.f32(),
                 activation_f32(r.y), r.save_mean.f32(), r.save_invstd.f32(), d.N, d.C, d.HW,
                 training, momentum, eps, unbiased_running_var, xc.channel_block());
        },
    // under strict, epoch's fixed-order kernel (oneDNN sums the statistics by thread)
        .strict_ok = true,
#endif
#if EPOCH_WITH_CUDA
    .cuda = [&] {
      plain([&](const float* xp, float* yp) {
        cuda::batch_norm_forward(xp, gc.f32(), bc.f32(), running_mean.f32(), running_var.f32(), yp,
                                 r.save_mean.f32(), r.save_invstd.f32(), d.N, d.C, d.HW, training,
                                 momentum, eps, unbiased_running_var);
      });
    },
#endif
  });
  return r;
}

BatchNormGrads batch_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma,
                                   const BatchNormResult& fwd, bool training) {
  const char* op = "batch_norm_backward";
  const BnDims d = bn_dims(op, x);
  check_f32(op, "dy", dy);
  EPOCH_CHECK(dy.shape() == x.shape(), op, ": dy ", shape_str(dy.shape()), " and x ",
              shape_str(x.shape()), " differ");
  check_per_channel(op, "gamma", gamma, d.C);
  check_per_channel(op, "save_mean", fwd.save_mean, d.C);
  check_per_channel(op, "save_invstd", fwd.save_invstd, d.C);
  const Device dev = common_device(op, dy, x, gamma, fwd.save_mean, fwd.save_invstd);
  const Tensor gc = gamma.contiguous();
  const Tensor mc = fwd.save_mean.contiguous(), ic = fwd.save_invstd.contiguous();
  BatchNormGrads g;
  g.dgamma = Tensor::empty({d.C}, DType::f32, dev);
  g.dbeta = Tensor::empty({d.C}, DType::f32, dev);
  // The reference and CUDA kernels take and give row-major tensors.
  const auto plain = [&](auto&& kernel) {
    const Tensor dyc = dy.contiguous(), xc = x.contiguous();
    g.dx = Tensor::empty(x.shape(), DType::f32, dev);
    kernel(dyc.f32(), xc.f32(), g.dx.f32());
  };
  dispatch(op, dev, {
    .cpu =
        [&] {
          plain([&](const float* dyp, const float* xp, float* dxp) {
            cpu::batch_norm_backward(dyp, xp, gc.f32(), mc.f32(), ic.f32(), dxp, g.dgamma.f32(),
                                     g.dbeta.f32(), d.N, d.C, d.HW, training);
          });
        },
#if EPOCH_WITH_ONEDNN
    .fast =
        [&] {  // in x's layout (dy brought to it), dx too
          const Tensor xc = x.is_blocked() ? x : x.contiguous();
          const std::int64_t block = xc.channel_block();
          const Tensor dyc = block != 0 ? relayout(dy, block) : dy.contiguous();
          g.dx = empty_like(xc);
          const auto kernel = cpu_kernels() == CpuKernels::strict
                                  ? cpu::fixed_order::batch_norm_backward.active()
                                  : cpu::onednn::batch_norm_backward;
          kernel(activation_f32(dyc), activation_f32(xc), gc.f32(), mc.f32(), ic.f32(),
                 activation_f32(g.dx), g.dgamma.f32(), g.dbeta.f32(), d.N, d.C, d.HW, training,
                 block);
        },
    .strict_ok = true,  // as batch_norm_forward
#endif
#if EPOCH_WITH_CUDA
        .cuda = [&] {
          plain([&](const float* dyp, const float* xp, float* dxp) {
            cuda::batch_norm_backward(dyp, xp, gc.f32(), mc.f32(), ic.f32(), dxp, g.dgamma.f32(),
                                      g.dbeta.f32(), d.N, d.C, d.HW, training);
          });
        },
#endif
  });
  return g;
}

Tensor lrn_forward(const Tensor& x, const LrnParams& p) {
  check_lrn("lrn_forward", x, p);
  const Tensor xc = x.contiguous();
  const Device dev = x.device();
  Tensor y = Tensor::empty(x.shape(), DType::f32, dev);
  const std::int64_t N = x.size(0), C = x.size(1), HW = x.size(2) * x.size(3);
  // oneDNN centres the window: its fast path takes odd sizes only.
  dispatch("lrn_forward", dev, {
    .cpu = [&] { cpu::lrn_forward(xc.f32(), y.f32(), N, C, HW, p.size, p.alpha, p.beta, p.k); },
#if EPOCH_WITH_ONEDNN
    .fast =
        [&] {
          cpu::onednn::lrn_forward(xc.f32(), y.f32(), N, C, HW, p.size, p.alpha, p.beta, p.k);
        },
    .fast_if = (p.size % 2 == 1),
    .strict_ok = true,  // the same bits at every thread count (thread_invariance_test)
#endif
#if EPOCH_WITH_CUDA
        .cuda = [&] {
          cuda::lrn_forward(xc.f32(), y.f32(), N, C, HW, p.size, p.alpha, p.beta, p.k);
        },
#endif
  });
  return y;
}

Tensor lrn_backward(const Tensor& dy, const Tensor& x, const Tensor& y, const LrnParams& p) {
  check_lrn("lrn_backward", x, p);
  check_f32("lrn_backward", "dy", dy);
  check_f32("lrn_backward", "y", y);
  EPOCH_CHECK(dy.shape() == x.shape() && y.shape() == x.shape(), "lrn_backward: dy ",
              shape_str(dy.shape()), ", x ", shape_str(x.shape()), " and y ", shape_str(y.shape()),
              " must have the same shape");
  const Device dev = common_device("lrn_backward", dy, x, y);
  const Tensor dyc = dy.contiguous(), xc = x.contiguous(), yc = y.contiguous();
  Tensor dx = Tensor::empty(x.shape(), DType::f32, dev);
  const std::int64_t N = x.size(0), C = x.size(1), HW = x.size(2) * x.size(3);
  // oneDNN centres the window: its fast path takes odd sizes only.
  dispatch("lrn_backward", dev, {
    .cpu =
        [&] {
          cpu::lrn_backward(dyc.f32(), xc.f32(), yc.f32(), dx.f32(), N, C, HW, p.size, p.alpha,
                            p.beta, p.k);
        },
#if EPOCH_WITH_ONEDNN
    .fast =
        [&] {
          cpu::onednn::lrn_backward(dyc.f32(), xc.f32(), yc.f32(), dx.f32(), N, C, HW, p.size,
                                    p.alpha, p.beta, p.k);
        },
    .fast_if = (p.size % 2 == 1),
    .strict_ok = true,  // the same bits at every thread count (thread_invariance_test)
#endif
#if EPOCH_WITH_CUDA
        .cuda = [&] {
          cuda::lrn_backward(dyc.f32(), xc.f32(), yc.f32(), dx.f32(), N, C, HW, p.size, p.alpha,
                             p.beta, p.k);
        },
#endif
  });
  return dx;
}

}  // namespace epoch::ops
