// The CPU kernels a benchmark's config asks for (--reference-kernels, --strict, else fast).
#pragma once

#include "epoch/ops/backend.h"

namespace epoch::bench {

template <typename Config>
ops::CpuKernels bench_kernels(const Config& c) {
  if (c.reference_kernels) return ops::CpuKernels::reference;
  return c.strict_kernels ? ops::CpuKernels::strict : ops::CpuKernels::fast;
}

}  // namespace epoch::bench
