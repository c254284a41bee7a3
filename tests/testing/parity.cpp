// The backend-parity harness (parity.h): the backends, running one entry on two of them, and
// the comparison of their named outputs.
#include "testing/parity.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <sstream>

#include "epoch/tensor/storage.h"
#include "testing/testing.h"

namespace epoch::testing::parity {

const Tensor& get(const Outputs& outputs, const std::string& name) {
  for (const Output& o : outputs)
    if (o.name == name) return o.value;
  EPOCH_CHECK(false, "parity: no output named ", name);
  return outputs.front().value;  // not reached
}

namespace {
bool runs(const Backend& b, const OpCase& c) {
  return b.only_ops.empty() ||
         std::find(b.only_ops.begin(), b.only_ops.end(), c.op) != b.only_ops.end();
}

std::string cuda_unavailable() {
  if (EPOCH_WITH_CUDA == 0) return "this build has no CUDA (EPOCH_WITH_CUDA=0)";
  return memory::cuda_available() ? "" : "no CUDA device";
}
}  // namespace

const std::vector<Backend>& backends() {
  static const std::vector<Backend> list = {
      {"reference", ops::CpuKernels::reference, Device::cpu(), [] { return std::string(); }},
      {"onednn", ops::CpuKernels::fast, Device::cpu(),
       [] { return std::string(ops::onednn_available() ? "" : "this build has no oneDNN"); }},
      {"strict", ops::CpuKernels::strict, Device::cpu(),
       [] { return std::string(ops::onednn_available() ? "" : "this build has no oneDNN"); },
       "onednn"},
      {"cuda", ops::CpuKernels::reference, Device::cuda(), cuda_unavailable},
      // the convolutions without cuDNN (cuda/conv2d_gemm.h), with cuDNN's tolerances
      {"cuda-nocudnn",
       ops::CpuKernels::reference,
       Device::cuda(),
       cuda_unavailable,
       "cuda",
       false,
       {"conv2d"}},
  };
  return list;
}

void PrintTo(const Param& p, std::ostream* os) {
  *os << p.backend->name << " " << p.op_case->op << " " << p.op_case->name << " "
      << dtype_name(p.op_case->dtype);
}

std::vector<Param> params_for(DeviceType device) {
  std::vector<Param> out;
  const std::vector<Backend>& all = backends();
  for (std::size_t b = 1; b < all.size(); ++b) {
    if (all[b].device.type != device) continue;
    for (const OpCase& c : cases())
      if (runs(all[b], c)) out.push_back({&all[b], &c});
  }
  return out;
}

std::vector<Param> params_for_backend(const std::string& name) {
  std::vector<Param> out;
  for (const Backend& b : backends())
    if (b.name == name)
      for (const OpCase& c : cases())
        if (runs(b, c)) out.push_back({&b, &c});
  return out;
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  std::string s = info.param.backend->name + "_" + info.param.op_case->op + "_" +
                  info.param.op_case->name + "_" + dtype_name(info.param.op_case->dtype);
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

::testing::AssertionResult matches(const Tensor& actual_in, const Tensor& expected_in,
                                   Tolerance tol) {
  if (actual_in.defined() != expected_in.defined())
    return ::testing::AssertionFailure()
           << (actual_in.defined() ? "defined" : "undefined") << " where the reference's is "
           << (expected_in.defined() ? "defined" : "undefined");
  if (!actual_in.defined()) return ::testing::AssertionSuccess();
  if (actual_in.shape() != expected_in.shape())
    return ::testing::AssertionFailure()
           << "shape " << shape_str(actual_in.shape()) << " vs the reference's "
           << shape_str(expected_in.shape());
  if (actual_in.dtype() != expected_in.dtype())
    return ::testing::AssertionFailure()
           << "dtype " << dtype_name(actual_in.dtype()) << " vs the reference's "
           << dtype_name(expected_in.dtype());
  const Tensor actual = actual_in.to(Device::cpu()).contiguous();
  const Tensor expected = expected_in.to(Device::cpu()).contiguous();
  if (actual.dtype() != DType::f32) {  // labels, indices: bytes must agree
    const std::size_t bytes = static_cast<std::size_t>(actual.numel()) * dtype_size(actual.dtype());
    if (std::memcmp(actual.raw(), expected.raw(), bytes) == 0) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << dtype_name(actual.dtype()) << " values differ";
  }
  const std::vector<float> a = actual.to_vector(), e = expected.to_vector();
  std::size_t bad = 0, worst_i = 0;
  double worst = -1.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] == e[i] || (std::isnan(a[i]) && std::isnan(e[i]))) continue;
    const double diff = std::fabs(static_cast<double>(a[i]) - e[i]);
    const double limit = tol.atol + tol.rtol * std::max(std::fabs(a[i]), std::fabs(e[i]));
    if (diff <= limit) continue;
    ++bad;
    if (!(diff <= worst)) worst = diff, worst_i = i;
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << bad << " of " << a.size() << " elements differ beyond atol " << tol.atol << " rtol "
         << tol.rtol << "; worst at " << worst_i << ": " << a[worst_i] << " vs the reference's "
         << e[worst_i] << " (|diff| " << worst << ")";
}

