// oneDNN batch norm and LRN (see norm_onednn.h). oneDNN's kernels for plain NCHW are its slow
// generic ones here (batch norm 2-4x, LRN up to 16x slower than our reference: measured on
// (64, 64, 12, 12)), so both run in the layout that has a JIT kernel, with reorders around
// them where the caller's layout is another (batch norm takes activations kept blocked as they
// are): batch norm in 16-channel blocks (8 where oneDNN has no JIT kernel for 16: AVX2
// machines), LRN channels-last (its blocked kernel only takes a window of 5). The
// running-statistics update and 1/sqrt(var + eps) are computed here per channel; oneDNN keeps
// the variance where we keep invstd, and backward converts back.
// LRN runs epoch's own NCHW kernel (cpu/norm_nchw.h) where oneDNN has only its reference code
// (AVX2 machines: the cached primitive records oneDNN's choice) and where oneDNN 2.6's
// channels-last backward fails us: it crashes on a one-channel window, and gives wrong
// gradients for windows of 7 or more when C is above 16 and not a multiple of 16 (found by the
// parity tests; a one-channel forward is elementwise and runs the own kernel too).
#include "cpu/norm_onednn.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "cpu/norm_nchw.h"
#include "cpu/onednn_context.h"

namespace epoch::cpu::onednn {
namespace {

using dnnl::memory;
using BnFwd = dnnl::batch_normalization_forward;
using BnBwd = dnnl::batch_normalization_backward;
using LrnFwd = dnnl::lrn_forward;
using LrnBwd = dnnl::lrn_backward;
using Flags = dnnl::normalization_flags;
using Tag = memory::format_tag;

std::int64_t bits(float f) { return std::bit_cast<std::uint32_t>(f); }

memory::dims data_dims(std::int64_t N, std::int64_t C, std::int64_t HW) { return {N, C, HW, 1}; }

memory::desc tagged_md(const memory::dims& dims, Tag tag) {
  return memory::desc(dims, memory::data_type::f32, tag);
}

Flags bn_flags(bool training) {
  Flags f = Flags::use_scale | Flags::use_shift;
  return training ? f : f | Flags::use_global_stats;
}

BnFwd::primitive_desc bn_forward_pd(const memory::desc& data, float eps, bool training) {
  BnFwd::desc desc(dnnl::prop_kind::forward_training, data, eps, bn_flags(training));
  return BnFwd::primitive_desc(desc, primitive_attr(), engine());
}

// The blocked layout batch norm runs in: the caller's channel block when oneDNN has a JIT
// kernel for it (activations kept blocked need no reorder), else 16-channel blocks, unless
// oneDNN has only its reference code there and a JIT kernel for 8-channel blocks (AVX2).
Tag bn_layout(const memory::dims& dims, float eps, bool training, std::int64_t block) {
  const auto tag_of = [](std::int64_t b) { return b == 8 ? Tag::nChw8c : Tag::nChw16c; };
  if (block != 0 && !kernels::is_reference_impl(
                        impl_name(bn_forward_pd(tagged_md(dims, tag_of(block)), eps, training))))
    return tag_of(block);
  if (!kernels::is_reference_impl(
          impl_name(bn_forward_pd(tagged_md(dims, Tag::nChw16c), eps, training))))
    return Tag::nChw16c;
  const bool jit8 = !kernels::is_reference_impl(
      impl_name(bn_forward_pd(tagged_md(dims, Tag::nChw8c), eps, training)));
  return jit8 ? Tag::nChw8c : Tag::nChw16c;
}

struct BnForwardBundle {
  BnFwd prim;
  std::string impl;
  Relayout x_in, y_out;
  memory::desc stat;
};

struct BnBackwardBundle {
  BnBwd prim;
  std::string impl;
  Relayout x_in, dy_in, dx_out;
  memory::desc stat;
};

Key bn_key(const char* op, std::int64_t N, std::int64_t C, std::int64_t HW, float eps,
           bool training, std::int64_t block) {
  Key k(op);
  k.add({N, C, HW, bits(eps), training, block});
  return k;
}

// own: oneDNN has only its reference code for these sizes (impl), so epoch's NCHW kernel runs
// and the bundle holds no primitive.
struct LrnForwardBundle {
  std::string impl;
  bool own = false;
  LrnFwd prim;
  Relayout x_in, y_out;
};

struct LrnBackwardBundle {
  std::string impl;
  bool own = false;
  LrnFwd forward;  // reruns the forward for the workspace the backward reads
  LrnBwd prim;
  Relayout x_in, dy_in, dx_out;
  memory::desc y, workspace;
};

Key lrn_key(const char* op, std::int64_t N, std::int64_t C, std::int64_t HW, std::int64_t size,
            float alpha, float beta, float k) {
  Key key(op);
  key.add({N, C, HW, size, bits(alpha), bits(beta), bits(k)});
  return key;
}

LrnFwd::primitive_desc lrn_forward_pd(dnnl::prop_kind prop, const memory::desc& data,
                                      std::int64_t size, float alpha, float beta, float k) {
  LrnFwd::desc desc(prop, dnnl::algorithm::lrn_across_channels, data, size, alpha, beta, k);
  return LrnFwd::primitive_desc(desc, primitive_attr(), engine());
}

void check_lrn_size(std::int64_t size) {
  EPOCH_CHECK(size >= 1 && size % 2 == 1, "lrn (oneDNN): window size must be odd, got ", size);
}

// Whether oneDNN's channels-last LRN backward is right for these sizes (see the top).
bool lrn_backward_supported(std::int64_t C, std::int64_t size) {
  return size > 1 && (C % 16 == 0 || C < 16 || size <= 5);
}

}  // namespace

void batch_norm_forward(const float* x, const float* gamma, const float* beta, float* running_mean,
                        float* running_var, float* y, float* save_mean, float* save_invstd,
                        std::int64_t N, std::int64_t C, std::int64_t HW, bool training,
                        float momentum, float eps, bool unbiased_running_var, std::int64_t block) {
  if (C == 0) return;
  guarded("batch_norm_forward (oneDNN)", [&] {
    const SerialIfSmall serial(N * C * HW);
    auto f = cached<BnForwardBundle>(bn_key("bn_fwd", N, C, HW, eps, training, block), [&] {
      const memory::dims dims = data_dims(N, C, HW);
      const memory::desc caller = nchw_md(dims, block);
      BnFwd::primitive_desc pd =
          bn_forward_pd(tagged_md(dims, bn_layout(dims, eps, training, block)), eps, training);
      return BnForwardBundle{BnFwd(pd), impl_name(pd), Relayout(caller, pd.src_desc()),
                             Relayout(pd.dst_desc(), caller), plain_md({C})};
    });
    std::vector<float> var(static_cast<std::size_t>(C));
    CallScratch scratch;
    memory xm = input(f->x_in, x, scratch);
    memory ym = output(f->y_out, y, scratch);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, xm},
                                         {DNNL_ARG_DST, ym},
                                         {DNNL_ARG_SCALE, wrap(f->stat, gamma)},
                                         {DNNL_ARG_SHIFT, wrap(f->stat, beta)}};
    if (training) {
      args.emplace(DNNL_ARG_MEAN, wrap(f->stat, save_mean));
      args.emplace(DNNL_ARG_VARIANCE, wrap(f->stat, var.data()));
    } else {
      args.emplace(DNNL_ARG_MEAN, wrap(f->stat, running_mean));
      args.emplace(DNNL_ARG_VARIANCE, wrap(f->stat, running_var));
    }
    kernels::note_impl(f->impl);
    run(f->prim, std::move(args));
    output_done(f->y_out, ym, y);
    stream().wait();
    const double count = static_cast<double>(N * HW);
    const double unbias = unbiased_running_var && count > 1 ? count / (count - 1) : 1.0;
    for (std::int64_t c = 0; c < C; ++c) {
      if (training) {
        running_mean[c] = (1.0f - momentum) * running_mean[c] + momentum * save_mean[c];
        running_var[c] =
            (1.0f - momentum) * running_var[c] + momentum * static_cast<float>(var[c] * unbias);
        save_invstd[c] = static_cast<float>(1.0 / std::sqrt(static_cast<double>(var[c]) + eps));
      } else {
        save_mean[c] = running_mean[c];
        save_invstd[c] =
            static_cast<float>(1.0 / std::sqrt(static_cast<double>(running_var[c]) + eps));
      }
    }
  });
}

