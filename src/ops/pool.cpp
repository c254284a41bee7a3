// Pooling: argument checks, output sizes and dispatch by device (reference kernels in
// cpu/pool_cpu.h; a oneDNN path is chosen first on the CPU when use_onednn()).
#include "epoch/ops/pool.h"

#include "cpu/pool_blocked.h"
#include "cpu/pool_cpu.h"
#include "epoch/ops/activation.h"
#include "epoch/ops/layout.h"
#include "kernels/args.h"
#include "ops/dispatch.h"

#if EPOCH_WITH_ONEDNN
#include "cpu/pool_onednn.h"
#endif
#if EPOCH_WITH_CUDA
#include "cuda/pool_cuda.h"
#endif

namespace epoch::ops {
namespace {

// Validates an (N, C, H, W) input and the parameters; returns the pooling sizes.
kernels::Pool2dDims pool_dims(const char* op, const Shape& x_shape, const Pool2dParams& p) {
  EPOCH_CHECK(x_shape.size() == 4, op, ": x must be (N, C, H, W), got ", shape_str(x_shape));
  kernels::Pool2dDims d;
  d.planes = x_shape[0] * x_shape[1];
  d.H = x_shape[2];
  d.W = x_shape[3];
  d.OH = pool_out_size(d.H, p.kernel_h, p.stride_h, p.pad_top, p.pad_bottom);
  d.OW = pool_out_size(d.W, p.kernel_w, p.stride_w, p.pad_left, p.pad_right);
  d.KH = p.kernel_h;
  d.KW = p.kernel_w;
  d.stride_h = p.stride_h;
  d.stride_w = p.stride_w;
  d.pad_top = p.pad_top;
  d.pad_left = p.pad_left;
  return d;
}

Shape out_shape(const Shape& x_shape, const kernels::Pool2dDims& d) {
  return {x_shape[0], x_shape[1], d.OH, d.OW};
}

// True when `indices` are the reference kernels' i32 argmax positions for output y.
bool reference_indices(const MaxPoolResult& fwd) {
  return fwd.indices.defined() && fwd.indices.dtype() == DType::i32 &&
         fwd.indices.shape() == fwd.y.shape();
}

#if EPOCH_WITH_ONEDNN
// True when `indices` is the fast path's max-pooling workspace for these sizes (C channels):
// oneDNN's, or epoch's NCHW kernel's window positions (cpu/pool_onednn.h chooses).
bool onednn_workspace(const MaxPoolResult& fwd, const kernels::Pool2dDims& d, std::int64_t C) {
  return fwd.indices.defined() && fwd.indices.dtype() == DType::u8 && fwd.indices.is_contiguous() &&
         fwd.indices.numel() == cpu::onednn::max_pool2d_workspace_bytes(d, C);
}
#endif

}  // namespace

std::int64_t pool_out_size(std::int64_t in, std::int64_t k, std::int64_t stride,
                           std::int64_t pad_begin, std::int64_t pad_end) {
  EPOCH_CHECK(in >= 1 && k >= 1 && stride >= 1, "pool2d: input size ", in, ", kernel ", k,
              " and stride ", stride, " must be positive");
  EPOCH_CHECK(pad_begin >= 0 && pad_end >= 0 && pad_begin < k && pad_end < k, "pool2d: padding (",
              pad_begin, ", ", pad_end, ") must be in [0, kernel ", k, ")");
  EPOCH_CHECK(in + pad_begin + pad_end >= k, "pool2d: kernel ", k,
              " is larger than the padded input ", in, " + ", pad_begin, " + ", pad_end,
              "; the output would be empty");
  return (in + pad_begin + pad_end - k) / stride + 1;
}

MaxPoolResult max_pool2d_forward(const Tensor& x, const Pool2dParams& p) {
  check_f32("max_pool2d_forward", "x", x);
  const kernels::Pool2dDims d = pool_dims("max_pool2d_forward", x.shape(), p);
  const Device dev = x.device();
  MaxPoolResult r;
  // A channel-blocked x stays blocked (the blocked kernels take any window whose positions fit
  // a byte); a row-major x is pooled row-major.
  const bool blocked = x.is_blocked() && cpu::max_pool2d_blocked_supported(d);
  const Tensor xc = blocked ? x : to_channel_block(x, 0);
  r.y = Tensor::empty(out_shape(x.shape(), d), DType::f32, dev);
  const auto pool_blocked = [&] {  // exact, as every max pooling: the same on either path
    r.y = Tensor::empty_blocked(r.y.shape(), x.channel_block());
    r.channel_block = x.channel_block();
    r.indices = Tensor::empty({r.y.numel()}, DType::u8, dev);
    cpu::max_pool2d_blocked_forward(d, x.channel_block(), xc.blocked_f32(), r.y.blocked_f32(),
                                    r.indices.data<std::uint8_t>());
  };
  dispatch("max_pool2d_forward", dev, {
    .cpu =
        [&] {
          if (blocked) return pool_blocked();  // a blocked x comes from the fast path

          r.indices = Tensor::empty(r.y.shape(), DType::i32, dev);
          cpu::max_pool2d_forward(d, xc.f32(), r.y.f32(), r.indices.data<std::int32_t>());
        },
#if EPOCH_WITH_ONEDNN
    .fast =
        [&] {  // indices hold oneDNN's workspace bytes (u8)
          if (blocked) {
            kernels::note_impl("epoch:max_pool_blocked");
            return pool_blocked();
          }
          const std::int64_t C = x.size(1);
          r.indices =
              Tensor::empty({cpu::onednn::max_pool2d_workspace_bytes(d, C)}, DType::u8, dev);
          cpu::onednn::max_pool2d_forward(d, C, xc.f32(), r.y.f32(),
                                          r.indices.data<std::uint8_t>());
        },
    .strict_ok = true,  // the same bits at every thread count (thread_invariance_test)
#endif
#if EPOCH_WITH_CUDA
        .cuda = [&] {
          r.indices = Tensor::empty(r.y.shape(), DType::i32, dev);
          cuda::max_pool2d_forward(d, xc.f32(), r.y.f32(), r.indices.data<std::int32_t>());
        },
#endif
  });
  return r;
}

Tensor max_pool2d_backward(const Tensor& dy, const Tensor& x, const MaxPoolResult& fwd,
                           const Pool2dParams& p, bool through_relu) {
  check_f32("max_pool2d_backward", "dy", dy);
  check_f32("max_pool2d_backward", "x", x);
  const kernels::Pool2dDims d = pool_dims("max_pool2d_backward", x.shape(), p);
  const Shape y_shape = out_shape(x.shape(), d);
  EPOCH_CHECK(dy.shape() == y_shape, "max_pool2d_backward: dy ", shape_str(dy.shape()),
              " does not match the output shape ", shape_str(y_shape));
  EPOCH_CHECK(fwd.y.defined() && fwd.y.shape() == y_shape,
              "max_pool2d_backward: the forward result does not belong to x ",
              shape_str(x.shape()));
  const Device dev = common_device("max_pool2d_backward", dy, x, fwd.indices);
  // dy in the layout the forward ran in (its y's). Through a ReLU, the blocked kernel masks dy
  // itself; the others take dy masked first (a pass over the output, a fraction of the input).
  const bool mask_in_kernel = through_relu && fwd.channel_block != 0 && dev.is_cpu();
  const Tensor dyc = through_relu && !mask_in_kernel
                         ? relu_backward(to_channel_block(dy, fwd.channel_block), fwd.y)
                         : to_channel_block(dy, fwd.channel_block);
  Tensor dx = fwd.channel_block != 0 ? Tensor::empty_blocked(x.shape(), fwd.channel_block)
                                     : Tensor::empty(x.shape(), DType::f32, dev);
  dispatch("max_pool2d_backward", dev, {
    // On the CPU the forward's indices decide the kernel, whichever CPU kernels are selected
    // now: i32 argmax positions go to the reference kernel, a fast-path workspace to the fast
    // path (oneDNN or epoch's NCHW kernel, as the forward chose), the blocked kernels'
    // workspace to them.
    .cpu =
        [&] {
          if (fwd.channel_block != 0) {
            EPOCH_CHECK(fwd.indices.dtype() == DType::u8 && fwd.indices.numel() == dyc.numel(),
                        "max_pool2d_backward: indices ", shape_str(fwd.indices.shape()),
                        " are not the blocked forward's workspace");
            cpu::max_pool2d_blocked_backward(d, fwd.channel_block, dyc.blocked_f32(),
                                             mask_in_kernel ? fwd.y.blocked_f32() : nullptr,
                                             fwd.indices.data<std::uint8_t>(), dx.blocked_f32());
            return;
          }
          if (reference_indices(fwd)) {
            const Tensor idx = fwd.indices.contiguous();
            cpu::max_pool2d_backward(d, dyc.f32(), idx.data<std::int32_t>(), dx.f32());
            return;
          }
#if EPOCH_WITH_ONEDNN
          if (onednn_workspace(fwd, d, x.size(1))) {
            cpu::onednn::max_pool2d_backward(d, x.size(1), dyc.f32(),
                                             fwd.indices.data<std::uint8_t>(), dx.f32());
            return;
          }
#endif
          EPOCH_THROW(InvalidArgument, "max_pool2d_backward: indices ",
                      shape_str(fwd.indices.shape()),
                      " are neither i32 argmax positions nor a workspace this build can read");
        },
#if EPOCH_WITH_CUDA
    .cuda = [&] {
      EPOCH_CHECK(reference_indices(fwd), "max_pool2d_backward: indices ",
                  shape_str(fwd.indices.shape()), " are not the i32 argmax positions of ",
                  "a CUDA max_pool2d_forward");
      cuda::max_pool2d_backward(d, dyc.f32(), fwd.indices.contiguous().data<std::int32_t>(),
                                dx.f32());
    },
#endif
  });
  return dx;
}

Tensor avg_pool2d_forward(const Tensor& x, const Pool2dParams& p) {
  check_f32("avg_pool2d_forward", "x", x);
  const kernels::Pool2dDims d = pool_dims("avg_pool2d_forward", x.shape(), p);
  const Tensor xc = x.contiguous();
  const Device dev = x.device();
  Tensor y = Tensor::empty(out_shape(x.shape(), d), DType::f32, dev);
  const bool include_pad = p.count_include_pad;
  dispatch("avg_pool2d_forward", dev, {
    .cpu = [&] { cpu::avg_pool2d_forward(d, include_pad, xc.f32(), y.f32()); },
#if EPOCH_WITH_ONEDNN
    .fast = [&] { cpu::onednn::avg_pool2d_forward(d, x.size(1), include_pad, xc.f32(), y.f32()); },
    .strict_ok = true,  // the same bits at every thread count (thread_invariance_test)
#endif
#if EPOCH_WITH_CUDA
        .cuda = [&] { cuda::avg_pool2d_forward(d, include_pad, xc.f32(), y.f32()); },
#endif
  });
  return y;
}

Tensor avg_pool2d_backward(const Tensor& dy, const Shape& x_shape, const Pool2dParams& p) {
  check_f32("avg_pool2d_backward", "dy", dy);
  const kernels::Pool2dDims d = pool_dims("avg_pool2d_backward", x_shape, p);
  EPOCH_CHECK(dy.shape() == out_shape(x_shape, d), "avg_pool2d_backward: dy ",
              shape_str(dy.shape()), " does not match the output shape ",
              shape_str(out_shape(x_shape, d)));
  const Tensor dyc = dy.contiguous();
  const Device dev = dy.device();
  Tensor dx = Tensor::empty(x_shape, DType::f32, dev);
  const bool include_pad = p.count_include_pad;
  dispatch("avg_pool2d_backward", dev, {
    .cpu = [&] { cpu::avg_pool2d_backward(d, include_pad, dyc.f32(), dx.f32()); },
#if EPOCH_WITH_ONEDNN
    .fast =
        [&] { cpu::onednn::avg_pool2d_backward(d, x_shape[1], include_pad, dyc.f32(), dx.f32()); },
    .strict_ok = true,  // the same bits at every thread count (thread_invariance_test)
#endif
#if EPOCH_WITH_CUDA
        .cuda = [&] { cuda::avg_pool2d_backward(d, include_pad, dyc.f32(), dx.f32()); },
#endif
  });
  return dx;
}

Tensor global_avg_pool2d_forward(const Tensor& x) {
  check_f32("global_avg_pool2d_forward", "x", x);
  EPOCH_CHECK(x.ndim() == 4 && x.size(2) * x.size(3) > 0,
              "global_avg_pool2d_forward: x must be (N, C, H, W) with H, W > 0, got ",
              shape_str(x.shape()));
  const Tensor xc = x.contiguous();
  const Device dev = x.device();
  Tensor y = Tensor::empty({x.size(0), x.size(1)}, DType::f32, dev);
  const std::int64_t planes = x.size(0) * x.size(1), HW = x.size(2) * x.size(3);
  dispatch("global_avg_pool2d_forward", dev, {
    .cpu = [&] { cpu::global_avg_pool2d_forward(xc.f32(), y.f32(), planes, HW); },
#if EPOCH_WITH_CUDA
    .cuda = [&] { cuda::global_avg_pool2d_forward(xc.f32(), y.f32(), planes, HW); },
#endif
  });
  return y;
}

Tensor global_avg_pool2d_backward(const Tensor& dy, const Shape& x_shape) {
  check_f32("global_avg_pool2d_backward", "dy", dy);
  EPOCH_CHECK(x_shape.size() == 4 && x_shape[2] * x_shape[3] > 0,
              "global_avg_pool2d_backward: x must be (N, C, H, W) with H, W > 0, got ",
              shape_str(x_shape));
  EPOCH_CHECK(dy.shape() == Shape({x_shape[0], x_shape[1]}), "global_avg_pool2d_backward: dy ",
              shape_str(dy.shape()), " must be (N, C) for x ", shape_str(x_shape));
  const Tensor dyc = dy.contiguous();
  const Device dev = dy.device();
  Tensor dx = Tensor::empty(x_shape, DType::f32, dev);
  const std::int64_t planes = x_shape[0] * x_shape[1], HW = x_shape[2] * x_shape[3];
  dispatch("global_avg_pool2d_backward", dev, {
    .cpu = [&] { cpu::global_avg_pool2d_backward(dyc.f32(), dx.f32(), planes, HW); },
#if EPOCH_WITH_CUDA
    .cuda = [&] { cuda::global_avg_pool2d_backward(dyc.f32(), dx.f32(), planes, HW); },
#endif
  });
  return dx;
}

}  // namespace epoch::ops
