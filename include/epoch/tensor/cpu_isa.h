// The x86-64 instruction-set level epoch's own CPU kernels run at. The build targets baseline
// x86-64, so the binary starts on any x86-64 CPU; the vectorized kernels are compiled once per
// level (kernels/isa_kernel.h) and the level is chosen here, once per process, from the CPU's
// features (as oneDNN chooses its own). EPOCH_CPU_ISA=<level> in the environment caps it, to run
// as an older CPU would (it also caps oneDNN, unless ONEDNN_MAX_CPU_ISA is set).
#pragma once

#include <array>
#include <string>

#include "epoch/tensor/words.h"

namespace epoch {

/// The psABI levels that epoch compiles kernels for, in increasing order.
enum class CpuIsa : int {
  x86_64 = 0,     // baseline: SSE2 (every x86-64 CPU)
  x86_64_v3 = 1,  // AVX2, FMA, BMI1/2, F16C, LZCNT, MOVBE (Haswell, Zen 1 and later)
  x86_64_v4 = 2,  // AVX-512 F/BW/CD/DQ/VL (Skylake-SP, Ice Lake, Zen 4 and later)
};
inline constexpr int kCpuIsaLevels = 3;

inline constexpr std::array<Word<CpuIsa>, 3> kCpuIsaWords{{
    {CpuIsa::x86_64, "x86-64"},
    {CpuIsa::x86_64_v3, "x86-64-v3"},
    {CpuIsa::x86_64_v4, "x86-64-v4"},
}};

/// "x86-64-v3".
inline const char* cpu_isa_name(CpuIsa isa) { return word_of(kCpuIsaWords, isa); }
/// The instructions a level adds, in words ("SSE2", "AVX2 and FMA", "AVX-512").
const char* cpu_isa_features(CpuIsa isa);

/// The highest level this CPU (and its operating system's saved register state) supports.
CpuIsa detected_cpu_isa();
/// The level the kernels run at: the detected one, or EPOCH_CPU_ISA's when that is set (read
/// once). ConfigError naming EPOCH_CPU_ISA when it is not a level or is above the CPU's.
CpuIsa active_cpu_isa();
/// The level as an index into a table of kCpuIsaLevels kernels (the hot path of every call).
int active_cpu_isa_index();

/// The CPU's own name (its brand string, spaces collapsed), "unknown" where it has none.
std::string cpu_model_name();

}  // namespace epoch