void batch_norm_backward(const float* dy, const float* x, const float* gamma,
                         const float* save_mean, const float* save_invstd, float* dx, float* dgamma,
                         float* dbeta, std::int64_t N, std::int64_t C, std::int64_t HW,
                         bool training, std::int64_t block) {
  if (C == 0) return;
  guarded("batch_norm_backward (oneDNN)", [&] {
    const SerialIfSmall serial(N * C * HW);
    // Any eps gives the same result once the variance is rebuilt from invstd with it.
    const float eps = 1e-5f;
    auto b = cached<BnBackwardBundle>(bn_key("bn_bwd", N, C, HW, eps, training, block), [&] {
      const memory::dims dims = data_dims(N, C, HW);
      const memory::desc caller = nchw_md(dims, block);
      const memory::desc blocked = tagged_md(dims, bn_layout(dims, eps, training, block));
      BnBwd::desc desc(dnnl::prop_kind::backward, blocked, blocked, eps, bn_flags(training));
      BnBwd::primitive_desc pd(desc, primitive_attr(), engine(),
                               bn_forward_pd(blocked, eps, training));
      return BnBackwardBundle{BnBwd(pd),
                              impl_name(pd),
                              Relayout(caller, pd.src_desc()),
                              Relayout(caller, pd.diff_dst_desc()),
                              Relayout(pd.diff_src_desc(), caller),
                              plain_md({C})};
    });
    // oneDNN 2.6 wants the shift even though the gradients do not depend on it.
    std::vector<float> var(static_cast<std::size_t>(C)), unused_shift(var.size(), 0.0f);
    for (std::int64_t c = 0; c < C; ++c) {
      const double s = save_invstd[c];
      var[c] = static_cast<float>(1.0 / (s * s) - eps);
    }
    CallScratch scratch;
    memory xm = input(b->x_in, x, scratch);
    memory dym = input(b->dy_in, dy, scratch);
    memory dxm = output(b->dx_out, dx, scratch);
    kernels::note_impl(b->impl);
    run(b->prim, {{DNNL_ARG_SRC, xm},
                  {DNNL_ARG_DIFF_DST, dym},
                  {DNNL_ARG_MEAN, wrap(b->stat, save_mean)},
                  {DNNL_ARG_VARIANCE, wrap(b->stat, var.data())},
                  {DNNL_ARG_SCALE, wrap(b->stat, gamma)},
                  {DNNL_ARG_SHIFT, wrap(b->stat, unused_shift.data())},
                  {DNNL_ARG_DIFF_SRC, dxm},
                  {DNNL_ARG_DIFF_SCALE, wrap(b->stat, dgamma)},
                  {DNNL_ARG_DIFF_SHIFT, wrap(b->stat, dbeta)}});
    output_done(b->dx_out, dxm, dx);
    stream().wait();
  });
}

