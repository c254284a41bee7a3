// The instruction-set level of epoch's CPU kernels (see epoch/tensor/cpu_isa.h).
#include "epoch/tensor/cpu_isa.h"

#include <cpuid.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "epoch/tensor/error.h"

namespace epoch {

namespace {

CpuIsa read_detected() {
  __builtin_cpu_init();
  // libgcc's checks include the operating system's support (XCR0) for the AVX and AVX-512
  // register state, so a virtual machine that hides them is seen as it is.
  if (__builtin_cpu_supports("x86-64-v4")) return CpuIsa::x86_64_v4;
  if (__builtin_cpu_supports("x86-64-v3")) return CpuIsa::x86_64_v3;
  return CpuIsa::x86_64;
}

CpuIsa read_active() {
  const CpuIsa detected = detected_cpu_isa();
  const char* env = std::getenv("EPOCH_CPU_ISA");
  if (env == nullptr || *env == '\0') return detected;
  const CpuIsa asked = parse_word(kCpuIsaWords, env, "EPOCH_CPU_ISA");
  if (static_cast<int>(asked) > static_cast<int>(detected))
    EPOCH_THROW(ConfigError, "EPOCH_CPU_ISA ", env, ": this CPU runs at most ",
                cpu_isa_name(detected));
  return asked;
}

}  // namespace

const char* cpu_isa_features(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::x86_64:
      return "SSE2";
    case CpuIsa::x86_64_v3:
      return "AVX2 and FMA";
    case CpuIsa::x86_64_v4:
      return "AVX-512";
  }
  return "?";
}

CpuIsa detected_cpu_isa() {
  static const CpuIsa isa = read_detected();
  return isa;
}

CpuIsa active_cpu_isa() {
  static const CpuIsa isa = read_active();
  return isa;
}

int active_cpu_isa_index() {
  static const int index = static_cast<int>(active_cpu_isa());
  return index;
}

std::string cpu_model_name() {
  unsigned int max_leaf = 0, b = 0, c = 0, d = 0;
  __get_cpuid(0x80000000u, &max_leaf, &b, &c, &d);
  if (max_leaf < 0x80000004u) return "unknown";
  char brand[49] = {};
  for (unsigned int leaf = 0; leaf < 3; ++leaf) {
    unsigned int r[4] = {};
    __get_cpuid(0x80000002u + leaf, &r[0], &r[1], &r[2], &r[3]);
    std::memcpy(brand + 16 * leaf, r, sizeof r);
  }
  std::string out;
  for (const char ch : std::string_view(brand, std::strlen(brand))) {
    if (ch == ' ' && (out.empty() || out.back() == ' ')) continue;
    out += ch;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out.empty() ? "unknown" : out;
}

}  // namespace epoch
