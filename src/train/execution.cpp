// The execution settings' words and their one mapping to the kernels' context (execution.h).
#include "epoch/train/execution.h"

namespace epoch::train {

Determinism parse_determinism(const std::string& s) {
  return parse_word(kDeterminismWords, s, "--determinism");
}

const char* determinism_name(Determinism d) { return word_of(kDeterminismWords, d); }

ops::CpuKernels cpu_kernels_for(Determinism d) {
  switch (d) {
    case Determinism::fast:
    case Determinism::reproducible:
      return ops::CpuKernels::fast;
    case Determinism::strict:
      return ops::CpuKernels::strict;
    case Determinism::reference:
      return ops::CpuKernels::reference;
  }
  return ops::CpuKernels::fast;
}

ops::Context kernel_context(const ExecutionConfig& e) {
  ops::Context context;
  context.kernels = cpu_kernels_for(e.determinism);
  context.threads = e.threads;
  context.conv = e.conv_algorithm;
  if (e.perturb == Perturb::order) context.perturb_order = e.perturb_seed;
  context.cudnn = e.cudnn;
  return context;
}

}  // namespace epoch::train
