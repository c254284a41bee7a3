// oneDNN's effective CPU ISA (see isa_onednn.h).
#include "cpu/isa_onednn.h"

#include <cstdlib>
#include <oneapi/dnnl/dnnl.hpp>

#include "epoch/tensor/cpu_isa.h"

namespace epoch::cpu::onednn {

void apply_cpu_isa_cap() {
  static const bool applied = [] {
    const char* own = std::getenv("ONEDNN_MAX_CPU_ISA");
    if (own != nullptr && *own != '\0') return false;  // oneDNN's own setting wins
    switch (active_cpu_isa()) {
      case CpuIsa::x86_64:  // oneDNN's lowest code is SSE4.1, as on a Nehalem
        dnnl::set_max_cpu_isa(dnnl::cpu_isa::sse41);
        return true;
      case CpuIsa::x86_64_v3:
        if (detected_cpu_isa() == CpuIsa::x86_64_v3) return false;
        dnnl::set_max_cpu_isa(dnnl::cpu_isa::avx2);
        return true;
      case CpuIsa::x86_64_v4:
        return false;
    }
    return false;
  }();
  (void)applied;
}

std::string effective_cpu_isa() {
  apply_cpu_isa_cap();
  // oneDNN reads ONEDNN_MAX_CPU_ISA once, at its first use; this reports the result.
  using dnnl::cpu_isa;
  switch (dnnl::get_effective_cpu_isa()) {
    case cpu_isa::all:
      return "all";
    case cpu_isa::sse41:
      return "sse41";
    case cpu_isa::avx:
      return "avx";
    case cpu_isa::avx2:
      return "avx2";
    case cpu_isa::avx2_vnni:
      return "avx2_vnni";
    case cpu_isa::avx512_mic:
      return "avx512_mic";
    case cpu_isa::avx512_mic_4ops:
      return "avx512_mic_4ops";
    case cpu_isa::avx512_core:
      return "avx512_core";
    case cpu_isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case cpu_isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case cpu_isa::avx512_core_amx:
      return "avx512_core_amx";
  }
  return "unknown";
}

}  // namespace epoch::cpu::onednn
