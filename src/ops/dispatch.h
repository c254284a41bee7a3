// Helpers every op's dispatch uses: device agreement checks, the error for a device that has no
// implementation (a missing backend throws; it never falls back silently), and dispatch(), the
// one place that picks an op's kernel by device and CPU kernel choice.
#pragma once

#include <memory>
#include <string>
#include <type_traits>

#include "epoch/ops/backend.h"
#include "epoch/tensor/tensor.h"
#include "kernels/impl_note.h"

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

/// The f32 elements of a row-major or channel-blocked tensor as stored, for kernels told its
/// layout (Tensor::channel_block).
inline float* activation_f32(const Tensor& t) { return t.is_blocked() ? t.blocked_f32() : t.f32(); }

/// An uninitialized f32 tensor with t's shape, device and layout (row-major or channel-blocked).
inline Tensor empty_like(const Tensor& t) {
  return t.is_blocked() ? Tensor::empty_blocked(t.shape(), t.channel_block())
                        : Tensor::empty(t.shape(), DType::f32, t.device());
}

/// For elementwise ops that take channel-blocked tensors: the operands as they are when they
/// share one layout and a is blocked, else their row-major copies (contiguous()).
template <typename... Ts>
bool same_blocked_layout(const Tensor& a, const Ts&... rest) {
  return a.is_blocked() && (... && (rest.channel_block() == a.channel_block()));
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

/// A non-owning reference to a `void()` callable: the lambdas of a Kernels table, which live
/// until the end of the dispatch() call that names them. Empty by default (no such kernel).
class KernelRef {
 public:
  KernelRef() = default;
  template <typename F>
  requires(!std::is_same_v<std::remove_cvref_t<F>, KernelRef>)
      KernelRef(F&& f)  // implicit, so that a table reads {.cpu = [&] { ... }}
      : callable_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* c) { (*static_cast<std::remove_reference_t<F>*>(c))(); }) {}

  explicit operator bool() const { return call_ != nullptr; }
  void operator()() const { call_(callable_); }

 private:
  void* callable_ = nullptr;
  void (*call_)(void*) = nullptr;
};

/// One op's implementations by device, each a lambda that runs one kernel on the op's checked,
/// contiguous f32 tensors (every kernel is f32 today; check_f32 refuses other dtypes first).
/// Slots whose backend is not compiled in are left out with #if, so a build without it has
/// none: `.fast` for oneDNN under EPOCH_WITH_ONEDNN, `.cuda` under EPOCH_WITH_CUDA (or
/// EPOCH_WITH_CUDNN for cuDNN convolutions).
struct Kernels {
  KernelRef cpu;        // the plain reference kernel: always given, the test oracle
  KernelRef fast = {};  // the CPU fast path (oneDNN, or an own vectorized kernel)
  bool fast_if = true;  // a further condition of the fast path (shapes it handles)
  /// The fast path gives the same bits at every thread count (a test at 1 to 4 threads says
  /// so, tests/cpu/thread_invariance_test.cpp), or, under CpuKernels::strict, makes itself so
  /// (a fixed partition, cpu/fixed_parts.h): CpuKernels::strict may run it.
  bool strict_ok = false;
  KernelRef cuda = {};  // own CUDA kernels, cuBLAS or cuDNN
};

/// True when the calling thread's CPU kernels run k's fast path: it exists, takes these shapes,
/// and the kernels are CpuKernels::fast, or CpuKernels::strict and the fast path is strict_ok.
inline bool runs_fast(const Kernels& k) {
  if (!k.fast || !k.fast_if) return false;
  const CpuKernels chosen = cpu_kernels();
  return chosen == CpuKernels::fast || (chosen == CpuKernels::strict && k.strict_ok);
}

/// Runs k with a KernelTrace active: records op and the implementation that ran (see
/// KernelRecord), with the names the kernel gave through kernels::note_impl().
void dispatch_traced(const char* op, Device d, const Kernels& k, KernelTrace& trace);

/// Runs the kernel for device d. On the CPU that is `fast` when runs_fast(k), else the
/// reference `cpu`. A device without a kernel throws BackendUnavailable naming op.
inline void dispatch(const char* op, Device d, const Kernels& k) {
  if (KernelTrace* trace = KernelTrace::active(); trace != nullptr) [[unlikely]] {
    dispatch_traced(op, d, k, *trace);
    return;
  }
  switch (d.type) {
    case DeviceType::cpu:
      if (runs_fast(k))
        k.fast();
      else
        k.cpu();
      return;
    case DeviceType::cuda:
      if (!k.cuda) break;
      k.cuda();
      return;
  }
  no_backend(op, d);
}

}  // namespace epoch::ops
