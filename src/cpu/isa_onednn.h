// Which instruction set oneDNN dispatches to on this machine (after ONEDNN_MAX_CPU_ISA), for
// benchmarks that must say which CPU code ran. Plain C++ (no oneDNN header); compiled only
// when EPOCH_WITH_ONEDNN: guard includes with #if EPOCH_WITH_ONEDNN.
#pragma once

#include <string>

namespace epoch::cpu::onednn {

/// oneDNN's effective CPU ISA by its own name ("avx512_core", "avx2", ...).
std::string effective_cpu_isa();

}  // namespace epoch::cpu::onednn
