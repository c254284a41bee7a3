// How the CPU ops run: which kernels (the fast path, oneDNN where it exists, or the plain
// reference kernels that serve as the test oracle) and how many threads. Both travel in a
// Context that belongs to the calling thread, so two configurations can run side by side in
// one process (each on its own thread); nothing here is process-wide.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "epoch/tensor/words.h"

namespace epoch::ops {

/// `fast`: the fast path (oneDNN, epoch's own vectorized kernels), whose bits may change with
/// the thread count (a reduction split across threads). `strict`: the fast path where it gives
/// the same bits at every thread count, either as it is or split by the sizes alone (the
/// batch partition and output tiles of cpu/fixed_parts.h), epoch's fixed-order batch norm
/// (cpu/batch_norm_fixed.h), and the reference kernels elsewhere. `reference`: the plain
/// kernels, the test oracle.
enum class CpuKernels { fast, reference, strict };
inline constexpr std::array<Word<CpuKernels>, 3> kCpuKernelsWords{{
    {CpuKernels::fast, "fast"},
    {CpuKernels::reference, "reference"},
    {CpuKernels::strict, "strict"},
}};
const char* cpu_kernels_name(CpuKernels k);

/// Which algorithms the fast path's convolutions may use. `automatic`: Winograd (F(4x4, 3x3),
/// oneDNN's, on CPUs where oneDNN has it: AVX-512) for 3x3 unit-stride convolutions with at
/// least 16 input channels, where it measured faster (docs/BENCHMARKS.md N), and direct
/// convolution elsewhere. Winograd rounds differently: up to about 1e-5 relative from the
/// reference kernels, where direct convolution is within about 5e-6
/// (tests/cpu/conv_algorithm_test.cpp). `direct`: direct convolution only. Either is
/// deterministic for the same CPU and thread count; the reference kernels and cuDNN, which
/// picks its own algorithms, ignore it.
enum class ConvAlgorithm { automatic, direct };
inline constexpr std::array<Word<ConvAlgorithm>, 2> kConvAlgorithmWords{{
    {ConvAlgorithm::automatic, "auto"},
    {ConvAlgorithm::direct, "direct"},
}};
/// "auto" or "direct" (flags, JSON); parse throws ConfigError naming --conv-algo and the
/// valid words.
const char* conv_algorithm_name(ConvAlgorithm a);
ConvAlgorithm parse_conv_algorithm(const std::string& s);

/// The most CPU threads epoch runs: beyond it GNU OpenMP fails to start its pool (a crash or
/// a hang at tens of thousands).
inline constexpr int kMaxThreads = 1024;

/// How the calling thread's CPU ops run. A thread starts with the process default: the fast
/// kernels (reference when EPOCH_CPU_KERNELS=reference), every core and automatic
/// convolution algorithms.
struct Context {
  CpuKernels kernels = CpuKernels::fast;
  int threads = 0;  // OpenMP and oneDNN threads of this thread's ops; 0: every core
  ConvAlgorithm conv = ConvAlgorithm::automatic;
  /// --perturb order: the seed of a shuffled summation order in the reductions that allow one
  /// (the sums of a fixed partition's parts, cpu/fixed_parts.h, which the convolution's
  /// weight gradient then takes under any kernel choice but the reference); none: the fixed
  /// order.
  std::optional<std::uint64_t> perturb_order = std::nullopt;
  /// CUDA convolutions through cuDNN (where the build has it), or, false, epoch's own im2col
  /// and cuBLAS GEMM (cuda/conv2d_gemm.h): a study's cuda-nocudnn configuration.
  bool cudnn = true;
};

/// The process default (see Context): what a new thread starts with.
Context default_context();
/// The calling thread's context (its thread count as OpenMP reports it, never 0).
Context current_context();

/// Installs a context on the calling thread for a scope and restores the previous one.
/// requires: 0 <= threads <= kMaxThreads (ConfigError naming the limit otherwise); 0 keeps
/// the thread count in force.
class ContextGuard {
 public:
  explicit ContextGuard(const Context& context);
  ~ContextGuard();
  ContextGuard(const ContextGuard&) = delete;
  ContextGuard& operator=(const ContextGuard&) = delete;

 private:
  Context previous_;
  std::uint64_t previous_draws_ = 0;  // next_perturb_order_key()'s count, restored
};

/// The key of the next reduction's shuffled order under the calling thread's --perturb order
/// (a hash of its seed and a count of the draws since the context was installed), or none.
std::optional<std::uint64_t> next_perturb_order_key();

/// Selects the calling thread's CPU kernels from now on.
void set_cpu_kernels(CpuKernels kernels);
CpuKernels cpu_kernels();
/// Selects the calling thread's convolution algorithms from now on.
void set_conv_algorithm(ConvAlgorithm algorithm);
ConvAlgorithm conv_algorithm();
/// True when the calling thread's CUDA convolutions run cuDNN (Context::cudnn, and the build
/// has cuDNN: EPOCH_WITH_CUDNN).
bool use_cudnn();
/// The cuDNN library's version ("9.10.2"), or "" in a build without cuDNN.
std::string cudnn_version();
/// True when oneDNN was compiled in (EPOCH_WITH_ONEDNN).
bool onednn_available();
/// The instruction set oneDNN's kernels dispatch to, by oneDNN's name ("avx512_core", "avx2";
/// ONEDNN_MAX_CPU_ISA caps it, read by oneDNN at its first use), or "none" without oneDNN.
std::string onednn_cpu_isa();
/// True when oneDNN has Winograd convolution kernels for the ISA it dispatches to (avx512_core
/// and above in oneDNN 2.6), i.e. when ConvAlgorithm::automatic can run them.
bool onednn_has_winograd();
/// True when the calling thread's fast path (CpuKernels::fast or strict) is selected and oneDNN
/// is compiled in.
bool use_onednn();

/// Switches the calling thread to the given kernels for a scope (tests compare both paths).
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

/// Sets the number of threads the calling thread's CPU kernels use (OpenMP and oneDNN); 0
/// keeps the current count. requires: 0 <= threads <= kMaxThreads (ConfigError otherwise).
void set_num_threads(int threads);
int num_threads();

/// One kernel call seen by a KernelTrace: the op and the implementation that ran. impl is
/// "onednn:<oneDNN's implementation name>" (several joined by " + " when a call runs reorders
/// too), "epoch:<kernel>" for epoch's own fast kernels, "epoch:cpu" for an op whose only CPU
/// kernel is the plain one, "reference" when the fast path exists but did not run (the
/// reference kernels were chosen, or the fast path declined these shapes), or "cuda".
struct KernelRecord {
  std::string op;
  std::string impl;
};

/// Records every op dispatched on the calling thread while it lives (a trace started inside
/// another takes over until it ends). For epoch bench --layers and the test that no zoo layer
/// runs a reference implementation.
class KernelTrace {
 public:
  KernelTrace();
  ~KernelTrace();
  KernelTrace(const KernelTrace&) = delete;
  KernelTrace& operator=(const KernelTrace&) = delete;

  const std::vector<KernelRecord>& records() const { return records_; }
  void clear() { records_.clear(); }
  /// The trace active on the calling thread, or null.
  static KernelTrace* active();
  void add(KernelRecord r) { records_.push_back(std::move(r)); }

 private:
  std::vector<KernelRecord> records_;
  KernelTrace* previous_ = nullptr;
};

/// True when impl names one of oneDNN's reference or "simple" implementations, or epoch's
/// reference kernels standing in for a fast path: the slow paths a zoo layer must never take.
bool is_reference_impl(const std::string& impl);

}  // namespace epoch::ops
