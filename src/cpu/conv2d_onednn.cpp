// oneDNN convolution (see conv2d_onednn.h). One cached bundle per (direction, sizes, layout):
// the primitive descriptors, the primitives, and the reorders between the caller's plain
// NCHW/OIHW buffers and the layouts the primitives chose. Weights are reordered on every call
// (they change every training step), never cached.
#include "cpu/conv2d_onednn.h"

#include <algorithm>
#include <memory>
#include <string>
#include <unordered_map>

#include "cpu/onednn_context.h"

namespace epoch::cpu::onednn {

using kernels::Conv2dDims;
using kernels::note_impl;

namespace {

using dnnl::memory;
using Fwd = dnnl::convolution_forward;
using BwdData = dnnl::convolution_backward_data;
using BwdWeights = dnnl::convolution_backward_weights;

struct ConvGeometry {
  memory::dims src, wei, bias, dst, strides, dilates, pad_l, pad_r;
  dnnl::algorithm algorithm = dnnl::algorithm::convolution_direct;
};

ConvGeometry geometry(const Conv2dDims& d, ConvAlgo algo) {
  ConvGeometry g;
  // Winograd asked for by name in every direction (see conv2d_winograd_eligible); where oneDNN
  // has no Winograd kernel for this CPU, these sizes or these post-ops, `with_winograd` falls
  // back to convolution_auto, which then runs direct convolution.
  // Below a batch of 8 (measured at 8 to 64) oneDNN's own rule still decides where the batch
  // has fewer than 64 output tiles of 4x4: its rule keeps direct convolution for small
  // batches of large frames too (PredNet's ConvLSTMs at batch 1-4), where Winograd made a
  // prednet-study step 1.3-1.5x faster (docs/BENCHMARKS.md W).
  if (algo == ConvAlgo::automatic && conv2d_winograd_eligible(d))
    g.algorithm = d.N >= 8 || d.N * ((d.OH + 3) / 4) * ((d.OW + 3) / 4) >= 64
                      ? dnnl::algorithm::convolution_winograd
                      : dnnl::algorithm::convolution_auto;
  g.src = {d.N, d.C, d.H, d.W};
  if (d.groups == 1)
    g.wei = {d.OC, d.C, d.KH, d.KW};
  else  // (G, OC/G, C/G, KH, KW): the same bytes as our (OC, C/G, KH, KW)
    g.wei = {d.groups, d.OC / d.groups, d.C / d.groups, d.KH, d.KW};
  g.bias = {d.OC};
  g.dst = {d.N, d.OC, d.OH, d.OW};
  g.strides = {d.stride_h, d.stride_w};
  g.dilates = {d.dilation_h - 1, d.dilation_w - 1};  // oneDNN counts the gaps
  g.pad_l = {d.pad_h, d.pad_w};
  g.pad_r = {d.pad_h, d.pad_w};  // same floor division as conv_out_size, so OH, OW agree
  return g;
}

// make(algorithm) with g's algorithm, and again with convolution_auto if oneDNN has no
// Winograd implementation for it (it throws dnnl_unimplemented then).
template <typename MakePd>
auto with_winograd(const ConvGeometry& g, MakePd make) -> decltype(make(g.algorithm)) {
  if (g.algorithm != dnnl::algorithm::convolution_winograd) return make(g.algorithm);
  try {
    return make(g.algorithm);
  } catch (const dnnl::error& e) {
    if (e.status != dnnl_unimplemented) throw;
    return make(dnnl::algorithm::convolution_auto);
  }
}

memory::desc md_for(const memory::dims& dims, bool any) {
  return any ? any_md(dims) : plain_md(dims);
}

// The forward primitive; `epilogue` adds the sum and ReLU post-ops and picks forward_inference,
// which only the call that runs it needs (backward primitives take the plain training forward as
// hint).
Fwd::primitive_desc forward_pd(const ConvGeometry& g, bool has_bias, bool any,
                               ConvEpilogue epilogue = {}) {
  const memory::desc bias_md = has_bias ? plain_md(g.bias) : memory::desc();
  dnnl::primitive_attr attr = onednn::primitive_attr();
  if (epilogue.relu || epilogue.add) {
    dnnl::post_ops ops;
    if (epilogue.add) ops.append_sum(1.0f);  // y = conv + b + y, before the ReLU
    if (epilogue.relu) ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    attr.set_post_ops(ops);
  }
  return with_winograd(g, [&](dnnl::algorithm algorithm) {
    Fwd::desc desc(
        epilogue.inference ? dnnl::prop_kind::forward_inference : dnnl::prop_kind::forward_training,
        algorithm, md_for(g.src, any), md_for(g.wei, any), bias_md, md_for(g.dst, any), g.strides,
        g.dilates, g.pad_l, g.pad_r);
    return Fwd::primitive_desc(desc, attr, engine());
  });
}

struct ForwardBundle {
  Fwd prim;
  std::string impl;
  Relayout x_in, w_in, y_out;
  Relayout y_in;  // with ConvEpilogue::add: the caller's y into the primitive's layout
  memory::desc b_md;
};

ForwardBundle make_forward(const ConvGeometry& g, bool has_bias, bool any, ConvBlocks blocks,
                           ConvEpilogue epilogue) {
  Fwd::primitive_desc pd = forward_pd(g, has_bias, any, epilogue);
  ForwardBundle f;
  f.prim = Fwd(pd);
  f.impl = impl_name(pd);
  f.x_in = Relayout(nchw_md(g.src, blocks.x), pd.src_desc());
  f.w_in = Relayout(plain_md(g.wei), pd.weights_desc());
  f.y_out = Relayout(pd.dst_desc(), nchw_md(g.dst, blocks.y));
  if (epilogue.add) f.y_in = Relayout(nchw_md(g.dst, blocks.y), pd.dst_desc());
  if (has_bias) f.b_md = pd.bias_desc();
  return f;
}

struct BackwardBundle {
  bool has_data = false;
  BwdData data_prim;
  std::string data_impl, weights_impl;
  Relayout dy_data, w_data, dx_out;
  BwdWeights weights_prim;
  Relayout x_wei, dy_wei, dw_out;
  memory::desc db_md;
};

// The data pass, with the plain training forward `hint` as its hint.
BwdData::primitive_desc backward_data_pd(const ConvGeometry& g, bool any,
                                         const Fwd::primitive_desc& hint) {
  return with_winograd(g, [&](dnnl::algorithm algorithm) {
    BwdData::desc desc(algorithm, md_for(g.src, any), md_for(g.wei, any), md_for(g.dst, any),
                       g.strides, g.dilates, g.pad_l, g.pad_r);
    return BwdData::primitive_desc(desc, primitive_attr(), engine(), hint);
  });
}

BackwardBundle make_backward(const ConvGeometry& g, bool need_dx, bool has_bias, bool any,
                             ConvBlocks blocks) {
  const Fwd::primitive_desc hint = forward_pd(g, has_bias, any);
  BackwardBundle b;
  if (need_dx) {
    const BwdData::primitive_desc pd = backward_data_pd(g, any, hint);
    b.has_data = true;
    b.data_prim = BwdData(pd);
    b.data_impl = impl_name(pd);
    b.dy_data = Relayout(nchw_md(g.dst, blocks.y), pd.diff_dst_desc());
    b.w_data = Relayout(plain_md(g.wei), pd.weights_desc());
    b.dx_out = Relayout(pd.diff_src_desc(), nchw_md(g.src, blocks.x));
  }
  const memory::desc bias_md = has_bias ? plain_md(g.bias) : memory::desc();
  const BwdWeights::primitive_desc pd = with_winograd(g, [&](dnnl::algorithm algorithm) {
    BwdWeights::desc desc(algorithm, md_for(g.src, any), md_for(g.wei, any), bias_md,
                          md_for(g.dst, any), g.strides, g.dilates, g.pad_l, g.pad_r);
    return BwdWeights::primitive_desc(desc, primitive_attr(), engine(), hint);
  });
  b.weights_prim = BwdWeights(pd);
  b.weights_impl = impl_name(pd);
  b.x_wei = Relayout(nchw_md(g.src, blocks.x), pd.src_desc());
  b.dy_wei = Relayout(nchw_md(g.dst, blocks.y), pd.diff_dst_desc());
  b.dw_out = Relayout(pd.diff_weights_desc(), plain_md(g.wei));
  if (has_bias) b.db_md = pd.diff_bias_desc();
  return b;
}

Key conv_key(const char* op, const Conv2dDims& d, bool any, bool flag_a, bool flag_b,
             ConvBlocks blocks, ConvAlgo algo) {
  Key k(op);
  k.add({algo == ConvAlgo::automatic && conv2d_winograd_eligible(d)});
  k.add({d.N,          d.C,      d.H,        d.W,        d.OC,    d.KH,     d.KW,
         d.OH,         d.OW,     d.stride_h, d.stride_w, d.pad_h, d.pad_w,  d.dilation_h,
         d.dilation_w, d.groups, any,        flag_a,     flag_b,  blocks.x, blocks.y});
  return k;
}

bool use_blocked(const Conv2dDims& d, ConvLayout layout, std::int64_t x_block) {
  if (layout == ConvLayout::automatic) layout = conv2d_chosen_layout(d, x_block);
  return layout == ConvLayout::blocked;
}

bool empty(const Conv2dDims& d) { return d.N == 0 || d.OH <= 0 || d.OW <= 0 || d.C == 0; }

std::int64_t macs(const Conv2dDims& d) {
  return d.N * d.OC * d.OH * d.OW * (d.C / d.groups) * d.KH * d.KW;
}

}  // namespace

// Measured with bench/conv_bench (one AVX-512 core, batch 64): the blocked direct kernels
// beat the plain-layout GEMM convolution 1.5-2.5x on every 3x3 layer of fmnist-cnn and catdog,
// reorders included (first layers with 1 or 3 channels too, and most in backward weights).
// A 1x1 unstrided, unpadded convolution on row-major activations is a plain GEMM with no
// im2col, and the reorders then cost more than the blocked kernel saves. On activations that
// are blocked already (a ResNet bottleneck between batch norms and 3x3 layers), the plain GEMM
// would reorder x, y, dy and dx at every call: resnet50's training step spent 1.0 of 4.2 s in
// such reorders (ONEDNN_VERBOSE, AVX-512, batch 32), so there the blocked 1x1 kernel runs.
ConvLayout conv2d_chosen_layout(const Conv2dDims& d, std::int64_t x_block) {
  const bool pointwise =
      d.KH == 1 && d.KW == 1 && d.stride_h == 1 && d.stride_w == 1 && d.pad_h == 0 && d.pad_w == 0;
  return pointwise && x_block == 0 ? ConvLayout::plain : ConvLayout::blocked;
}

// Measured with epoch bench --layers and --model (2 threads, AVX-512, batch 32 and 64;
// docs/BENCHMARKS.md N): oneDNN's Winograd F(4x4, 3x3) beats its direct kernels on every 3x3
// unit-stride layer of the zoo with 16 or more input channels (32 to 64 channels, 4x4 to 64x64
// images; deep-cnn's training step 2x), and runs 4-5x slower on first layers with 1 or 3
// channels, where the transforms cost more than the multiplications they save. Asked for by
// name rather than through convolution_auto, whose own rule keeps direct convolution for the
// weight gradient of every zoo layer and for small images (deep-cnn's 8x8 stage) although
// Winograd is 1.5-2.9x faster there (2 threads, AVX-512, batch 32; docs/BENCHMARKS.md U).
bool conv2d_winograd_eligible(const Conv2dDims& d) {
  return d.KH == 3 && d.KW == 3 && d.stride_h == 1 && d.stride_w == 1 && d.dilation_h == 1 &&
         d.dilation_w == 1 && d.groups == 1 && d.C >= 16;
}

std::int64_t conv2d_forward_output_block(const Conv2dDims& d, bool has_bias, std::int64_t x_block,
                                         ConvLayout layout, ConvAlgo algo) {
  if (empty(d)) return 0;
  return guarded("conv2d_forward (oneDNN)", [&]() -> std::int64_t {
    const SerialIfSmall serial(macs(d));
    const bool any = use_blocked(d, layout, x_block);
    if (!any) return 0;
    struct Choice {
      std::int64_t block;
    };
    auto c = cached<Choice>(
        conv_key("conv2d_fwd_block", d, any, has_bias, false, {x_block, 0}, algo), [&] {
          const ConvGeometry g = geometry(d, algo);
          return Choice{channel_block_of(forward_pd(g, has_bias, any).dst_desc())};
        });
    return c->block;
  });
}

namespace {
struct ImplName {
  std::string name;
};
}  // namespace

std::string conv2d_forward_impl(const Conv2dDims& d, bool has_bias, std::int64_t x_block,
                                ConvEpilogue epilogue, ConvLayout layout, ConvAlgo algo) {
  if (empty(d)) return "";
  return guarded("conv2d_forward (oneDNN)", [&] {
    const SerialIfSmall serial(macs(d));
    const bool any = use_blocked(d, layout, x_block);
    Key key = conv_key("conv2d_fwd_impl", d, any, has_bias, false, {x_block, 0}, algo);
    key.add({epilogue.relu, epilogue.inference, epilogue.add});
    return cached<ImplName>(
               key,
               [&] {
                 return ImplName{impl_name(forward_pd(geometry(d, algo), has_bias, any, epilogue))};
               })
        ->name;
  });
}

std::string conv2d_backward_data_impl(const Conv2dDims& d, bool has_bias, std::int64_t x_block,
                                      ConvLayout layout, ConvAlgo algo) {
  if (empty(d)) return "";
  return guarded("conv2d_backward (oneDNN)", [&] {
    const SerialIfSmall serial(macs(d));
    const bool any = use_blocked(d, layout, x_block);
    return cached<ImplName>(
               conv_key("conv2d_bwd_data_impl", d, any, has_bias, false, {x_block, 0}, algo),
               [&] {
                 const ConvGeometry g = geometry(d, algo);
                 return ImplName{impl_name(backward_data_pd(g, any, forward_pd(g, has_bias, any)))};
               })
        ->name;
  });
}

void conv2d_forward(const Conv2dDims& d, const float* x, const float* w, const float* b, float* y,
                    ConvLayout layout, ConvBlocks blocks, ConvEpilogue epilogue, ConvAlgo algo) {
  if (empty(d)) return;
  guarded("conv2d_forward (oneDNN)", [&] {
    const SerialIfSmall serial(macs(d));
    const bool any = use_blocked(d, layout, blocks.x);
    const bool has_bias = b != nullptr;
    Key key = conv_key("conv2d_fwd", d, any, has_bias, false, blocks, algo);
    key.add({epilogue.relu, epilogue.inference, epilogue.add});
    auto f = cached<ForwardBundle>(
        key, [&] { return make_forward(geometry(d, algo), has_bias, any, blocks, epilogue); });
    CallScratch scratch;
    memory xm = input(f->x_in, x, scratch);
    memory wm = input(f->w_in, w, scratch);
    // (the sum post-op reads y: y itself, or its copy in the primitive's layout)
    memory ym = epilogue.add ? input(f->y_in, y, scratch) : output(f->y_out, y, scratch);
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, xm}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DST, ym}};
    if (has_bias) args.emplace(DNNL_ARG_BIAS, wrap(f->b_md, b));
    note_impl(f->impl);
    run(f->prim, std::move(args));
    output_done(f->y_out, ym, y);
    stream().wait();
  });
}

