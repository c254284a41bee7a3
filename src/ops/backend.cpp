// The process-wide CPU kernel switch and thread count.
#include "epoch/ops/backend.h"

#include <omp.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "epoch/tensor/error.h"

namespace epoch::ops {
namespace {
CpuKernels initial_kernels() {
  const char* env = std::getenv("EPOCH_CPU_KERNELS");
  return env != nullptr && std::strcmp(env, "reference") == 0 ? CpuKernels::reference
                                                              : CpuKernels::fast;
}
std::atomic<CpuKernels> g_kernels{initial_kernels()};
}  // namespace

void set_cpu_kernels(CpuKernels kernels) { g_kernels = kernels; }
CpuKernels cpu_kernels() { return g_kernels; }
bool onednn_available() { return EPOCH_WITH_ONEDNN != 0; }
bool use_onednn() { return EPOCH_WITH_ONEDNN != 0 && g_kernels == CpuKernels::fast; }

void set_num_threads(int threads) {
  if (threads < 0 || threads > kMaxThreads)
    EPOCH_THROW(ConfigError, "--threads ", threads, ": must be from 0 (every core) to ",
                kMaxThreads);
  if (threads > 0) omp_set_num_threads(threads);
}
int num_threads() { return omp_get_max_threads(); }

}  // namespace epoch::ops
