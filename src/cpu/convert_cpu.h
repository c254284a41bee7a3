// Integer class labels as floats (the targets of a binary loss), on the CPU.
#pragma once

#include <cstdint>
#include "kernels/isa_kernel.h"

namespace epoch::cpu {

/// y[i] = float(x[i]) for n elements.
extern const kernels::IsaKernel<void(const std::int32_t* x, float* y, std::int64_t n)> i32_to_f32;

}  // namespace epoch::cpu
