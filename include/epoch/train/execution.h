// How a run computes, apart from what it computes: the device, the CPU threads, the kernels
// (how much reproducibility to pay for), the convolution algorithm, cuDNN, and a seeded
// perturbation. One struct taken by train, eval, predict, bench, study and scale with the same
// flags (config_fields.h), stored in config.json and in every checkpoint, and turned into the
// kernels' ops::Context by kernel_context() alone.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "epoch/ops/backend.h"
#include "epoch/tensor/words.h"

namespace epoch::train {

/// How much reproducibility to pay for (--determinism; recorded in every run).
/// fast: the quickest kernels. On the CPU today this is exactly `reproducible` (every fast CPU
///   kernel is already deterministic at a fixed thread count); on CUDA it is the level that
///   may autotune and pick nondeterministic algorithms once the GPU path does.
/// reproducible: bitwise-identical runs for the same seed and thread count (the fast kernels).
/// strict: also identical across thread counts (the fast kernels with fixed reduction orders,
///   ops::CpuKernels::strict).
/// reference: the plain reference kernels (a study's implementation check: a difference of
///   implementation shows up as what it is).
enum class Determinism { fast, reproducible, strict, reference };
inline constexpr std::array<Word<Determinism>, 4> kDeterminismWords{{
    {Determinism::fast, "fast"},
    {Determinism::reproducible, "reproducible"},
    {Determinism::strict, "strict"},
    {Determinism::reference, "reference"},
}};
Determinism parse_determinism(const std::string& s);
const char* determinism_name(Determinism d);

/// Seeded, controlled nondeterminism (--perturb): a study asks with it whether a change as
/// small as rounding changes the outcome.
/// ulp: every initial parameter moved one ulp up or down, by a draw from perturb_seed.
/// order: the convolutions' and linear layers' weight gradients add their batch parts in a
///   shuffled order, a fresh one each call, drawn from perturb_seed.
enum class Perturb { none, ulp, order };
inline constexpr std::array<Word<Perturb>, 3> kPerturbWords{{
    {Perturb::none, "none"},
    {Perturb::ulp, "ulp"},
    {Perturb::order, "order"},
}};

/// The execution settings of a run (see the file comment). Room is left for precision and
/// streams: they join here, and kernel_context maps them.
struct ExecutionConfig {
  std::string device = "cpu";  // cpu, cuda or cuda:N
  int threads = 0;             // 0: every core
  Determinism determinism = Determinism::reproducible;
  /// The fast path's convolution algorithms (ops::ConvAlgorithm): auto or direct.
  ops::ConvAlgorithm conv_algorithm = ops::ConvAlgorithm::automatic;
  /// CUDA convolutions through cuDNN (true), or epoch's own im2col and cuBLAS GEMM
  /// (ops::Context::cudnn).
  bool cudnn = true;
  Perturb perturb = Perturb::none;
  std::uint64_t perturb_seed = 0;
};

/// The CPU kernels a determinism level runs.
ops::CpuKernels cpu_kernels_for(Determinism d);

/// The one mapping from the execution settings to the kernels' context: kernels, threads,
/// convolution algorithm, cuDNN, and --perturb order's seed.
ops::Context kernel_context(const ExecutionConfig& e);

}  // namespace epoch::train
