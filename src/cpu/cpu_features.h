// Whether the kernels written with AVX2 intrinsics may run: the Winograd convolution (compiled
// for AVX2 and FMA alone, `#pragma GCC target`) and the AVX2 rows of the blocked max pooling.
// They run when the instruction-set level chosen for the process (epoch/tensor/cpu_isa.h:
// the CPU's, or EPOCH_CPU_ISA's) is x86-64-v3 or above; below it the portable kernels stand in
// (CTest's cpu_tests_baseline_isa runs them on any machine).
#pragma once

#include "epoch/tensor/cpu_isa.h"

namespace epoch::cpu {

/// True when the process's kernels run at x86-64-v3 (AVX2 and FMA) or above.
inline bool cpu_has_avx2_fma() {
  return static_cast<int>(active_cpu_isa()) >= static_cast<int>(CpuIsa::x86_64_v3);
}

}  // namespace epoch::cpu
