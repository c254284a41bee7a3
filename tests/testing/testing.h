// Shared test helpers: seeded random tensors, closeness checks, and the numerical gradient
// checker every differentiable op is tested with.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "epoch/tensor/tensor.h"

namespace epoch::testing {

/// Uniform values in [lo, hi) from a seeded counter-based stream (never all zeros).
Tensor random_tensor(const Shape& shape, std::uint64_t seed, float lo = -1.0f, float hi = 1.0f);
/// Uniform values in [lo, hi) whose magnitude is at least `gap` (keeps inputs off kinks at 0).
Tensor random_away_from_zero(const Shape& shape, std::uint64_t seed, float gap = 0.05f,
                             float hi = 1.0f);

/// Checks |a - b| <= atol + rtol * max(|a|, |b|) element by element; reports the worst one.
::testing::AssertionResult allclose(const Tensor& actual, const Tensor& expected,
                                    float atol = 1e-5f, float rtol = 1e-4f);

struct GradcheckOptions {
  float eps = 1e-2f;   // central-difference step
  float atol = 1e-2f;  // pass when |a - n| <= atol + rtol * max(|a|, |n|, 1)
  float rtol = 1e-2f;
  /// Check at most this many elements per input (a seeded subset for large inputs).
  std::int64_t max_elements = 256;
  std::uint64_t seed = 7;
};

/// Compares the autograd gradient of sum(f(inputs) * r), r a fixed random tensor, with central
/// differences of the same objective (evaluated in double). Inputs that require grad are checked.
::testing::AssertionResult gradcheck(const std::function<Tensor(const std::vector<Tensor>&)>& f,
                                     std::vector<Tensor> inputs, const GradcheckOptions& opts = {});

/// A PNG of `w` x `h` 8-bit RGB pixels whose IDAT holds `rows` deflated zero rows: with fewer
/// rows than `h` its header lies about its size (decompression-bomb tests).
std::vector<std::uint8_t> png_claiming(std::uint32_t w, std::uint32_t h, std::uint32_t rows);

}  // namespace epoch::testing

namespace epoch::testing {
/// A fresh, empty directory under the system temporary directory, removed when destroyed.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

/// While alive, writes that would make a file longer than `bytes` fail with EFBIG (the disk
/// "fills up"): RLIMIT_FSIZE lowered, SIGXFSZ ignored; both restored when destroyed.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(std::uint64_t bytes);
  ~FileSizeLimit();
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  std::uint64_t old_soft_limit_ = 0;
  void (*old_handler_)(int) = nullptr;
};
}  // namespace epoch::testing
