// Dtype conversions: argument checks and dispatch (see ops/convert.h).
#include "epoch/ops/convert.h"

#include "cpu/convert_cpu.h"
#include "ops/dispatch.h"
#if EPOCH_WITH_CUDA
#include "cuda/convert_cuda.h"
#endif

namespace epoch::ops {

Tensor i32_to_f32(const Tensor& x) {
  EPOCH_CHECK(x.defined() && x.dtype() == DType::i32, "i32_to_f32: x must be i32, got ",
              x.defined() ? dtype_name(x.dtype()) : "undefined");
  const Tensor in = x.contiguous();
  Tensor y = Tensor::empty(x.shape(), DType::f32, x.device());
  const std::int32_t* src = in.data<std::int32_t>();
  float* dst = y.f32();
  dispatch("i32_to_f32", x.device(), {
    .cpu = [&] { cpu::i32_to_f32(src, dst, x.numel()); }
#if EPOCH_WITH_CUDA
    ,
    .cuda = [&] { cuda::i32_to_f32(src, dst, x.numel()); }
#endif
  });
  return y;
}

}  // namespace epoch::ops
