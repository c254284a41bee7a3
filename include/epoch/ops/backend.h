// Which CPU implementation the ops use: the fast path (oneDNN where it exists) or the plain
// reference kernels that serve as the test oracle. A runtime switch, handy for debugging.
#pragma once

namespace epoch::ops {

enum class CpuKernels { fast, reference };

/// Selects the CPU kernels for every op from now on (process-wide).
void set_cpu_kernels(CpuKernels kernels);
CpuKernels cpu_kernels();
/// True when oneDNN was compiled in (EPOCH_WITH_ONEDNN).
bool onednn_available();
/// True when the fast path is selected and oneDNN is compiled in.
bool use_onednn();

/// RAII switch to the given kernels for a scope (tests compare both paths with this).
class CpuKernelsGuard {
 public:
  explicit CpuKernelsGuard(CpuKernels kernels) : previous_(cpu_kernels()) {
    set_cpu_kernels(kernels);
  }
  ~CpuKernelsGuard() { set_cpu_kernels(previous_); }
  CpuKernelsGuard(const CpuKernelsGuard&) = delete;
  CpuKernelsGuard& operator=(const CpuKernelsGuard&) = delete;

 private:
  CpuKernels previous_;
};

/// The most CPU threads epoch runs: beyond it GNU OpenMP fails to start its pool (a crash or
/// a hang at tens of thousands).
inline constexpr int kMaxThreads = 1024;

/// Sets the number of threads CPU kernels use (OpenMP and oneDNN); 0 keeps the current count.
/// requires: 0 <= threads <= kMaxThreads (ConfigError naming the limit otherwise).
void set_num_threads(int threads);
int num_threads();

}  // namespace epoch::ops
