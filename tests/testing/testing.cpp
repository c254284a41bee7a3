// Implementation of the shared test helpers (testing.h).
#include "testing/testing.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "epoch/autograd/autograd.h"
#include "epoch/autograd/functions.h"
#include "epoch/tensor/random.h"

namespace epoch::testing {

Tensor random_tensor(const Shape& shape, std::uint64_t seed, float lo, float hi) {
  Tensor t = Tensor::empty(shape);
  RandomStream rng(seed, 0x7e57);
  float* p = t.f32();
  for (std::int64_t i = 0; i < t.numel(); ++i) p[i] = rng.uniform(lo, hi);
  return t;
}

Tensor random_away_from_zero(const Shape& shape, std::uint64_t seed, float gap, float hi) {
  Tensor t = Tensor::empty(shape);
  RandomStream rng(seed, 0x7e58);
  float* p = t.f32();
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    const float m = rng.uniform(gap, hi);
    p[i] = (rng.next_bits() & 1u) ? m : -m;
  }
  return t;
}

::testing::AssertionResult allclose(const Tensor& actual, const Tensor& expected, float atol,
                                    float rtol) {
  if (actual.shape() != expected.shape())
    return ::testing::AssertionFailure() << "shape " << shape_str(actual.shape()) << " vs expected "
                                         << shape_str(expected.shape());
  const std::vector<float> a = actual.to_vector(), e = expected.to_vector();
  double worst = 0.0;
  std::size_t worst_i = 0;
  std::size_t bad = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double diff = std::fabs(static_cast<double>(a[i]) - e[i]);
    const double tol = atol + rtol * std::max(std::fabs(a[i]), std::fabs(e[i]));
    if (!(diff <= tol)) {
      ++bad;
      if (!(diff <= worst)) {
        worst = diff;
        worst_i = i;
      }
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << bad << " of " << a.size() << " elements differ; worst at " << worst_i << ": "
         << a[worst_i] << " vs expected " << e[worst_i] << " (|diff| " << worst << ")";
}

namespace {
double objective(const std::function<Tensor(const std::vector<Tensor>&)>& f,
                 const std::vector<Tensor>& inputs, const std::vector<float>& r) {
  autograd::NoGradGuard no_grad;
  const std::vector<float> y = f(inputs).to_vector();
  double s = 0.0;
  for (std::size_t i = 0; i < y.size(); ++i) s += static_cast<double>(y[i]) * r[i];
  return s;
}
}  // namespace

::testing::AssertionResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& f,
                                     std::vector<Tensor> inputs, const GradcheckOptions& opts) {
  // Analytic gradients of sum(f(x) * r).
  const Tensor y0 = f(inputs);
  const Tensor r = random_tensor(y0.shape(), opts.seed ^ 0x5eed, -1.0f, 1.0f);
  const std::vector<float> rv = r.to_vector();
  for (Tensor& x : inputs)
    if (x.requires_grad()) x.set_grad(Tensor());
  const Tensor obj = sum(mul(y0, r.to(y0.device())));
  obj.backward();

  RandomStream pick(opts.seed, 0x9c);
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    Tensor& x = inputs[k];
    if (!x.requires_grad()) continue;
    const Tensor analytic = x.grad();
    if (!analytic.defined())
      return ::testing::AssertionFailure() << "input " << k << " received no gradient";
    const std::vector<float> a = analytic.to_vector();
    const std::int64_t n = x.numel();
    std::vector<std::int64_t> indices;
    if (n <= opts.max_elements) {
      for (std::int64_t i = 0; i < n; ++i) indices.push_back(i);
    } else {
      for (std::int64_t i = 0; i < opts.max_elements; ++i)
        indices.push_back(static_cast<std::int64_t>(pick.below(static_cast<std::uint64_t>(n))));
    }
    Tensor host = x.to(Device::cpu());
    for (std::int64_t i : indices) {
      // Perturb a copy so the input the graph saved is untouched.
      const float original = host.f32()[i];
      std::vector<Tensor> shifted = inputs;
      Tensor plus = host.clone();
      plus.f32()[i] = original + opts.eps;
      shifted[k] = plus.to(x.device());
      const double fp = objective(f, shifted, rv);
      Tensor minus = host.clone();
      minus.f32()[i] = original - opts.eps;
      shifted[k] = minus.to(x.device());
      const double fm = objective(f, shifted, rv);
      const double numeric = (fp - fm) / (2.0 * opts.eps);
      const double an = a[static_cast<std::size_t>(i)];
      const double tol = opts.atol + opts.rtol * std::max({std::fabs(an), std::fabs(numeric), 1.0});
      if (!(std::fabs(an - numeric) <= tol))
        return ::testing::AssertionFailure()
               << "input " << k << " " << shape_str(x.shape()) << " element " << i << ": analytic "
               << an << " vs numeric " << numeric;
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace epoch::testing

#include <stdlib.h>
#include <sys/resource.h>

#include <csignal>
#include <filesystem>
#include <stdexcept>

namespace epoch::testing {
TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "epoch-test-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}
TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

FileSizeLimit::FileSizeLimit(std::uint64_t bytes) {
  struct rlimit limit {};
  if (getrlimit(RLIMIT_FSIZE, &limit) != 0) throw std::runtime_error("getrlimit failed");
  old_soft_limit_ = limit.rlim_cur;
  limit.rlim_cur = static_cast<rlim_t>(bytes);
  old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
  if (setrlimit(RLIMIT_FSIZE, &limit) != 0) {
    std::signal(SIGXFSZ, old_handler_);
    throw std::runtime_error("setrlimit(RLIMIT_FSIZE) failed");
  }
}
FileSizeLimit::~FileSizeLimit() {
  struct rlimit limit {};
  getrlimit(RLIMIT_FSIZE, &limit);
  limit.rlim_cur = static_cast<rlim_t>(old_soft_limit_);
  setrlimit(RLIMIT_FSIZE, &limit);
  std::signal(SIGXFSZ, old_handler_);
}
std::vector<std::uint8_t> png_claiming(std::uint32_t w, std::uint32_t h, std::uint32_t rows) {
  using Bytes = std::vector<std::uint8_t>;
  const auto put32 = [](Bytes& out, std::uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8)
      out.push_back(static_cast<std::uint8_t>(v >> shift));
  };
  Bytes out = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  const auto chunk = [&](const char* type, const Bytes& data) {
    put32(out, static_cast<std::uint32_t>(data.size()));
    Bytes body(type, type + 4);
    body.insert(body.end(), data.begin(), data.end());
    out.insert(out.end(), body.begin(), body.end());
    put32(out, static_cast<std::uint32_t>(crc32(0, body.data(), static_cast<uInt>(body.size()))));
  };
  Bytes ihdr;
  put32(ihdr, w);
  put32(ihdr, h);
  ihdr.insert(ihdr.end(), {8, 2, 0, 0, 0});
  chunk("IHDR", ihdr);
  const Bytes raw(static_cast<std::size_t>(rows) * (1 + 3 * w), 0);
  uLongf size = compressBound(static_cast<uLong>(raw.size()));
  Bytes idat(size);
  compress2(idat.data(), &size, raw.data(), static_cast<uLong>(raw.size()), 9);
  idat.resize(size);
  chunk("IDAT", idat);
  chunk("IEND", {});
  return out;
}

}  // namespace epoch::testing