void lrn_forward(const float* x, float* y, std::int64_t N, std::int64_t C, std::int64_t HW,
                 std::int64_t size, float alpha, float beta, float k) {
  check_lrn_size(size);
  if (N * C * HW == 0) return;
  if (size == 1) return nchw::lrn_forward(x, y, N, C, HW, size, alpha, beta, k);
  guarded("lrn_forward (oneDNN)", [&] {
    const SerialIfSmall serial(N * C * HW * size);
    auto f = cached<LrnForwardBundle>(lrn_key("lrn_fwd", N, C, HW, size, alpha, beta, k), [&] {
      const memory::dims dims = data_dims(N, C, HW);
      // Scoring: no workspace to write, since backward recomputes it.
      LrnFwd::primitive_desc pd = lrn_forward_pd(dnnl::prop_kind::forward_scoring,
                                                 tagged_md(dims, Tag::nhwc), size, alpha, beta, k);
      LrnForwardBundle b;
      b.impl = impl_name(pd);
      b.own = kernels::is_reference_impl(b.impl);
      if (b.own) return b;
      b.prim = LrnFwd(pd);
      b.x_in = Relayout(plain_md(dims), pd.src_desc());
      b.y_out = Relayout(pd.dst_desc(), plain_md(dims));
      return b;
    });
    if (f->own) return nchw::lrn_forward(x, y, N, C, HW, size, alpha, beta, k);
    CallScratch scratch;
    memory xm = input(f->x_in, x, scratch);
    memory ym = output(f->y_out, y, scratch);
    kernels::note_impl(f->impl);
    run(f->prim, {{DNNL_ARG_SRC, xm}, {DNNL_ARG_DST, ym}});
    output_done(f->y_out, ym, y);
    stream().wait();
  });
}

