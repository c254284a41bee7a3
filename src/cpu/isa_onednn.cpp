// oneDNN's effective CPU ISA (see isa_onednn.h).
#include "cpu/isa_onednn.h"

#include <oneapi/dnnl/dnnl.hpp>

namespace epoch::cpu::onednn {

std::string effective_cpu_isa() {
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
