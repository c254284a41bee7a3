// CPU i32 -> f32 conversion (see convert_cpu.h).
#include "cpu/convert_cpu.h"

namespace epoch::cpu {

void i32_to_f32(const std::int32_t* x, float* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(x[i]);
}

}  // namespace epoch::cpu
