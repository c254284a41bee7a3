// What the CPU running this process can execute, for kernels written with AVX2 intrinsics.
// Release builds target x86-64-v3 (AVX2 and FMA) throughout; other builds (Debug, the
// sanitizers) compile such kernels for AVX2 on their own (`#pragma GCC target`) and call them
// only where this says the CPU has it. EPOCH_CPU_AVX2=0 in the environment makes it say no, so
// the portable kernels that stand in on older CPUs are tested on any machine (CTest's
// cpu_tests_no_avx2).
#pragma once

#include <cstdlib>
#include <cstring>

namespace epoch::cpu {

/// True when the CPU executes AVX2 and FMA instructions (and EPOCH_CPU_AVX2 is not "0").
inline bool cpu_has_avx2_fma() {
  static const bool has = [] {
    const char* env = std::getenv("EPOCH_CPU_AVX2");
    if (env != nullptr && std::strcmp(env, "0") == 0) return false;
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return has;
}

}  // namespace epoch::cpu
