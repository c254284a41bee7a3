// Which instruction set oneDNN dispatches to on this machine (after ONEDNN_MAX_CPU_ISA), for
// benchmarks that must say which CPU code ran. Plain C++ (no oneDNN header); compiled only
// when EPOCH_WITH_ONEDNN: guard includes with #if EPOCH_WITH_ONEDNN.
#pragma once

#include <string>

namespace epoch::cpu::onednn {

/// Caps oneDNN at the instruction set of epoch's own kernels (epoch/tensor/cpu_isa.h) when
/// EPOCH_CPU_ISA lowers it and ONEDNN_MAX_CPU_ISA is not set: SSE4.1 for x86-64, AVX2 for
/// x86-64-v3. Once per process, before oneDNN's first use (the engine calls it).
void apply_cpu_isa_cap();

/// oneDNN's effective CPU ISA by its own name ("avx512_core", "avx2", ...).
std::string effective_cpu_isa();

}  // namespace epoch::cpu::onednn
