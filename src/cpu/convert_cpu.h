// Integer class labels as floats (the targets of a binary loss), on the CPU.
#pragma once

#include <cstdint>

namespace epoch::cpu {

/// y[i] = float(x[i]) for n elements.
void i32_to_f32(const std::int32_t* x, float* y, std::int64_t n);

}  // namespace epoch::cpu
