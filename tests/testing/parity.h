// The backend-parity harness: every backend (oneDNN fast path, CUDA) against the CPU reference
// kernels, for every entry of one table of op cases (parity_cases.cpp). See docs/ARCHITECTURE.md.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "epoch/ops/backend.h"
#include "epoch/ops/conv2d.h"
#include "epoch/tensor/tensor.h"

namespace epoch::testing::parity {

/// Pass when |a - e| <= atol + rtol * max(|a|, |e|) for every element; {0, 0} means
/// bit-for-bit (NaN matching NaN, infinities matching themselves).
struct Tolerance {
  float atol = 1e-5f;
  float rtol = 1e-4f;
};
inline constexpr Tolerance kExact{0.0f, 0.0f};

/// One tensor an op returns, by name. An undefined value (dx when need_dx is false) must be
/// undefined on every backend.
struct Output {
  std::string name;
  Tensor value;
};
using Outputs = std::vector<Output>;

/// The output called `name` (InvalidArgument when there is none).
const Tensor& get(const Outputs& outputs, const std::string& name);

/// How to run an op: the CPU kernels selected while it runs and the device its inputs are put
/// on. backends()[0] is the reference every other backend is compared with.
struct Backend {
  std::string name;  // in the test names: reference, onednn, strict, cuda, cuda-nocudnn
  ops::CpuKernels cpu_kernels;
  Device device;
  /// Empty when the backend can run here, else why not (the tests skip, saying so).
  std::function<std::string()> unavailable;
  /// The backend whose OpCase::backend_tol entries this one takes when it has none of its own
  /// (strict runs oneDNN's kernels, so it takes "onednn"'s); empty: its own only.
  std::string tolerances_of = {};
  /// CUDA convolutions through cuDNN, or epoch's im2col (ops::Context::cudnn).
  bool cudnn = true;
  /// The ops this backend runs (empty: every op of the table).
  std::vector<std::string> only_ops = {};
};
const std::vector<Backend>& backends();

/// One entry of the table: an op on one set of input shapes and parameters, in one dtype.
struct OpCase {
  std::string op;    // "conv2d"
  std::string name;  // the shapes and parameters: "n3c4h9w7_oc5k3x3s1p1"
  DType dtype = DType::f32;
  /// The inputs, on the CPU, drawn from `seed` (a hash of op and name): never all zeros.
  std::function<std::vector<Tensor>(std::uint64_t seed)> inputs;
  /// Runs the op's forward entry point on the inputs (moved to the backend's device; in-place
  /// ops and running statistics may change them).
  std::function<Outputs(std::vector<Tensor>& in)> forward;
  /// The op's backward entry point given the inputs, this backend's forward outputs and dy
  /// (random, shaped like the first forward output); empty for ops without one.
  std::function<Outputs(const std::vector<Tensor>& in, const Outputs& fwd, const Tensor& dy)>
      backward;
  Tolerance forward_tol, backward_tol;
  /// Per-output tolerances that replace forward_tol / backward_tol.
  std::map<std::string, Tolerance> output_tol;
  /// Tighter (or looser) tolerances for one backend, replacing all of the above for it: keyed
  /// "onednn" (every output) or "onednn/dw" (one output). A backend whose arithmetic is closer
  /// to the reference keeps the tolerance it earns instead of the loosest backend's.
  std::map<std::string, Tolerance> backend_tol;
  /// Forward outputs that only backward reads and whose format is backend-specific (oneDNN's
  /// max-pool workspace): never compared.
  std::vector<std::string> saved;
  /// Outputs some backends do not produce (the reference's max-pool argmax, which oneDNN keeps
  /// in its workspace): compared where both produce them, recorded as not compared otherwise.
  std::vector<std::string> optional;
};
/// The table: every op that has a reference kernel and a fast or CUDA kernel.
const std::vector<OpCase>& cases();

/// Convolution shapes of the table (the oneDNN layout tests run them too).
struct ConvShape {
  std::int64_t N, C, H, W, OC, KH, KW;
  ops::Conv2dParams p;
  bool bias;
};
const std::vector<ConvShape>& conv2d_shapes();

/// Matrix-product shapes of the table: op(a) (M, K), op(b) (K, N) (the oneDNN GEMM
/// accumulation test runs them too).
struct MatmulShape {
  std::int64_t M, N, K;
  bool trans_a, trans_b;
};
const std::vector<MatmulShape>& matmul_shapes();

/// One test: a backend and an entry of the table.
struct Param {
  const Backend* backend;
  const OpCase* op_case;
};
void PrintTo(const Param& p, std::ostream* os);
/// Every entry for every non-reference backend whose device has this type.
std::vector<Param> params_for(DeviceType device);
/// "onednn_conv2d_n3c4h9w7_oc5k3x3s1p1_f32".
std::string param_name(const ::testing::TestParamInfo<Param>& info);

/// Runs the entry on the reference and on the backend and compares every named output;
/// skips (GTEST_SKIP, with the reason) when the backend is unavailable.
void check(const Param& p);

/// Runs the entry on the backend at 1, 2, 3 and 4 threads and expects every output, forward
/// and backward, to be bit-for-bit the same as at 1 thread; skips as check() does.
void check_thread_invariance(const Param& p);
/// Every entry for the named backend.
std::vector<Param> params_for_backend(const std::string& name);

/// The value-parameterized fixture; each executable instantiates it for its devices.
class BackendParity : public ::testing::TestWithParam<Param> {};

/// Elementwise comparison under `tol`, reporting the worst element (see Tolerance).
::testing::AssertionResult matches(const Tensor& actual, const Tensor& expected, Tolerance tol);

}  // namespace epoch::testing::parity
