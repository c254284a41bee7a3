// Activations and clipping: argument checks, then dispatch by device to the kernels.
#include "epoch/ops/activation.h"

#include <cmath>

#include "cpu/activation_cpu.h"
#include "ops/dispatch.h"

#if EPOCH_WITH_CUDA
#include "cuda/activation_cuda.h"
#endif

namespace epoch::ops {
namespace {

// Checks dy and the saved tensor t (input or output of forward) agree; returns their device.
Device check_backward(const char* op, const Tensor& dy, const char* t_name, const Tensor& t) {
  check_f32(op, "dy", dy);
  check_f32(op, t_name, t);
  EPOCH_CHECK(dy.shape() == t.shape(), op, ": dy ", shape_str(dy.shape()), " and ", t_name, " ",
              shape_str(t.shape()), " differ in shape");
  return common_device(op, dy, t);
}

}  // namespace

// ReLU is elementwise, so it runs on a channel-blocked tensor as stored (C is a multiple of
// the block: no padding) and gives its result in the same layout.
Tensor relu_forward(const Tensor& x_in) {
  check_f32("relu_forward", "x", x_in);
  const Tensor x = x_in.is_blocked() ? x_in : x_in.contiguous();
  Tensor y = empty_like(x);
  dispatch("relu_forward", x.device(), {
    .cpu = [&] { cpu::relu_forward(activation_f32(x), activation_f32(y), x.numel()); },
#if EPOCH_WITH_CUDA
    .cuda = [&] { cuda::relu_forward(x.f32(), y.f32(), x.numel()); },
#endif
  });
  return y;
}

Tensor relu_backward(const Tensor& dy_in, const Tensor& x_in) {
  const Device d = check_backward("relu_backward", dy_in, "x", x_in);
  const bool blocked = same_blocked_layout(x_in, dy_in);
  const Tensor dy = blocked ? dy_in : dy_in.contiguous(), x = blocked ? x_in : x_in.contiguous();
  Tensor dx = empty_like(x);
  dispatch("relu_backward", d, {
    .cpu =
        [&] {
          cpu::relu_backward(activation_f32(dy), activation_f32(x), activation_f32(dx), x.numel());
        },
#if EPOCH_WITH_CUDA
    .cuda = [&] { cuda::relu_backward(dy.f32(), x.f32(), dx.f32(), x.numel()); },
#endif
  });
  return dx;
}

Tensor sigmoid_forward(const Tensor& x_in) {
  check_f32("sigmoid_forward", "x", x_in);
  const Tensor x = x_in.contiguous();
  Tensor y = Tensor::empty(x.shape(), DType::f32, x.device());
  dispatch("sigmoid_forward", x.device(), {
    .cpu = [&] { cpu::sigmoid_forward(x.f32(), y.f32(), x.numel()); },
    .fast = [&] { cpu::sigmoid_forward_fast(x.f32(), y.f32(), x.numel()); },
    .strict_ok = true,  // the same bits at every thread count (thread_invariance_test)
#if EPOCH_WITH_CUDA
        .cuda = [&] { cuda::sigmoid_forward(x.f32(), y.f32(), x.numel()); },
#endif
  });
  return y;
}

Tensor sigmoid_backward(const Tensor& dy_in, const Tensor& y_in) {
  const Device d = check_backward("sigmoid_backward", dy_in, "y", y_in);
  const Tensor dy = dy_in.contiguous(), y = y_in.contiguous();
  Tensor dx = Tensor::empty(y.shape(), DType::f32, d);
  dispatch("sigmoid_backward", d, {
    .cpu = [&] { cpu::sigmoid_backward(dy.f32(), y.f32(), dx.f32(), y.numel()); },
#if EPOCH_WITH_CUDA
    .cuda = [&] { cuda::sigmoid_backward(dy.f32(), y.f32(), dx.f32(), y.numel()); },
#endif
  });
  return dx;
}

Tensor tanh_forward(const Tensor& x_in) {
  check_f32("tanh_forward", "x", x_in);
  const Tensor x = x_in.contiguous();
  Tensor y = Tensor::empty(x.shape(), DType::f32, x.device());
  dispatch("tanh_forward", x.device(), {
    .cpu = [&] { cpu::tanh_forward(x.f32(), y.f32(), x.numel()); },
#if EPOCH_WITH_CUDA
    .cuda = [&] { cuda::tanh_forward(x.f32(), y.f32(), x.numel()); },
#endif
  });
  return y;
}

Tensor tanh_backward(const Tensor& dy_in, const Tensor& y_in) {
  const Device d = check_backward("tanh_backward", dy_in, "y", y_in);
  const Tensor dy = dy_in.contiguous(), y = y_in.contiguous();
  Tensor dx = Tensor::empty(y.shape(), DType::f32, d);
  dispatch("tanh_backward", d, {
    .cpu = [&] { cpu::tanh_backward(dy.f32(), y.f32(), dx.f32(), y.numel()); },
#if EPOCH_WITH_CUDA
    .cuda = [&] { cuda::tanh_backward(dy.f32(), y.f32(), dx.f32(), y.numel()); },
#endif
  });
  return dx;
}

Tensor hard_sigmoid_forward(const Tensor& x_in, float slope, float offset) {
  check_f32("hard_sigmoid_forward", "x", x_in);
  EPOCH_CHECK(std::isfinite(slope) && std::isfinite(offset), "hard_sigmoid_forward: slope ", slope,
              " and offset ", offset, " must be finite");
  const Tensor x = x_in.contiguous();
  Tensor y = Tensor::empty(x.shape(), DType::f32, x.device());
  dispatch("hard_sigmoid_forward", x.device(), {
    .cpu = [&] { cpu::hard_sigmoid_forward(x.f32(), y.f32(), x.numel(), slope, offset); },
#if EPOCH_WITH_CUDA
    .cuda = [&] { cuda::hard_sigmoid_forward(x.f32(), y.f32(), x.numel(), slope, offset); },
#endif
  });
  return y;
}

Tensor hard_sigmoid_backward(const Tensor& dy_in, const Tensor& x_in, float slope, float offset) {
  const Device d = check_backward("hard_sigmoid_backward", dy_in, "x", x_in);
  const Tensor dy = dy_in.contiguous(), x = x_in.contiguous();
  Tensor dx = Tensor::empty(x.shape(), DType::f32, d);
  dispatch("hard_sigmoid_backward", d, {
    .cpu =
        [&] { cpu::hard_sigmoid_backward(dy.f32(), x.f32(), dx.f32(), x.numel(), slope, offset); },
#if EPOCH_WITH_CUDA
    .cuda = [&] {
      cuda::hard_sigmoid_backward(dy.f32(), x.f32(), dx.f32(), x.numel(), slope, offset);
    },
#endif
  });
  return dx;
}

Tensor clip_forward(const Tensor& x_in, float lo, float hi) {
  check_f32("clip_forward", "x", x_in);
  EPOCH_CHECK(lo <= hi, "clip_forward: lo ", lo, " is above hi ", hi);
  const Tensor x = x_in.contiguous();
  Tensor y = Tensor::empty(x.shape(), DType::f32, x.device());
  dispatch("clip_forward", x.device(), {
    .cpu = [&] { cpu::clip_forward(x.f32(), y.f32(), x.numel(), lo, hi); },
#if EPOCH_WITH_CUDA
    .cuda = [&] { cuda::clip_forward(x.f32(), y.f32(), x.numel(), lo, hi); },
#endif
  });
  return y;
}

Tensor clip_backward(const Tensor& dy_in, const Tensor& x_in, float lo, float hi) {
  const Device d = check_backward("clip_backward", dy_in, "x", x_in);
  EPOCH_CHECK(lo <= hi, "clip_backward: lo ", lo, " is above hi ", hi);
  const Tensor dy = dy_in.contiguous(), x = x_in.contiguous();
  Tensor dx = Tensor::empty(x.shape(), DType::f32, d);
  dispatch("clip_backward", d, {
    .cpu = [&] { cpu::clip_backward(dy.f32(), x.f32(), dx.f32(), x.numel(), lo, hi); },
#if EPOCH_WITH_CUDA
    .cuda = [&] { cuda::clip_backward(dy.f32(), x.f32(), dx.f32(), x.numel(), lo, hi); },
#endif
  });
  return dx;
}

Tensor softmax_forward(const Tensor& x_in) {
  check_f32("softmax_forward", "x", x_in);
  EPOCH_CHECK(x_in.ndim() == 2 && x_in.size(1) >= 1,
              "softmax_forward: x must be (N, K) with K >= 1, got ", shape_str(x_in.shape()));
  const Tensor x = x_in.contiguous();
  Tensor y = Tensor::empty(x.shape(), DType::f32, x.device());
  dispatch("softmax_forward", x.device(), {
    .cpu = [&] { cpu::softmax_forward(x.f32(), y.f32(), x.size(0), x.size(1)); },
#if EPOCH_WITH_CUDA
    .cuda = [&] { cuda::softmax_forward(x.f32(), y.f32(), x.size(0), x.size(1)); },
#endif
  });
  return y;
}

}  // namespace epoch::ops