void conv2d_backward(const Conv2dDims& d, const float* dy, const float* x, const float* w,
                     float* dx, float* dw, float* db, ConvLayout layout, ConvBlocks blocks,
                     ConvAlgo algo) {
  if (empty(d)) {
    if (dw != nullptr)
      std::fill(dw, dw + d.OC * (d.C / std::max<std::int64_t>(d.groups, 1)) * d.KH * d.KW, 0.0f);
    if (db != nullptr) std::fill(db, db + d.OC, 0.0f);
    if (dx != nullptr) std::fill(dx, dx + d.N * d.C * d.H * d.W, 0.0f);
    return;
  }
  guarded("conv2d_backward (oneDNN)", [&] {
    const SerialIfSmall serial(macs(d));
    const bool any = use_blocked(d, layout, blocks.x);
    const bool need_dx = dx != nullptr, has_bias = db != nullptr;
    auto bw = cached<BackwardBundle>(
        conv_key("conv2d_bwd", d, any, need_dx, has_bias, blocks, algo),
        [&] { return make_backward(geometry(d, algo), need_dx, has_bias, any, blocks); });
    CallScratch scratch;
    // Weights first: dy reordered for it may be reused by the data pass.
    memory dy_w;
    if (dw != nullptr) {
      dy_w = input(bw->dy_wei, dy, scratch);
      memory xm = input(bw->x_wei, x, scratch);
      memory dwm = output(bw->dw_out, dw, scratch);
      std::unordered_map<int, memory> args{
          {DNNL_ARG_SRC, xm}, {DNNL_ARG_DIFF_DST, dy_w}, {DNNL_ARG_DIFF_WEIGHTS, dwm}};
      if (has_bias) args.emplace(DNNL_ARG_DIFF_BIAS, wrap(bw->db_md, db));
      note_impl(bw->weights_impl);
      run(bw->weights_prim, std::move(args));
      output_done(bw->dw_out, dwm, dw);
    }
    if (need_dx) {
      memory dy_d =
          dw != nullptr && bw->dy_data.to == bw->dy_wei.to ? dy_w : input(bw->dy_data, dy, scratch);
      memory wm = input(bw->w_data, w, scratch);
      memory dxm = output(bw->dx_out, dx, scratch);
      note_impl(bw->data_impl);
      run(bw->data_prim,
          {{DNNL_ARG_DIFF_DST, dy_d}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DIFF_SRC, dxm}});
      output_done(bw->dx_out, dxm, dx);
    }
    stream().wait();
  });
}

}  // namespace epoch::cpu::onednn
