// Helpers every op's dispatch uses: device agreement checks and the error for a device that
// has no implementation (a missing backend throws; it never falls back silently).
#pragma once

#include "epoch/tensor/tensor.h"

namespace epoch::ops {

/// Checks that every defined tensor is on the same device and returns it.
template <typename... Ts>
Device common_device(const char* op, const Tensor& first, const Ts&... rest) {
  const Device d = first.device();
  auto check_one = [&](const Tensor& t) {
    EPOCH_CHECK(!t.defined() || t.device() == d, op, ": tensors on different devices (", d.str(),
                " and ", t.device().str(), ")");
  };
  (check_one(rest), ...);
  return d;
}

/// Checks a tensor is defined, f32 and contiguous.
inline void check_f32(const char* op, const char* name, const Tensor& t) {
  EPOCH_CHECK(t.defined(), op, ": ", name, " is undefined");
  EPOCH_CHECK(t.dtype() == DType::f32, op, ": ", name, " must be f32, got ", dtype_name(t.dtype()));
}

[[noreturn]] inline void no_backend(const char* op, Device d) {
  EPOCH_THROW(BackendUnavailable, op, ": no implementation for device ", d.str(),
              d.is_cuda() ? " (this build has no CUDA backend)" : "");
}

}  // namespace epoch::ops
