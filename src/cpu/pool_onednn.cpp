// oneDNN pooling (see pool_onednn.h): cached forward-training and backward primitives per
// (algorithm, sizes), run directly on the caller's NCHW buffers. Max pooling runs epoch's own
// NCHW kernel (cpu/pool_nchw.h) instead where its windows tile the input (every 2x2/2 layer:
// oneDNN 2.6 transposes NCHW to blocks and back inside its pooling, 4x slower there) and
// wherever oneDNN would run its unvectorized "simple_nchw" code (AVX2 machines): see
// own_max_pool below.
#include "cpu/pool_onednn.h"

#include <algorithm>
#include <memory>
#include <string>
#include <unordered_map>

#include "cpu/onednn_context.h"
#include "cpu/pool_nchw.h"

namespace epoch::cpu::onednn {

using kernels::Pool2dDims;

namespace {

using dnnl::memory;
using PoolFwd = dnnl::pooling_forward;
using PoolBwd = dnnl::pooling_backward;

struct PoolGeometry {
  memory::dims src, dst, strides, kernel, pad_l, pad_r;
};

PoolGeometry geometry(const Pool2dDims& d, std::int64_t C) {
  EPOCH_CHECK(C > 0 && d.planes % C == 0, "pool2d (oneDNN): ", d.planes,
              " planes are not a whole number of batches of C=", C);
  PoolGeometry g;
  g.src = {d.planes / C, C, d.H, d.W};
  g.dst = {d.planes / C, C, d.OH, d.OW};
  g.strides = {d.stride_h, d.stride_w};
  g.kernel = {d.KH, d.KW};
  g.pad_l = {d.pad_top, d.pad_left};
  // The smallest end padding that gives OH, OW (the caller's may be larger by less than a
  // stride; those rows and columns are never read).
  g.pad_r = {std::max<std::int64_t>(0, (d.OH - 1) * d.stride_h + d.KH - d.H - d.pad_top),
             std::max<std::int64_t>(0, (d.OW - 1) * d.stride_w + d.KW - d.W - d.pad_left)};
  return g;
}

dnnl::algorithm algorithm_of(bool max, bool count_include_pad) {
  if (max) return dnnl::algorithm::pooling_max;
  return count_include_pad ? dnnl::algorithm::pooling_avg_include_padding
                           : dnnl::algorithm::pooling_avg_exclude_padding;
}

PoolFwd::primitive_desc forward_pd(const PoolGeometry& g, dnnl::algorithm alg) {
  PoolFwd::desc desc(dnnl::prop_kind::forward_training, alg, plain_md(g.src), plain_md(g.dst),
                     g.strides, g.kernel, g.pad_l, g.pad_r);
  return PoolFwd::primitive_desc(desc, primitive_attr(), engine());
}

struct ForwardBundle {
  PoolFwd prim;
  std::string impl;  // oneDNN's implementation
  bool reference;    // impl is oneDNN's reference or "simple" code
  memory::desc src, dst, workspace;
};

struct BackwardBundle {
  PoolBwd prim;
  std::string impl;
  memory::desc diff_src, diff_dst, workspace;
};

std::int64_t work(const Pool2dDims& d) { return d.planes * d.OH * d.OW * d.KH * d.KW; }

// Callers hold a SerialIfSmall(work(d)) so that the key's thread count is the one that runs.
Key pool_key(const char* op, const Pool2dDims& d, std::int64_t C, dnnl::algorithm alg) {
  Key k(op);
  k.add({d.planes, C, d.H, d.W, d.OH, d.OW, d.KH, d.KW, d.stride_h, d.stride_w, d.pad_top,
         d.pad_left, static_cast<std::int64_t>(alg)});
  return k;
}

std::shared_ptr<const ForwardBundle> forward_bundle(const Pool2dDims& d, std::int64_t C,
                                                    dnnl::algorithm alg) {
  return cached<ForwardBundle>(pool_key("pool_fwd", d, C, alg), [&] {
    const PoolGeometry g = geometry(d, C);
    PoolFwd::primitive_desc pd = forward_pd(g, alg);
    const std::string impl = impl_name(pd);
    const bool reference = kernels::is_reference_impl(impl);
    return ForwardBundle{PoolFwd(pd),   impl,          reference,
                         pd.src_desc(), pd.dst_desc(), pd.workspace_desc()};
  });
}

std::shared_ptr<const BackwardBundle> backward_bundle(const Pool2dDims& d, std::int64_t C,
                                                      dnnl::algorithm alg) {
  return cached<BackwardBundle>(pool_key("pool_bwd", d, C, alg), [&] {
    const PoolGeometry g = geometry(d, C);
    PoolBwd::desc desc(alg, plain_md(g.src), plain_md(g.dst), g.strides, g.kernel, g.pad_l,
                       g.pad_r);
    PoolBwd::primitive_desc pd(desc, primitive_attr(), engine(), forward_pd(g, alg));
    return BackwardBundle{PoolBwd(pd), impl_name(pd), pd.diff_src_desc(), pd.diff_dst_desc(),
                          pd.workspace_desc()};
  });
}

void run_forward(const Pool2dDims& d, std::int64_t C, dnnl::algorithm alg, const float* x, float* y,
                 std::uint8_t* workspace) {
  const SerialIfSmall serial(work(d));
  auto f = forward_bundle(d, C, alg);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, wrap(f->src, x)},
                                       {DNNL_ARG_DST, wrap(f->dst, y)}};
  if (workspace != nullptr) args.emplace(DNNL_ARG_WORKSPACE, wrap(f->workspace, workspace));
  kernels::note_impl(f->impl);
  run(f->prim, std::move(args));
  stream().wait();
}

