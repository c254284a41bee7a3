// CPU i32 -> f32 conversion (see convert_cpu.h).
#include "cpu/convert_cpu.h"
// Compiled once per instruction-set level (kernels/isa_target.h): include it last.
#include "kernels/isa_target.h"

namespace epoch::cpu::EPOCH_ISA_NS {

void i32_to_f32(const std::int32_t* x, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(x[i]);
}

}  // namespace epoch::cpu::EPOCH_ISA_NS

#if EPOCH_ISA_LEVEL == 0
namespace epoch::cpu {
EPOCH_ISA_KERNEL(i32_to_f32);
}  // namespace epoch::cpu
#endif
