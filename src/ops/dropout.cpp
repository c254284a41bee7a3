// Inverted dropout: argument checks, then dispatch by device.
#include "epoch/ops/dropout.h"

#include "cpu/dropout_cpu.h"
#include "ops/dispatch.h"

#if EPOCH_WITH_CUDA
#include "cuda/dropout_cuda.h"
#endif

namespace epoch::ops {

DropoutResult dropout_forward(const Tensor& x_in, float p, std::uint64_t seed, std::uint64_t key) {
  check_f32("dropout_forward", "x", x_in);
  EPOCH_CHECK(p >= 0.0f && p < 1.0f, "dropout_forward: p = ", p, " is outside [0, 1)");
  // A channel-blocked x keeps its layout (y and the mask too), with the row-major mask.
  const Tensor x = x_in.is_blocked() ? x_in : x_in.contiguous();
  DropoutResult r;
  r.y = empty_like(x);
  r.mask = empty_like(x);
  dispatch("dropout_forward", x.device(), {
    .cpu =
        [&] {
          if (x.is_blocked()) {
            cpu::dropout_forward_blocked(x.blocked_f32(), r.y.blocked_f32(), r.mask.blocked_f32(),
                                         x.size(0), x.size(1), x.size(2) * x.size(3),
                                         x.channel_block(), p, seed, key);
            return;
          }
          cpu::dropout_forward(x.f32(), r.y.f32(), r.mask.f32(), x.numel(), p, seed, key);
        },
#if EPOCH_WITH_CUDA
    .cuda = [&] {
      cuda::dropout_forward(x.f32(), r.y.f32(), r.mask.f32(), x.numel(), p, seed, key);
    },
#endif
  });
  return r;
}

Tensor dropout_backward(const Tensor& dy_in, const Tensor& mask_in) {
  check_f32("dropout_backward", "dy", dy_in);
  check_f32("dropout_backward", "mask", mask_in);
  EPOCH_CHECK(dy_in.shape() == mask_in.shape(), "dropout_backward: dy ", shape_str(dy_in.shape()),
              " and mask ", shape_str(mask_in.shape()), " differ in shape");
  const Device d = common_device("dropout_backward", dy_in, mask_in);
  const bool blocked = same_blocked_layout(mask_in, dy_in);
  const Tensor dy = blocked ? dy_in : dy_in.contiguous();
  const Tensor mask = blocked ? mask_in : mask_in.contiguous();
  Tensor dx = empty_like(dy);
  dispatch("dropout_backward", d, {
    .cpu =
        [&] {
          cpu::dropout_backward(activation_f32(dy), activation_f32(mask), activation_f32(dx),
                                dy.numel());
        },
#if EPOCH_WITH_CUDA
    .cuda = [&] { cuda::dropout_backward(dy.f32(), mask.f32(), dx.f32(), dy.numel()); },
#endif
  });
  return dx;
}

}  // namespace epoch::ops