void run_backward(const Pool2dDims& d, std::int64_t C, dnnl::algorithm alg, const float* dy,
                  const std::uint8_t* workspace, float* dx) {
  const SerialIfSmall serial(work(d));
  auto b = backward_bundle(d, C, alg);
  std::unordered_map<int, memory> args{{DNNL_ARG_DIFF_DST, wrap(b->diff_dst, dy)},
                                       {DNNL_ARG_DIFF_SRC, wrap(b->diff_src, dx)}};
  if (workspace != nullptr) args.emplace(DNNL_ARG_WORKSPACE, wrap(b->workspace, workspace));
  kernels::note_impl(b->impl);
  run(b->prim, std::move(args));
  stream().wait();
}

// Whether max pooling runs epoch's NCHW kernel (cpu/pool_nchw.h) instead of oneDNN: always
// for windows that tile the input, and wherever oneDNN has only its reference or "simple"
// code for these sizes (AVX2 machines), as the cached forward primitive records. The
// backward asks the same question, so it reads the workspace the forward wrote.
bool own_max_pool(const Pool2dDims& d, std::int64_t C) {
  if (!nchw::max_pool2d_supported(d)) return false;
  if (nchw::max_pool2d_tiles(d)) return true;
  const SerialIfSmall serial(work(d));
  return forward_bundle(d, C, dnnl::algorithm::pooling_max)->reference;
}

}  // namespace

std::int64_t max_pool2d_workspace_bytes(const Pool2dDims& d, std::int64_t C) {
  return guarded("max_pool2d (oneDNN)", [&] {
    if (own_max_pool(d, C)) {
      (void)geometry(d, C);  // validates C
      return nchw::max_pool2d_workspace_bytes(d);
    }
    const SerialIfSmall serial(work(d));
    const auto f = forward_bundle(d, C, dnnl::algorithm::pooling_max);
    return static_cast<std::int64_t>(f->workspace.get_size());
  });
}

void max_pool2d_forward(const Pool2dDims& d, std::int64_t C, const float* x, float* y,
                        std::uint8_t* workspace) {
  guarded("max_pool2d_forward (oneDNN)", [&] {
    if (own_max_pool(d, C)) return nchw::max_pool2d_forward(d, x, y, workspace);
    run_forward(d, C, dnnl::algorithm::pooling_max, x, y, workspace);
  });
}

void max_pool2d_backward(const Pool2dDims& d, std::int64_t C, const float* dy,
                         const std::uint8_t* workspace, float* dx) {
  guarded("max_pool2d_backward (oneDNN)", [&] {
    if (own_max_pool(d, C)) return nchw::max_pool2d_backward(d, dy, workspace, dx);
    run_backward(d, C, dnnl::algorithm::pooling_max, dy, workspace, dx);
  });
}

void avg_pool2d_forward(const Pool2dDims& d, std::int64_t C, bool count_include_pad, const float* x,
                        float* y) {
  guarded("avg_pool2d_forward (oneDNN)",
          [&] { run_forward(d, C, algorithm_of(false, count_include_pad), x, y, nullptr); });
}

void avg_pool2d_backward(const Pool2dDims& d, std::int64_t C, bool count_include_pad,
                         const float* dy, float* dx) {
  guarded("avg_pool2d_backward (oneDNN)",
          [&] { run_backward(d, C, algorithm_of(false, count_include_pad), dy, nullptr, dx); });
}

}  // namespace epoch::cpu::onednn
