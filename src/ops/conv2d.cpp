// 2-D convolution: argument checks, output sizes and dispatch by device (reference kernels in
// cpu/conv2d_cpu.h; a oneDNN path is chosen first on the CPU when use_onednn()).
#include "epoch/ops/conv2d.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "cpu/activation_cpu.h"
#include "cpu/conv2d_cpu.h"
#include "cpu/elementwise_cpu.h"
#include "epoch/ops/activation.h"
#include "epoch/ops/backend.h"
#include "epoch/ops/elementwise.h"
#include "kernels/args.h"
#include "ops/dispatch.h"

#if EPOCH_WITH_ONEDNN
#include "cpu/conv2d_onednn.h"
#include "cpu/conv2d_winograd.h"
#include "cpu/fixed_parts.h"
#include "kernels/impl_note.h"
#include "ops/batch_parts.h"
#include "ops/relayout.h"
#endif
#if EPOCH_WITH_CUDA
#include "cuda/activation_cuda.h"
#include "cuda/conv2d_gemm.h"
#endif
#if EPOCH_WITH_CUDNN
#include "cuda/conv2d_cudnn.h"
#endif

namespace epoch::ops {
namespace {

// Validates x, w, b and p together and returns the sizes of the convolution.
kernels::Conv2dDims conv_dims(const char* op, const Tensor& x, const Tensor& w, const Tensor& b,
                              const Conv2dParams& p) {
  check_f32(op, "x", x);
  check_f32(op, "w", w);
  if (b.defined()) check_f32(op, "b", b);
  EPOCH_CHECK(x.ndim() == 4, op, ": x must be (N, C, H, W), got ", shape_str(x.shape()));
  EPOCH_CHECK(w.ndim() == 4, op, ": w must be (OC, C/groups, KH, KW), got ", shape_str(w.shape()));
  EPOCH_CHECK(p.groups >= 1, op, ": groups must be >= 1, got ", p.groups);
  kernels::Conv2dDims d;
  d.N = x.size(0), d.C = x.size(1), d.H = x.size(2), d.W = x.size(3);
  d.OC = w.size(0), d.KH = w.size(2), d.KW = w.size(3);
  d.groups = p.groups;
  EPOCH_CHECK(d.C % p.groups == 0 && d.OC % p.groups == 0, op, ": channels C=", d.C,
              " and OC=", d.OC, " must both be divisible by groups=", p.groups);
  EPOCH_CHECK(w.size(1) == d.C / p.groups, op, ": w ", shape_str(w.shape()), " needs ",
              d.C / p.groups, " input channels per group for x ", shape_str(x.shape()),
              " and groups=", p.groups);
  EPOCH_CHECK(!b.defined() || b.shape() == Shape{d.OC}, op, ": b must be (", d.OC, "), got ",
              shape_str(b.shape()));
  d.OH = conv_out_size(d.H, d.KH, p.stride_h, p.pad_h, p.dilation_h);
  d.OW = conv_out_size(d.W, d.KW, p.stride_w, p.pad_w, p.dilation_w);
  d.stride_h = p.stride_h, d.stride_w = p.stride_w;
  d.pad_h = p.pad_h, d.pad_w = p.pad_w;
  d.dilation_h = p.dilation_h, d.dilation_w = p.dilation_w;
  return d;
}

#if EPOCH_WITH_ONEDNN
// The calling thread's choice (ops::conv_algorithm) in the oneDNN path's terms.
cpu::onednn::ConvAlgo onednn_conv_algo() {
  return conv_algorithm() == ConvAlgorithm::automatic ? cpu::onednn::ConvAlgo::automatic
                                                      : cpu::onednn::ConvAlgo::direct;
}

// epoch's own Winograd kernels (cpu/conv2d_winograd.h) take the layers that `automatic` gives
// to Winograd where oneDNN has no Winograd kernel for the CPU it dispatches to (below AVX-512).
bool own_winograd(const kernels::Conv2dDims& d) {
  return conv_algorithm() == ConvAlgorithm::automatic && !onednn_has_winograd() &&
         cpu::onednn::conv2d_winograd_eligible(d) && cpu::conv2d_winograd_supported(d);
}

// oneDNN's GEMM-based convolutions (im2col, then its sgemm) leave the sum over C*KH*KW to the
// sgemm, which below AVX-512 splits it by thread count (measured: AlexNet's and ResNet's first
// layers, a 1x1 layer on row-major activations; thread_invariance_test).
bool gemm_based(const std::string& impl) { return impl.find("gemm") != std::string::npos; }

// True when the forward runs over the fixed partition of the batch: under strict, for grouped
// convolutions, whose sums over input channels oneDNN's forward kernels split by thread count,
// and for the GEMM-based ones (measured; every other forward gives the same bits at 1 to 4
// threads, thread_invariance_test, and a single-threaded part per sample costs up to a third
// of a ResNet's step). oneDNN is asked which implementation it picks at one thread, so the
// answer is the same at every thread count.
bool forward_in_parts(const kernels::Conv2dDims& d, bool has_bias, std::int64_t xb,
                      const cpu::onednn::ConvEpilogue& epilogue, cpu::onednn::ConvAlgo algo) {
  if (cpu_kernels() != CpuKernels::strict) return false;
  if (d.groups > 1) return true;
  const cpu::OneThread one;
  return gemm_based(cpu::onednn::conv2d_forward_impl(d, has_bias, xb, epilogue,
                                                     cpu::onednn::ConvLayout::automatic, algo));
}

// True when strict runs the data pass over the fixed partition of the batch with the weight
// pass (a GEMM-based data pass, as forward_in_parts, or oneDNN's AVX-512 Winograd, whose data
// pass at batch 1 gives other bits at 2 threads than at 1: measured, thread_invariance_test's
// batch1_conv); else on every thread over the whole batch.
bool data_pass_in_parts(const kernels::Conv2dDims& d, bool has_bias, std::int64_t xb,
                        cpu::onednn::ConvAlgo algo) {
  if (cpu_kernels() != CpuKernels::strict) return false;
  const cpu::OneThread one;
  const std::string impl = cpu::onednn::conv2d_backward_data_impl(
      d, has_bias, xb, cpu::onednn::ConvLayout::automatic, algo);
  return gemm_based(impl) || impl.find("wino") != std::string::npos;
}

// True when strict sums the weight gradient over fixed tiles of the output channels
// (weights_over_channel_tiles: nothing added across tiles) rather than over the batch
// partition with its partial sums: where the batch gives fewer parts than the channels (batch
// 1 to 3: PredNet), or the weights outnumber the batch's inputs (a ResNet's last stages, whose
// partials cost more to add than to compute). dy's channel block must divide the channels.
bool weights_over_channels(const kernels::Conv2dDims& d, std::int64_t dy_block) {
  if (d.groups != 1 || (dy_block != 0 && d.OC % dy_block != 0)) return false;
  const std::size_t tiles = cpu::fixed_tiles(d.OC).size();
  if (tiles < 2) return false;
  const std::size_t parts = cpu::fixed_parts(d.N).size();
  const std::int64_t weights = d.OC * d.C * d.KH * d.KW, inputs = d.N * d.C * d.H * d.W;
  return parts < std::min<std::size_t>(tiles, cpu::kMaxFixedParts) || weights >= inputs;
}

// dw and db (db may be null) over cpu::fixed_tiles of the output channels, each tile on one
// thread: the tile's channels of dy copied out (a contiguous run per sample in the row-major
// and the blocked layouts alike, the tiles being whole blocks), then oneDNN's single-threaded
// weight pass over the whole batch for those channels alone.
void weights_over_channel_tiles(const kernels::Conv2dDims& d, const Tensor& dyc, const Tensor& xc,
                                const float* w, float* dw, float* db, cpu::onednn::ConvAlgo algo) {
  const std::vector<cpu::Part> tiles = cpu::fixed_tiles(d.OC);
  const std::int64_t plane = d.OH * d.OW, per_channel = d.C * d.KH * d.KW;
  const float* dy = activation_f32(dyc);
  cpu::for_each_part(tiles.size(), [&](std::size_t i) {
    const cpu::Part& t = tiles[i];
    kernels::Conv2dDims dt = d;
    dt.OC = t.count;
    std::vector<float> dy_tile(static_cast<std::size_t>(d.N * t.count * plane));
    for (std::int64_t n = 0; n < d.N; ++n)
      std::copy_n(dy + (n * d.OC + t.begin) * plane, t.count * plane,
                  dy_tile.data() + n * t.count * plane);
    cpu::onednn::conv2d_backward(
        dt, dy_tile.data(), activation_f32(xc), w + t.begin * per_channel, nullptr,
        dw + t.begin * per_channel, db != nullptr ? db + t.begin : nullptr,
        cpu::onednn::ConvLayout::automatic, {xc.channel_block(), dyc.channel_block()}, algo);
  });
}

// Runs run(part) over the whole batch as one part, or, in_parts, over the fixed partition
// (cpu/fixed_parts.h), each part on one thread.
template <typename Run>
void over_batch(const kernels::Conv2dDims& d, bool in_parts, const Run& run) {
  if (!in_parts) return run(cpu::Part{0, d.N});
  const std::vector<cpu::Part> parts = cpu::fixed_parts(d.N);
  cpu::for_each_part(parts.size(), [&](std::size_t i) { run(parts[i]); });
}

// The output channel block oneDNN's forward picks for these sizes: in parts, the one the
// parts' single-threaded primitives pick for the first part's batch.
std::int64_t forward_output_block(const kernels::Conv2dDims& d, bool has_bias, std::int64_t xb,
                                  cpu::onednn::ConvAlgo algo, bool in_parts) {
  if (!in_parts)
    return cpu::onednn::conv2d_forward_output_block(d, has_bias, xb,
                                                    cpu::onednn::ConvLayout::automatic, algo);
  kernels::Conv2dDims part = d;
  part.N = cpu::fixed_parts(d.N).front().count;
  const cpu::OneThread one;
  return cpu::onednn::conv2d_forward_output_block(part, has_bias, xb,
                                                  cpu::onednn::ConvLayout::automatic, algo);
}

// A part of a batch of f32 activations, sample_size floats a sample in either layout (blocked
// tensors have no channel padding).
inline float* part_of(const Tensor& t, const cpu::Part& part, std::int64_t sample_size) {
  return activation_f32(t) + part.begin * sample_size;
}

#endif

}  // namespace

std::int64_t conv_out_size(std::int64_t in, std::int64_t k, std::int64_t stride, std::int64_t pad,
                           std::int64_t dilation) {
  EPOCH_CHECK(in >= 1 && k >= 1, "conv2d: input size ", in, " and kernel size ", k,
              " must be positive");
  EPOCH_CHECK(stride >= 1 && dilation >= 1, "conv2d: stride ", stride, " and dilation ", dilation,
              " must be positive");
  EPOCH_CHECK(pad >= 0, "conv2d: padding must be non-negative, got ", pad);
  const std::int64_t span = dilation * (k - 1) + 1;  // extent of the dilated kernel
  EPOCH_CHECK(in + 2 * pad >= span, "conv2d: kernel ", k, " (dilation ", dilation, ", extent ",
              span, ") is larger than the padded input ", in, " + 2*", pad,
              "; the output would be empty");
  return (in + 2 * pad - span) / stride + 1;
}

Tensor conv2d_forward(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dParams& p) {
  const kernels::Conv2dDims d = conv_dims("conv2d_forward", x, w, b, p);
  const Device dev = common_device("conv2d_forward", x, w, b);
  const Tensor wc = w.contiguous();
  const Tensor bc = b.defined() ? b.contiguous() : Tensor();
  const Shape y_shape{d.N, d.OC, d.OH, d.OW};
  Tensor y;
  const float* bp = bc.defined() ? bc.f32() : nullptr;
  const auto plain = [&](auto&& kernel) {
    const Tensor xc = x.contiguous();
    y = Tensor::empty(y_shape, DType::f32, dev);
    kernel(xc.f32(), y.f32());
  };
  dispatch("conv2d_forward", dev, {
    .cpu =
        [&] {
          plain([&](const float* xp, float* yp) {
            cpu::conv2d_forward(d, xp, wc.f32(), bp, yp);
            if (p.relu) cpu::relu_forward(yp, yp, y.numel());
          });
        },
#if EPOCH_WITH_ONEDNN
    .fast =
        [&] {
          const std::int64_t x_sample = d.C * d.H * d.W, y_sample = d.OC * d.OH * d.OW;
          if (own_winograd(d)) {  // in the 8-channel blocked layout it takes
            const Tensor x8 = relayout(x, 8);
            const Tensor y8 = Tensor::empty_blocked(y_shape, 8);
            kernels::note_impl(cpu::kWinogradImpl);
            over_batch(d, cpu_kernels() == CpuKernels::strict && d.groups > 1,
                       [&](const cpu::Part& part) {
                         kernels::Conv2dDims dp = d;
                         dp.N = part.count;
                         cpu::conv2d_winograd_forward(dp, part_of(x8, part, x_sample), wc.f32(), bp,
                                                      part_of(y8, part, y_sample), p.relu);
                       });
            y = p.blocked_output ? y8 : relayout(y8, 0);
            return;
          }
          const cpu::onednn::ConvAlgo algo = onednn_conv_algo();
          const std::int64_t xb = x.channel_block();
          const bool in_parts = forward_in_parts(d, bp != nullptr, xb, {.relu = p.relu}, algo);
          const std::int64_t yb =
              p.blocked_output ? forward_output_block(d, bp != nullptr, xb, algo, in_parts) : 0;
          const Tensor xc = xb != 0 ? x : x.contiguous();
          y = yb != 0 ? Tensor::empty_blocked(y_shape, yb)
                      : Tensor::empty(y_shape, DType::f32, dev);
          // forward_inference lets oneDNN pick kernels (brgconv) that want channels-last
          // activations, which a chain of blocked activations would reorder in and out of at
          // every layer: blocked activations keep the training kernels, the same values.
          const bool inference = p.inference && xb == 0 && yb == 0;
          over_batch(d, in_parts, [&](const cpu::Part& part) {
            kernels::Conv2dDims dp = d;
            dp.N = part.count;
            cpu::onednn::conv2d_forward(dp, part_of(xc, part, x_sample), wc.f32(), bp,
                                        part_of(y, part, y_sample),
                                        cpu::onednn::ConvLayout::automatic, {xb, yb},
                                        {.relu = p.relu, .inference = inference}, algo);
          });
        },
    .strict_ok = true,  // under strict, over the fixed partition of the batch
#endif
#if EPOCH_WITH_CUDA  // cuDNN (found with the CUDA backend) unless switched off: im2col
        .cuda = [&] {
          plain([&](const float* xp, float* yp) {
#if EPOCH_WITH_CUDNN
            if (use_cudnn())
              cuda::cudnn::conv2d_forward(d, xp, wc.f32(), bp, yp);
            else
#endif
              cuda::gemm_conv::conv2d_forward(d, xp, wc.f32(), bp, yp);
            if (p.relu) cuda::relu_forward(yp, yp, y.numel());
          });
        },
#endif
  });
  return y;
}

Tensor conv2d_forward_add(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dParams& p,
                          const Tensor& residual, bool reuse_residual) {
  const char* op = "conv2d_forward_add";
  const kernels::Conv2dDims d = conv_dims(op, x, w, b, p);
  check_f32(op, "residual", residual);
  const Shape y_shape{d.N, d.OC, d.OH, d.OW};
  EPOCH_CHECK(residual.shape() == y_shape, op, ": residual ", shape_str(residual.shape()),
              " does not match the output shape ", shape_str(y_shape));
  const Device dev = common_device(op, x, w, b, residual);
  Tensor y;
  const auto separate = [&] {
    Conv2dParams q = p;
    q.relu = false;
    y = add(conv2d_forward(x, w, b, q), residual);
    if (p.relu) y = relu_forward(y);
  };
  dispatch(op, dev, {
    .cpu = separate,
#if EPOCH_WITH_ONEDNN
    .fast =
        [&] {
          if (own_winograd(d)) return separate();
          const cpu::onednn::ConvAlgo algo = onednn_conv_algo();
          const Tensor bc = b.defined() ? b.contiguous() : Tensor();
          const float* bp = bc.defined() ? bc.f32() : nullptr;
          const std::int64_t xb = x.channel_block();
          const bool in_parts =
              forward_in_parts(d, bp != nullptr, xb, {.relu = p.relu, .add = true}, algo);
          const std::int64_t yb =
              p.blocked_output ? forward_output_block(d, bp != nullptr, xb, algo, in_parts) : 0;
          if (residual.channel_block() != yb) return separate();
          const Tensor xc = xb != 0 ? x : x.contiguous();
          const Tensor wc = w.contiguous();
          const Tensor rc = yb != 0 ? residual : residual.contiguous();
          if (reuse_residual && rc.storage() == residual.storage()) {
            y = rc;  // the sum lands in the residual's own storage
          } else {
            y = empty_like(rc);
            cpu::copy(activation_f32(rc), activation_f32(y), rc.numel());
          }
          const bool inference = p.inference && xb == 0 && yb == 0;  // as conv2d_forward
          const std::int64_t x_sample = d.C * d.H * d.W, y_sample = d.OC * d.OH * d.OW;
          over_batch(d, in_parts, [&](const cpu::Part& part) {
            kernels::Conv2dDims dp = d;
            dp.N = part.count;
            cpu::onednn::conv2d_forward(
                dp, part_of(xc, part, x_sample), wc.f32(), bp, part_of(y, part, y_sample),
                cpu::onednn::ConvLayout::automatic, {xb, yb},
                {.relu = p.relu, .inference = inference, .add = true}, algo);
          });
        },
    .strict_ok = true,  // as conv2d_forward
#endif
        .cuda = separate,
  });
  return y;
}

Conv2dGrads conv2d_backward(const Tensor& dy, const Tensor& x, const Tensor& w, bool has_bias,
                            const Conv2dParams& p, bool need_dx) {
  const kernels::Conv2dDims d = conv_dims("conv2d_backward", x, w, Tensor(), p);
  check_f32("conv2d_backward", "dy", dy);
  EPOCH_CHECK(dy.shape() == Shape({d.N, d.OC, d.OH, d.OW}), "conv2d_backward: dy ",
              shape_str(dy.shape()), " does not match the output shape ",
              shape_str({d.N, d.OC, d.OH, d.OW}));
  const Device dev = common_device("conv2d_backward", dy, x, w);
  const Tensor wc = w.contiguous();
  Conv2dGrads g;
  g.dw = Tensor::empty(w.shape(), DType::f32, dev);
  if (has_bias) g.db = Tensor::empty({d.OC}, DType::f32, dev);
  float* db = has_bias ? g.db.f32() : nullptr;
  // The reference and CUDA kernels take row-major tensors and give a row-major dx.
  const auto plain = [&](auto&& kernel) {
    const Tensor dyc = dy.contiguous(), xc = x.contiguous();
    if (need_dx) g.dx = Tensor::empty(x.shape(), DType::f32, dev);
    kernel(dyc.f32(), xc.f32(), need_dx ? g.dx.f32() : nullptr);
  };
  dispatch("conv2d_backward", dev, {
    .cpu =
        [&] {
          plain([&](const float* dyp, const float* xp, float* dxp) {
            cpu::conv2d_backward(d, dyp, xp, wc.f32(), dxp, g.dw.f32(), db);
          });
        },
#if EPOCH_WITH_ONEDNN
    .fast =
        [&] {
          // The kernel over a run of samples: epoch's Winograd in the 8-channel blocked
          // layout, or oneDNN in the layouts dy and x come in; dx comes back in x's layout.
          const bool winograd = own_winograd(d);
          const cpu::onednn::ConvAlgo algo = onednn_conv_algo();
          const Tensor xc = winograd ? relayout(x, 8) : x.is_blocked() ? x : x.contiguous();
          const Tensor dyc = winograd ? relayout(dy, 8) : dy.is_blocked() ? dy : dy.contiguous();
          Tensor dxc;
          if (need_dx)
            dxc = xc.is_blocked() ? Tensor::empty_blocked(x.shape(), xc.channel_block())
                                  : Tensor::empty(x.shape(), DType::f32, dev);
          if (winograd) kernels::note_impl(cpu::kWinogradImpl);
          const std::int64_t x_sample = d.C * d.H * d.W, y_sample = d.OC * d.OH * d.OW;
          // with_dx: the part's dx too (else dw and db alone; epoch's Winograd always gives dx).
          const auto run = [&](const cpu::Part& part, float* dwp, float* dbp, bool with_dx) {
            kernels::Conv2dDims dp = d;
            dp.N = part.count;
            const float* dyp = part_of(dyc, part, y_sample);
            const float* xp = part_of(xc, part, x_sample);
            float* dxp = need_dx && with_dx ? part_of(dxc, part, x_sample) : nullptr;
            if (winograd)
              cpu::conv2d_winograd_backward(dp, dyp, xp, wc.f32(), dxp, dwp, dbp);
            else
              cpu::onednn::conv2d_backward(dp, dyp, xp, wc.f32(), dxp, dwp, dbp,
                                           cpu::onednn::ConvLayout::automatic,
                                           {xc.channel_block(), dyc.channel_block()}, algo);
          };
          const std::optional<std::uint64_t> order_key = next_perturb_order_key();
          const bool strict = cpu_kernels() == CpuKernels::strict;
          if (!strict && !order_key) {
            run(cpu::Part{0, d.N}, g.dw.f32(), db, true);
          } else if (strict && !order_key && !winograd &&
                     weights_over_channels(d, dyc.channel_block())) {
            if (need_dx) {  // on every thread, or in batch parts where it is GEMM-based
              const bool parts = data_pass_in_parts(d, has_bias, xc.channel_block(), algo);
              over_batch(d, parts,
                         [&](const cpu::Part& part) { run(part, nullptr, nullptr, true); });
            }
            weights_over_channel_tiles(d, dyc, xc, wc.f32(), g.dw.f32(), db, algo);
          } else {
            // oneDNN's data pass gives each dx element one thread's sum (the same bits at
            // every thread count, thread_invariance_test) but where it is GEMM-based: it runs
            // on every thread over the whole batch, and only the weight pass, summed over the
            // batch, runs in parts (with the GEMM-based data pass beside it).
            const bool dx_apart =
                need_dx && !winograd && !data_pass_in_parts(d, has_bias, xc.channel_block(), algo);
            if (dx_apart)
              cpu::onednn::conv2d_backward(d, activation_f32(dyc), activation_f32(xc), wc.f32(),
                                           activation_f32(dxc), nullptr, nullptr,
                                           cpu::onednn::ConvLayout::automatic,
                                           {xc.channel_block(), dyc.channel_block()}, algo);
            sum_over_parts(d.N, {g.dw.f32(), g.dw.numel()}, {db, has_bias ? d.OC : 0}, order_key,
                           [&](const cpu::Part& part, float* dwp, float* dbp) {
                             run(part, dwp, dbp, !dx_apart);
                           });
          }
          if (need_dx) g.dx = winograd ? relayout(dxc, x.channel_block()) : dxc;
        },
    // The weight gradient's sum over the batch is split in a fixed partition under strict.
        .strict_ok = true,
#endif
#if EPOCH_WITH_CUDA
    .cuda = [&] {
      plain([&](const float* dyp, const float* xp, float* dxp) {
#if EPOCH_WITH_CUDNN
        if (use_cudnn())
          return cuda::cudnn::conv2d_backward(d, dyp, xp, wc.f32(), dxp, g.dw.f32(), db);
#endif
        cuda::gemm_conv::conv2d_backward(d, dyp, xp, wc.f32(), dxp, g.dw.f32(), db);
      });
    },
#endif
  });
  return g;
}

}  // namespace epoch::ops
