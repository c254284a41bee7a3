// Layout conversion between row-major and channel-blocked activations (see layout.h).
#include "epoch/ops/layout.h"

#include "ops/dispatch.h"

#if EPOCH_WITH_ONEDNN
#include "cpu/layout_onednn.h"
#include "ops/relayout.h"
#endif

namespace epoch::ops {

#if EPOCH_WITH_ONEDNN
Tensor relayout(const Tensor& t, std::int64_t block) {
  if (t.channel_block() == block) return block == 0 ? t.contiguous() : t;
  const Tensor src = t.is_blocked() ? t : t.contiguous();
  Tensor out = block != 0 ? Tensor::empty_blocked(t.shape(), block)
                          : Tensor::empty(t.shape(), DType::f32, t.device());
  cpu::onednn::reorder_channel_block({t.size(0), t.size(1), t.size(2), t.size(3)},
                                     activation_f32(src), t.channel_block(), activation_f32(out),
                                     block);
  return out;
}
#endif

Tensor to_channel_block(const Tensor& t, std::int64_t block) {
  EPOCH_CHECK(t.defined(), "to_channel_block: undefined tensor");
  if (block == t.channel_block()) return block == 0 ? t.contiguous() : t;
  check_f32("to_channel_block", "t", t);
  EPOCH_CHECK(t.device().is_cpu(), "to_channel_block: channel-blocked tensors live on the CPU");
  Tensor out;
  dispatch("to_channel_block", t.device(), {
    .cpu = [&] { out = t.to_channel_block(block); },
#if EPOCH_WITH_ONEDNN
    .fast = [&] { out = relayout(t, block); },
    .strict_ok = true,  // the same bits at every thread count (thread_invariance_test)
#endif
  });
  return out;
}

}  // namespace epoch::ops
