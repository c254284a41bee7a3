// CUDA twin of cpu/convert_cpu.h: integer class labels as floats, on the device.
#pragma once

#include <cstdint>

namespace epoch::cuda {

/// y[i] = float(x[i]) for n device elements.
void i32_to_f32(const std::int32_t* x, float* y, std::int64_t n);

}  // namespace epoch::cuda
