// What the CPU running this process can execute, for kernels written with AVX2 intrinsics.
// Release builds target x86-64-v3 (AVX2 and FMA) throughout; other builds (Debug, the
// sanitizers) compile such kernels for AVX2 on their own (`#pragma GCC target`) and call them
// only where this says the CPU has it.
#pragma once

namespace epoch::cpu {

/// True when the CPU executes AVX2 and FMA instructions.
inline bool cpu_has_avx2_fma() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}

}  // namespace epoch::cpu
