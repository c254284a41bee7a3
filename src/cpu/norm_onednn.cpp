// oneDNN batch norm and LRN (see norm_onednn.h). Batch norm runs oneDNN's primitives with
// separate scale and shift; the running-statistics update and 1/sqrt(var + eps) are computed
// here per channel. oneDNN keeps the variance where we keep invstd: backward converts back.
#include "cpu/norm_onednn.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "cpu/onednn_context.h"

namespace epoch::cpu::onednn {
namespace {

using dnnl::memory;
using BnFwd = dnnl::batch_normalization_forward;
using BnBwd = dnnl::batch_normalization_backward;
using LrnFwd = dnnl::lrn_forward;
using LrnBwd = dnnl::lrn_backward;
using Flags = dnnl::normalization_flags;

std::int64_t bits(float f) { return std::bit_cast<std::uint32_t>(f); }

Flags bn_flags(bool training) {
  Flags f = Flags::use_scale | Flags::use_shift;
  return training ? f : f | Flags::use_global_stats;
}

BnFwd::primitive_desc bn_forward_pd(const memory::desc& data, float eps, bool training) {
  BnFwd::desc desc(dnnl::prop_kind::forward_training, data, eps, bn_flags(training));
  return BnFwd::primitive_desc(desc, engine());
}

struct BnForwardBundle {
  BnFwd prim;
  memory::desc data, stat;
};

struct BnBackwardBundle {
  BnBwd prim;
  memory::desc data, stat;
};

Key bn_key(const char* op, std::int64_t N, std::int64_t C, std::int64_t HW, float eps,
           bool training) {
  Key k(op);
  k.add({N, C, HW, bits(eps), training});
  return k;
}

LrnFwd::primitive_desc lrn_forward_pd(const memory::desc& data, std::int64_t size, float alpha,
                                      float beta, float k) {
  LrnFwd::desc desc(dnnl::prop_kind::forward_training, dnnl::algorithm::lrn_across_channels,
                    data, size, alpha, beta, k);
  return LrnFwd::primitive_desc(desc, engine());
}

struct LrnForwardBundle {
  LrnFwd prim;
  memory::desc data, workspace;
};

struct LrnBackwardBundle {
  LrnFwd forward;  // reruns the forward for the workspace when the backward needs one
  LrnBwd prim;
  memory::desc data, workspace;
  bool has_workspace = false;
};

Key lrn_key(const char* op, std::int64_t N, std::int64_t C, std::int64_t HW, std::int64_t size,
            float alpha, float beta, float k) {
  Key key(op);
  key.add({N, C, HW, size, bits(alpha), bits(beta), bits(k)});
  return key;
}

void check_lrn_size(std::int64_t size) {
  EPOCH_CHECK(size >= 1 && size % 2 == 1, "lrn (oneDNN): window size must be odd, got ", size);
}

}  // namespace

void batch_norm_forward(const float* x, const float* gamma, const float* beta,
                        float* running_mean, float* running_var, float* y, float* save_mean,
                        float* save_invstd, std::int64_t N, std::int64_t C, std::int64_t HW,
                        bool training, float momentum, float eps) {
  if (C == 0) return;
  guarded("batch_norm_forward (oneDNN)", [&] {
    const SerialIfSmall serial(N * C * HW);
    auto f = cached<BnForwardBundle>(bn_key("bn_fwd", N, C, HW, eps, training), [&] {
      const memory::desc data = plain_md({N, C, HW, 1});  // 4-D: the ncsp kernels
      BnFwd::primitive_desc pd = bn_forward_pd(data, eps, training);
      return BnForwardBundle{BnFwd(pd), data, plain_md({C})};
    });
    std::vector<float> var(static_cast<std::size_t>(C));
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, wrap(f->data, x)},
                                         {DNNL_ARG_DST, wrap(f->data, y)},
                                         {DNNL_ARG_SCALE, wrap(f->stat, gamma)},
                                         {DNNL_ARG_SHIFT, wrap(f->stat, beta)}};
    if (training) {
      args.emplace(DNNL_ARG_MEAN, wrap(f->stat, save_mean));
      args.emplace(DNNL_ARG_VARIANCE, wrap(f->stat, var.data()));
    } else {
      args.emplace(DNNL_ARG_MEAN, wrap(f->stat, running_mean));
      args.emplace(DNNL_ARG_VARIANCE, wrap(f->stat, running_var));
    }
    f->prim.execute(stream(), args);
    stream().wait();
    const double count = static_cast<double>(N * HW);
    const double unbias = count > 1 ? count / (count - 1) : 1.0;
    for (std::int64_t c = 0; c < C; ++c) {
      if (training) {
        running_mean[c] = (1.0f - momentum) * running_mean[c] + momentum * save_mean[c];
        running_var[c] = (1.0f - momentum) * running_var[c] +
                         momentum * static_cast<float>(var[c] * unbias);
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
                         const float* save_mean, const float* save_invstd, float* dx,
                         float* dgamma, float* dbeta, std::int64_t N, std::int64_t C,
                         std::int64_t HW, bool training) {
  if (C == 0) return;
  guarded("batch_norm_backward (oneDNN)", [&] {
    const SerialIfSmall serial(N * C * HW);
    // Any eps gives the same result once the variance is rebuilt from invstd with it.
    const float eps = 1e-5f;
    auto b = cached<BnBackwardBundle>(bn_key("bn_bwd", N, C, HW, eps, training), [&] {
      const memory::desc data = plain_md({N, C, HW, 1});  // 4-D: the ncsp kernels
      BnBwd::desc desc(dnnl::prop_kind::backward, data, data, eps, bn_flags(training));
      BnBwd::primitive_desc pd(desc, engine(), bn_forward_pd(data, eps, training));
      return BnBackwardBundle{BnBwd(pd), data, plain_md({C})};
    });
    // oneDNN 2.6 wants the shift even though the gradients do not depend on it.
    std::vector<float> var(static_cast<std::size_t>(C)), unused_shift(var.size(), 0.0f);
    for (std::int64_t c = 0; c < C; ++c) {
      const double s = save_invstd[c];
      var[c] = static_cast<float>(1.0 / (s * s) - eps);
    }
    b->prim.execute(stream(), {{DNNL_ARG_SRC, wrap(b->data, x)},
                               {DNNL_ARG_DIFF_DST, wrap(b->data, dy)},
                               {DNNL_ARG_MEAN, wrap(b->stat, save_mean)},
                               {DNNL_ARG_VARIANCE, wrap(b->stat, var.data())},
                               {DNNL_ARG_SCALE, wrap(b->stat, gamma)},
                               {DNNL_ARG_SHIFT, wrap(b->stat, unused_shift.data())},
                               {DNNL_ARG_DIFF_SRC, wrap(b->data, dx)},
                               {DNNL_ARG_DIFF_SCALE, wrap(b->stat, dgamma)},
                               {DNNL_ARG_DIFF_SHIFT, wrap(b->stat, dbeta)}});
    stream().wait();
  });
}

void lrn_forward(const float* x, float* y, std::int64_t N, std::int64_t C, std::int64_t HW,
                 std::int64_t size, float alpha, float beta, float k) {
  check_lrn_size(size);
  if (N * C * HW == 0) return;
  guarded("lrn_forward (oneDNN)", [&] {
    const SerialIfSmall serial(N * C * HW * size);
    auto f = cached<LrnForwardBundle>(lrn_key("lrn_fwd", N, C, HW, size, alpha, beta, k), [&] {
      const memory::desc data = plain_md({N, C, HW, 1});
      LrnFwd::primitive_desc pd = lrn_forward_pd(data, size, alpha, beta, k);
      return LrnForwardBundle{LrnFwd(pd), data, pd.workspace_desc()};
    });
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, wrap(f->data, x)},
                                         {DNNL_ARG_DST, wrap(f->data, y)}};
    std::unique_ptr<Scratch> ws;
    if (f->workspace.get_size() > 0) {
      ws = std::make_unique<Scratch>(f->workspace.get_size());
      args.emplace(DNNL_ARG_WORKSPACE, memory(f->workspace, engine(), ws->data()));
    }
    f->prim.execute(stream(), args);
    stream().wait();
  });
}

void lrn_backward(const float* dy, const float* x, const float* /*y*/, float* dx, std::int64_t N,
                  std::int64_t C, std::int64_t HW, std::int64_t size, float alpha, float beta,
                  float k) {
  check_lrn_size(size);
  if (N * C * HW == 0) return;
  guarded("lrn_backward (oneDNN)", [&] {
    const SerialIfSmall serial(N * C * HW * size);
    auto b = cached<LrnBackwardBundle>(lrn_key("lrn_bwd", N, C, HW, size, alpha, beta, k), [&] {
      const memory::desc data = plain_md({N, C, HW, 1});
      LrnFwd::primitive_desc fwd = lrn_forward_pd(data, size, alpha, beta, k);
      LrnBwd::desc desc(dnnl::algorithm::lrn_across_channels, data, data, size, alpha, beta, k);
      LrnBwd::primitive_desc pd(desc, engine(), fwd);
      LrnBackwardBundle bundle;
      bundle.forward = LrnFwd(fwd);
      bundle.prim = LrnBwd(pd);
      bundle.data = data;
      bundle.workspace = pd.workspace_desc();
      bundle.has_workspace = bundle.workspace.get_size() > 0;
      return bundle;
    });
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, wrap(b->data, x)},
                                         {DNNL_ARG_DIFF_DST, wrap(b->data, dy)},
                                         {DNNL_ARG_DIFF_SRC, wrap(b->data, dx)}};
    std::unique_ptr<Scratch> ws, y_again;
    if (b->has_workspace) {
      ws = std::make_unique<Scratch>(b->workspace.get_size());
      y_again = std::make_unique<Scratch>(b->data.get_size());
      memory wsm(b->workspace, engine(), ws->data());
      b->forward.execute(stream(), {{DNNL_ARG_SRC, wrap(b->data, x)},
                                    {DNNL_ARG_DST, memory(b->data, engine(), y_again->data())},
                                    {DNNL_ARG_WORKSPACE, wsm}});
      args.emplace(DNNL_ARG_WORKSPACE, wsm);
    }
    b->prim.execute(stream(), args);
    stream().wait();
  });
}

}  // namespace epoch::cpu::onednn
