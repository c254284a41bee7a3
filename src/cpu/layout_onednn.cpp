// oneDNN reorders between activation layouts (see layout_onednn.h), cached per shape.
#include "cpu/layout_onednn.h"

#include "cpu/onednn_context.h"

namespace epoch::cpu::onednn {

void reorder_channel_block(const std::array<std::int64_t, 4>& dims, const float* src,
                           std::int64_t src_block, float* dst, std::int64_t dst_block) {
  guarded("to_channel_block (oneDNN)", [&] {
    const SerialIfSmall serial(dims[0] * dims[1] * dims[2] * dims[3]);
    const dnnl::memory::dims md_dims(dims.begin(), dims.end());
    Key key("channel_block_reorder");
    key.add({dims[0], dims[1], dims[2], dims[3], src_block, dst_block});
    auto r = cached<Relayout>(
        key, [&] { return Relayout(nchw_md(md_dims, src_block), nchw_md(md_dims, dst_block)); });
    dnnl::memory in = wrap(r->from, src);
    dnnl::memory out = wrap(r->to, dst);
    kernels::note_impl(r->impl);
    run(r->prim, {{DNNL_ARG_FROM, in}, {DNNL_ARG_TO, out}});
    stream().wait();
  });
}

}  // namespace epoch::cpu::onednn
