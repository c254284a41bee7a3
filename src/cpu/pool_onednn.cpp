// oneDNN pooling (see pool_onednn.h): cached forward-training and backward primitives per
// (algorithm, sizes), run directly on the caller's NCHW buffers. Max pooling whose windows
// tile the input (kernel == stride, no padding: every 2x2/2 layer) uses a hand-written NCHW
// kernel instead: oneDNN 2.6 transposes NCHW to blocks and back inside its pooling, which made
// it 4x slower than this on fmnist-cnn's pools (measured; see tiled_max_* below).
#include "cpu/pool_onednn.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <unordered_map>

#include "cpu/onednn_context.h"

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
  return PoolFwd::primitive_desc(desc, engine());
}

struct ForwardBundle {
  PoolFwd prim;
  memory::desc src, dst, workspace;
};

struct BackwardBundle {
  PoolBwd prim;
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
    return ForwardBundle{PoolFwd(pd), pd.src_desc(), pd.dst_desc(), pd.workspace_desc()};
  });
}

std::shared_ptr<const BackwardBundle> backward_bundle(const Pool2dDims& d, std::int64_t C,
                                                      dnnl::algorithm alg) {
  return cached<BackwardBundle>(pool_key("pool_bwd", d, C, alg), [&] {
    const PoolGeometry g = geometry(d, C);
    PoolBwd::desc desc(alg, plain_md(g.src), plain_md(g.dst), g.strides, g.kernel, g.pad_l,
                       g.pad_r);
    PoolBwd::primitive_desc pd(desc, engine(), forward_pd(g, alg));
    return BackwardBundle{PoolBwd(pd), pd.diff_src_desc(), pd.diff_dst_desc(),
                          pd.workspace_desc()};
  });
}

void run_forward(const Pool2dDims& d, std::int64_t C, dnnl::algorithm alg, const float* x,
                 float* y, std::uint8_t* workspace) {
  const SerialIfSmall serial(work(d));
  auto f = forward_bundle(d, C, alg);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, wrap(f->src, x)},
                                       {DNNL_ARG_DST, wrap(f->dst, y)}};
  if (workspace != nullptr) args.emplace(DNNL_ARG_WORKSPACE, wrap(f->workspace, workspace));
  f->prim.execute(stream(), args);
  stream().wait();
}

void run_backward(const Pool2dDims& d, std::int64_t C, dnnl::algorithm alg, const float* dy,
                  const std::uint8_t* workspace, float* dx) {
  const SerialIfSmall serial(work(d));
  auto b = backward_bundle(d, C, alg);
  std::unordered_map<int, memory> args{{DNNL_ARG_DIFF_DST, wrap(b->diff_dst, dy)},
                                       {DNNL_ARG_DIFF_SRC, wrap(b->diff_src, dx)}};
  if (workspace != nullptr) args.emplace(DNNL_ARG_WORKSPACE, wrap(b->workspace, workspace));
  b->prim.execute(stream(), args);
  stream().wait();
}

// Max pooling whose windows tile the input: KH == stride_h, KW == stride_w, no padding, and
// the window's flat position fits a byte. The workspace then holds, per output, the position
// kh * KW + kw of the first maximum in its window (a NaN wins, as in the reference).
bool tiled(const Pool2dDims& d) {
  return d.KH == d.stride_h && d.KW == d.stride_w && d.pad_top == 0 && d.pad_left == 0 &&
         d.KH * d.KW <= 256 && d.OH * d.KH <= d.H && d.OW * d.KW <= d.W;
}

inline bool wins(float v, float best) { return v > best || (std::isnan(v) && !std::isnan(best)); }

// Any window, in the reference's order: the first maximum wins, and so does the first NaN.
void tiled_max_row(const Pool2dDims& d,
                   const float* rows,  // (KH, W): input rows oh * KH ... oh * KH + KH - 1
                   float* y,           // (OW)
                   std::uint8_t* ws) { // (OW)
  for (std::int64_t ow = 0; ow < d.OW; ++ow) {
    float m = rows[ow * d.KW];
    std::int64_t at = 0;
    for (std::int64_t kh = 0; kh < d.KH; ++kh)
      for (std::int64_t kw = 0; kw < d.KW; ++kw) {
        const float v = rows[kh * d.W + ow * d.KW + kw];
        if (wins(v, m)) m = v, at = kh * d.KW + kw;
      }
    y[ow] = m;
    ws[ow] = static_cast<std::uint8_t>(at);
  }
}