namespace {

bool listed(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// FNV-1a of op and name: each entry draws its own inputs, whatever its place in the table.
std::uint64_t seed_of(const OpCase& c) {
  std::uint64_t h = 14695981039346656037ull;
  for (char ch : c.op + "/" + c.name) h = (h ^ static_cast<unsigned char>(ch)) * 1099511628211ull;
  return h;
}

struct RunResult {
  Outputs forward, backward;
};

// Runs the entry with the backend's kernels on its device; dy (on the CPU) as given, or drawn
// from the first forward output's shape when undefined (the reference run).
// threads: the CPU threads to run on (0 keeps the calling thread's count).
RunResult run_on(const Backend& b, const OpCase& c, Tensor& dy, int threads = 0) {
  const ops::ContextGuard context(
      ops::Context{b.cpu_kernels, threads, ops::current_context().conv, std::nullopt, b.cudnn});
  std::vector<Tensor> in = c.inputs(seed_of(c));
  for (Tensor& t : in)
    if (t.defined()) t = t.to(b.device);
  RunResult r;
  r.forward = c.forward(in);
  if (c.backward) {
    if (!dy.defined()) dy = random_tensor(r.forward.front().value.shape(), seed_of(c) ^ 0xd7);
    r.backward = c.backward(in, r.forward, dy.to(b.device));
  }
  return r;
}

// tolerant: the case's tolerances apply (against the reference); false: only default_tol.
void compare(const char* phase, const Backend& b, const OpCase& c, const Outputs& actual,
             const Outputs& expected, Tolerance default_tol, bool tolerant = true) {
  for (const Output& e : expected) {
    if (listed(c.saved, e.name)) continue;
    const auto a = std::find_if(actual.begin(), actual.end(),
                                [&](const Output& o) { return o.name == e.name; });
    if (a == actual.end()) {
      if (listed(c.optional, e.name)) {
        ::testing::Test::RecordProperty("not_compared", e.name);
        continue;
      }
      ADD_FAILURE() << phase << " output " << e.name << " missing on " << b.name;
      continue;
    }
    if (a->value.defined()) {
      EXPECT_EQ(a->value.device().type, b.device.type)
          << phase << " output " << e.name << " is on " << a->value.device().str() << ", not "
          << b.device.str();
    }
    Tolerance tol = default_tol;
    if (tolerant) {
      if (const auto custom = c.output_tol.find(e.name); custom != c.output_tol.end())
        tol = custom->second;
      const auto backend_tol = [&](const std::string& key) {
        const auto found = c.backend_tol.find(key);
        if (found == c.backend_tol.end() && !b.tolerances_of.empty())
          return c.backend_tol.find(b.tolerances_of + key.substr(b.name.size()));
        return found;
      };
      if (const auto by_backend = backend_tol(b.name); by_backend != c.backend_tol.end())
        tol = by_backend->second;
      if (const auto by_output = backend_tol(b.name + "/" + e.name);
          by_output != c.backend_tol.end())
        tol = by_output->second;
    }
    EXPECT_TRUE(matches(a->value, e.value, tol)) << phase << " output " << e.name;
  }
  for (const Output& a : actual)
    if (std::none_of(expected.begin(), expected.end(),
                     [&](const Output& o) { return o.name == a.name; }))
      ADD_FAILURE() << phase << " output " << a.name << " exists on " << b.name
                    << " but not on the reference";
}

}  // namespace

void check(const Param& p) {
  const Backend& b = *p.backend;
  const OpCase& c = *p.op_case;
  if (const std::string why = b.unavailable(); !why.empty())
    GTEST_SKIP() << b.name << " unavailable: " << why;
  Tensor dy;
  const RunResult expected = run_on(backends().front(), c, dy);
  const RunResult actual = run_on(b, c, dy);
  compare("forward", b, c, actual.forward, expected.forward, c.forward_tol);
  compare("backward", b, c, actual.backward, expected.backward, c.backward_tol);
}

void check_thread_invariance(const Param& p) {
  const Backend& b = *p.backend;
  const OpCase& c = *p.op_case;
  if (const std::string why = b.unavailable(); !why.empty())
    GTEST_SKIP() << b.name << " unavailable: " << why;
  Tensor dy;
  const RunResult one = run_on(b, c, dy, 1);
  for (int threads = 2; threads <= 4; ++threads) {
    SCOPED_TRACE(::testing::Message() << threads << " threads against 1");
    const RunResult many = run_on(b, c, dy, threads);
    compare("forward", b, c, many.forward, one.forward, kExact, false);
    compare("backward", b, c, many.backward, one.backward, kExact, false);
  }
}

}  // namespace epoch::testing::parity
