// The optimizers' fused updates: argument checks, then dispatch by device to the kernels in
// cpu/optim_cpu.h and cuda/optim_cuda.h.
#include "epoch/ops/optim.h"

#include "cpu/optim_cpu.h"
#include "epoch/ops/elementwise.h"
#include "ops/dispatch.h"

#if EPOCH_WITH_CUDA
#include "cuda/optim_cuda.h"
#endif

namespace epoch::ops {
namespace {

// Checks param and grad; returns the number of elements.
std::int64_t check_param(const char* op, const Tensor& param, const Tensor& grad) {
  check_f32(op, "param", param);
  check_f32(op, "grad", grad);
  EPOCH_CHECK(param.is_contiguous(), op, ": param is updated in place and must be contiguous");
  EPOCH_CHECK(grad.shape() == param.shape(), op, ": grad ", shape_str(grad.shape()), " and param ",
              shape_str(param.shape()), " differ in shape");
  return param.numel();
}

// A state buffer updated in place: its data, after checking it matches the parameter.
float* state(const char* op, const char* name, const Tensor& t, const Tensor& param) {
  check_f32(op, name, t);
  EPOCH_CHECK(t.shape() == param.shape() && t.is_contiguous(), op, ": ", name, " ",
              shape_str(t.shape()), " must be contiguous and of param's shape ",
              shape_str(param.shape()));
  return t.f32();
}

}  // namespace

void sgd_step_(Tensor& param, const Tensor& grad, Tensor& momentum_buffer, const SgdHyper& h) {
  const char* op = "sgd_step_";
  const std::int64_t n = check_param(op, param, grad);
  float* buf = h.momentum > 0.0f ? state(op, "momentum_buffer", momentum_buffer, param) : nullptr;
  const Device d = common_device(op, param, grad, h.momentum > 0.0f ? momentum_buffer : Tensor());
  const Tensor g = grad.contiguous();
  dispatch(op, d, {
    .cpu =
        [&] {
          cpu::sgd_step(param.f32(), g.f32(), buf, n, h.lr, h.momentum, h.weight_decay, h.nesterov);
        },
#if EPOCH_WITH_CUDA
    .cuda = [&] {
      cuda::sgd_step(param.f32(), g.f32(), buf, n, h.lr, h.momentum, h.weight_decay, h.nesterov);
    },
#endif
  });
}

void adam_step_(Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq,
                const AdamHyper& h) {
  const char* op = "adam_step_";
  const std::int64_t n = check_param(op, param, grad);
  float* m = state(op, "exp_avg", exp_avg, param);
  float* v = state(op, "exp_avg_sq", exp_avg_sq, param);
  const Device d = common_device(op, param, grad, exp_avg, exp_avg_sq);
  const Tensor g = grad.contiguous();
  dispatch(op, d, {
    .cpu =
        [&] {
          cpu::adam_step(param.f32(), g.f32(), m, v, n, h.lr, h.beta1, h.beta2, h.eps,
                         h.weight_decay, h.decoupled, h.step_size, h.sqrt_bias2);
        },
#if EPOCH_WITH_CUDA
    .cuda = [&] {
      cuda::adam_step(param.f32(), g.f32(), m, v, n, h.lr, h.beta1, h.beta2, h.eps, h.weight_decay,
                      h.decoupled, h.step_size, h.sqrt_bias2);
    },
#endif
  });
}

void rmsprop_step_(Tensor& param, const Tensor& grad, Tensor& square_avg, Tensor& grad_avg,
                   Tensor& momentum_buffer, const RmspropHyper& h) {
  const char* op = "rmsprop_step_";
  const std::int64_t n = check_param(op, param, grad);
  float* sq = state(op, "square_avg", square_avg, param);
  float* ga = grad_avg.defined() ? state(op, "grad_avg", grad_avg, param) : nullptr;
  const bool with_momentum = h.momentum > 0.0f;
  float* buf = with_momentum ? state(op, "momentum_buffer", momentum_buffer, param) : nullptr;
  const Device d = common_device(op, param, grad, square_avg, grad_avg,
                                 with_momentum ? momentum_buffer : Tensor());
  const Tensor g = grad.contiguous();
  dispatch(op, d, {
    .cpu =
        [&] {
          cpu::rmsprop_step(param.f32(), g.f32(), sq, ga, buf, n, h.lr, h.alpha, h.eps,
                            h.weight_decay, h.momentum, h.eps_inside_sqrt);
        },
#if EPOCH_WITH_CUDA
    .cuda = [&] {
      cuda::rmsprop_step(param.f32(), g.f32(), sq, ga, buf, n, h.lr, h.alpha, h.eps, h.weight_decay,
                         h.momentum, h.eps_inside_sqrt);
    },
#endif
  });
}

void lars_step_(Tensor& param, const Tensor& grad, Tensor& momentum_buffer, const LarsHyper& h) {
  const char* op = "lars_step_";
  const std::int64_t n = check_param(op, param, grad);
  float* v = state(op, "momentum_buffer", momentum_buffer, param);
  const Device d = common_device(op, param, grad, momentum_buffer);
  const Tensor g = grad.contiguous();
  dispatch(op, d, {
    .cpu =
        [&] {
          cpu::lars_step(param.f32(), g.f32(), v, n, h.scaled_lr, h.momentum, h.weight_decay);
        },
#if EPOCH_WITH_CUDA
    .cuda = [&] {
      cuda::lars_step(param.f32(), g.f32(), v, n, h.scaled_lr, h.momentum, h.weight_decay);
    },
#endif
  });
}

void lamb_direction_(const Tensor& param, const Tensor& grad, Tensor& exp_avg, Tensor& exp_avg_sq,
                     Tensor& direction, const LambHyper& h) {
  const char* op = "lamb_direction_";
  const std::int64_t n = check_param(op, param, grad);
  float* m = state(op, "exp_avg", exp_avg, param);
  float* v = state(op, "exp_avg_sq", exp_avg_sq, param);
  float* r = state(op, "direction", direction, param);
  const Device d = common_device(op, param, grad, exp_avg, exp_avg_sq, direction);
  const Tensor g = grad.contiguous();
  dispatch(op, d, {
    .cpu =
        [&] {
          cpu::lamb_direction(param.f32(), g.f32(), m, v, r, n, h.beta1, h.beta2, h.eps,
                              h.weight_decay, h.bias1, h.sqrt_bias2);
        },
#if EPOCH_WITH_CUDA
    .cuda = [&] {
      cuda::lamb_direction(param.f32(), g.f32(), m, v, r, n, h.beta1, h.beta2, h.eps,
                           h.weight_decay, h.bias1, h.sqrt_bias2);
    },
#endif
  });
}

double squared_norm(const Tensor& t) {
  check_f32("squared_norm", "t", t);
  if (!t.device().is_cpu()) return static_cast<double>(sum(mul(t, t)).item());
  const Tensor c = t.contiguous();
  double result = 0.0;
  dispatch("squared_norm", c.device(),
           {.cpu = [&] { result = cpu::squared_norm(c.f32(), c.numel()); }});
  return result;
}

}  // namespace epoch::ops