// 2x2 windows, vectorized: plain comparisons (a NaN after the first position would lose), and
// a row whose sums are not finite (a NaN, or infinities) is redone by tiled_max_row.
void tiled_max_row_2x2(const Pool2dDims& d,
                       const float* rows,  // (2, W)
                       float* y,           // (OW)
                       std::uint8_t* ws) { // (OW)
  const float* r0 = rows;
  const float* r1 = rows + d.W;
  const std::int64_t OW = d.OW;  // a local: the byte stores below could alias d
  int unusual = 0;  // an int, not a bool: GCC vectorizes the OR reduction then
  for (std::int64_t ow = 0; ow < OW; ++ow) {
    const float a = r0[2 * ow], b = r0[2 * ow + 1], c = r1[2 * ow], e = r1[2 * ow + 1];
    float m = a;
    int at = 0;
    if (b > m) m = b, at = 1;
    if (c > m) m = c, at = 2;
    if (e > m) m = e, at = 3;
    const float s = (a + b) + (c + e);
    unusual |= static_cast<int>(s != s);
    y[ow] = m;
    ws[ow] = static_cast<std::uint8_t>(at);
  }
  if (unusual) tiled_max_row(d, rows, y, ws);
}

void tiled_max_forward(const Pool2dDims& d, const float* x, float* y, std::uint8_t* ws) {
  const std::int64_t in_plane = d.H * d.W, out_plane = d.OH * d.OW;
  const bool two = d.KH == 2 && d.KW == 2;
#pragma omp parallel for schedule(static) if (d.planes * in_plane > SerialIfSmall::kSerialWork)
  for (std::int64_t p = 0; p < d.planes; ++p)
    for (std::int64_t oh = 0; oh < d.OH; ++oh) {
      const float* rows = x + p * in_plane + oh * d.KH * d.W;  // (KH, W)
      float* yr = y + p * out_plane + oh * d.OW;                // (OW)
      std::uint8_t* wr = ws + p * out_plane + oh * d.OW;        // (OW)
      if (two)
        tiled_max_row_2x2(d, rows, yr, wr);
      else
        tiled_max_row(d, rows, yr, wr);
    }
}

// dx is zero but for each window's recorded maximum, which receives its dy.
void tiled_max_backward(const Pool2dDims& d, const float* dy, const std::uint8_t* ws,
                        float* dx) {
  const std::int64_t in_plane = d.H * d.W, out_plane = d.OH * d.OW;
  std::int64_t offset[256];  // window position kh * KW + kw -> kh * W + kw
  for (std::int64_t at = 0; at < d.KH * d.KW; ++at) offset[at] = at / d.KW * d.W + at % d.KW;
#pragma omp parallel for schedule(static) if (d.planes * in_plane > SerialIfSmall::kSerialWork)
  for (std::int64_t p = 0; p < d.planes; ++p) {
    float* dxp = dx + p * in_plane;                // (H, W)
    const float* dyp = dy + p * out_plane;         // (OH, OW)
    const std::uint8_t* wp = ws + p * out_plane;  // (OH, OW)
    std::fill(dxp, dxp + in_plane, 0.0f);
    for (std::int64_t oh = 0; oh < d.OH; ++oh) {
      float* window_row = dxp + oh * d.KH * d.W;  // (KH, W)
      for (std::int64_t ow = 0; ow < d.OW; ++ow)
        window_row[ow * d.KW + offset[wp[oh * d.OW + ow]]] = dyp[oh * d.OW + ow];
    }
  }
}

}  // namespace

std::int64_t max_pool2d_workspace_bytes(const Pool2dDims& d, std::int64_t C) {
  if (tiled(d)) {
    (void)geometry(d, C);  // validates C
    return d.planes * d.OH * d.OW;
  }
  return guarded("max_pool2d (oneDNN)", [&] {
    const SerialIfSmall serial(work(d));
    const auto f = forward_bundle(d, C, dnnl::algorithm::pooling_max);
    return static_cast<std::int64_t>(f->workspace.get_size());
  });
}

void max_pool2d_forward(const Pool2dDims& d, std::int64_t C, const float* x, float* y,
                        std::uint8_t* workspace) {
  if (tiled(d)) return tiled_max_forward(d, x, y, workspace);
  guarded("max_pool2d_forward (oneDNN)",
          [&] { run_forward(d, C, dnnl::algorithm::pooling_max, x, y, workspace); });
}

void max_pool2d_backward(const Pool2dDims& d, std::int64_t C, const float* dy,
                         const std::uint8_t* workspace, float* dx) {
  if (tiled(d)) return tiled_max_backward(d, dy, workspace, dx);
  guarded("max_pool2d_backward (oneDNN)",
          [&] { run_backward(d, C, dnnl::algorithm::pooling_max, dy, workspace, dx); });
}

void avg_pool2d_forward(const Pool2dDims& d, std::int64_t C, bool count_include_pad,
                        const float* x, float* y) {
  guarded("avg_pool2d_forward (oneDNN)", [&] {
    run_forward(d, C, algorithm_of(false, count_include_pad), x, y, nullptr);
  });
}

void avg_pool2d_backward(const Pool2dDims& d, std::int64_t C, bool count_include_pad,
                         const float* dy, float* dx) {
  guarded("avg_pool2d_backward (oneDNN)", [&] {
    run_backward(d, C, algorithm_of(false, count_include_pad), dy, nullptr, dx);
  });
}

}  // namespace epoch::cpu::onednn