void lrn_backward(const float* dy, const float* x, const float* y, float* dx, std::int64_t N,
                  std::int64_t C, std::int64_t HW, std::int64_t size, float alpha, float beta,
                  float k) {
  check_lrn_size(size);
  if (N * C * HW == 0) return;
  if (!lrn_backward_supported(C, size))
    return nchw::lrn_backward(dy, x, y, dx, N, C, HW, size, alpha, beta, k);
  guarded("lrn_backward (oneDNN)", [&] {
    const SerialIfSmall serial(N * C * HW * size);
    auto b = cached<LrnBackwardBundle>(lrn_key("lrn_bwd", N, C, HW, size, alpha, beta, k), [&] {
      const memory::dims dims = data_dims(N, C, HW);
      const memory::desc channels_last = tagged_md(dims, Tag::nhwc);
      LrnFwd::primitive_desc fwd =
          lrn_forward_pd(dnnl::prop_kind::forward_training, channels_last, size, alpha, beta, k);
      LrnBwd::desc desc(dnnl::algorithm::lrn_across_channels, channels_last, channels_last, size,
                        alpha, beta, k);
      LrnBwd::primitive_desc pd(desc, primitive_attr(), engine(), fwd);
      LrnBackwardBundle b;
      b.impl = impl_name(pd);
      b.own = kernels::is_reference_impl(b.impl);
      if (b.own) return b;
      b.forward = LrnFwd(fwd);
      b.prim = LrnBwd(pd);
      b.x_in = Relayout(plain_md(dims), pd.src_desc());
      b.dy_in = Relayout(plain_md(dims), pd.diff_dst_desc());
      b.dx_out = Relayout(pd.diff_src_desc(), plain_md(dims));
      b.y = fwd.dst_desc();
      b.workspace = fwd.workspace_desc();
      return b;
    });
    if (b->own) return nchw::lrn_backward(dy, x, y, dx, N, C, HW, size, alpha, beta, k);
    CallScratch scratch;
    memory xm = input(b->x_in, x, scratch);
    memory dym = input(b->dy_in, dy, scratch);
    memory dxm = output(b->dx_out, dx, scratch);
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, xm}, {DNNL_ARG_DIFF_DST, dym}, {DNNL_ARG_DIFF_SRC, dxm}};
    kernels::note_impl(b->impl);
    if (b->workspace.get_size() > 0) {
      memory ws(b->workspace, engine(), scratch.get(b->workspace.get_size()));
      memory y_again(b->y, engine(), scratch.get(b->y.get_size()));
      run(b->forward, {{DNNL_ARG_SRC, xm}, {DNNL_ARG_DST, y_again}, {DNNL_ARG_WORKSPACE, ws}});
      args.emplace(DNNL_ARG_WORKSPACE, ws);
    }
    run(b->prim, std::move(args));
    output_done(b->dx_out, dxm, dx);
    stream().wait();
  });
}

}  // namespace epoch::cpu::onednn
