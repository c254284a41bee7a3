// The calling thread's CPU kernel choice and thread count (see backend.h).
#include "epoch/ops/backend.h"

#include <omp.h>

#include <cstdlib>
#include <cstring>

#include "epoch/tensor/error.h"
#include "kernels/impl_note.h"

#if EPOCH_WITH_CUDNN
#include "cuda/conv2d_cudnn.h"
#endif
#if EPOCH_WITH_ONEDNN
#include "cpu/isa_onednn.h"
#endif

namespace epoch::ops {
namespace {
CpuKernels initial_kernels() {
  const char* env = std::getenv("EPOCH_CPU_KERNELS");
  return env != nullptr && std::strcmp(env, "reference") == 0 ? CpuKernels::reference
                                                              : CpuKernels::fast;
}
// The thread count lives in OpenMP's own per-thread setting (nthreads-var), which oneDNN
// reads too; only the kernel and algorithm choices need variables of their own.
thread_local CpuKernels t_kernels = initial_kernels();
thread_local ConvAlgorithm t_conv = ConvAlgorithm::automatic;
thread_local KernelTrace* t_trace = nullptr;
thread_local std::optional<std::uint64_t> t_perturb_order;
thread_local std::uint64_t t_perturb_draws = 0;
thread_local bool t_cudnn = true;
}  // namespace

KernelTrace::KernelTrace() : previous_(t_trace) { t_trace = this; }
KernelTrace::~KernelTrace() { t_trace = previous_; }
KernelTrace* KernelTrace::active() { return t_trace; }

bool is_reference_impl(const std::string& impl) {
  // oneDNN names its reference code "ref:any", "lrn_ref:any", "ref_..." and its unvectorized
  // fallbacks "simple:any" (reorders), "simple_nchw:any" (pooling).
  return kernels::is_reference_impl(impl);
}

Context default_context() { return Context{initial_kernels(), 0, ConvAlgorithm::automatic}; }
Context current_context() {
  return Context{t_kernels, omp_get_max_threads(), t_conv, t_perturb_order, t_cudnn};
}

ContextGuard::ContextGuard(const Context& context)
    : previous_(current_context()), previous_draws_(t_perturb_draws) {
  set_num_threads(context.threads);
  t_kernels = context.kernels;
  t_conv = context.conv;
  // A context that starts a perturbation starts its draws afresh (the same seed, the same
  // orders); one nested in a context with the same perturbation (a training step's) goes on.
  if (context.perturb_order != t_perturb_order) t_perturb_draws = 0;
  t_perturb_order = context.perturb_order;
  t_cudnn = context.cudnn;
}

ContextGuard::~ContextGuard() {
  t_kernels = previous_.kernels;
  t_conv = previous_.conv;
  t_perturb_order = previous_.perturb_order;
  t_perturb_draws = previous_draws_;
  t_cudnn = previous_.cudnn;
  omp_set_num_threads(previous_.threads);
}

std::optional<std::uint64_t> next_perturb_order_key() {
  if (!t_perturb_order) return std::nullopt;
  return *t_perturb_order ^ ((t_perturb_draws++ + 1) * 0xd1b54a32d192ed03ULL);
}

void set_cpu_kernels(CpuKernels kernels) { t_kernels = kernels; }
CpuKernels cpu_kernels() { return t_kernels; }
const char* conv_algorithm_name(ConvAlgorithm a) { return word_of(kConvAlgorithmWords, a); }

ConvAlgorithm parse_conv_algorithm(const std::string& s) {
  return parse_word(kConvAlgorithmWords, s, "--conv-algo");
}

void set_conv_algorithm(ConvAlgorithm algorithm) { t_conv = algorithm; }
ConvAlgorithm conv_algorithm() { return t_conv; }
std::string cudnn_version() {
#if EPOCH_WITH_CUDNN
  return cuda::cudnn::library_version();
#else
  return "";
#endif
}

bool onednn_available() { return EPOCH_WITH_ONEDNN != 0; }
bool use_cudnn() {
#if EPOCH_WITH_CUDNN
  return t_cudnn;
#else
  return false;
#endif
}

std::string onednn_cpu_isa() {
#if EPOCH_WITH_ONEDNN
  return cpu::onednn::effective_cpu_isa();
#else
  return "none";
#endif
}

bool onednn_has_winograd() { return onednn_cpu_isa().rfind("avx512_core", 0) == 0; }
bool use_onednn() { return EPOCH_WITH_ONEDNN != 0 && t_kernels != CpuKernels::reference; }

const char* cpu_kernels_name(CpuKernels k) { return word_of(kCpuKernelsWords, k); }

void set_num_threads(int threads) {
  if (threads < 0 || threads > kMaxThreads)
    EPOCH_THROW(ConfigError, "--threads ", threads, ": must be from 0 (every core) to ",
                kMaxThreads);
  if (threads > 0) omp_set_num_threads(threads);
}
int num_threads() { return omp_get_max_threads(); }

}  // namespace epoch::ops
