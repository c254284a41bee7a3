// How a kernel says which implementation ran: a fast-path kernel that chooses among several
// (a oneDNN primitive's implementation, or one of epoch's own vectorized kernels) names its
// choice with note_impl(); ops::dispatch() collects the names while an ops::KernelTrace is
// active on the calling thread (epoch bench --layers, and the test that no zoo layer runs a
// reference implementation). Costs one thread-local load when no trace is active.
#pragma once

#include <string>
#include <string_view>

namespace epoch::kernels {

/// Where note_impl() writes: set by ops::dispatch() around one kernel call while tracing.
inline thread_local std::string* t_impl_sink = nullptr;

/// True while a trace wants implementation names (skip building a name otherwise).
inline bool impl_wanted() { return t_impl_sink != nullptr; }

/// Names the implementation the current kernel call runs, e.g. "onednn:jit:avx2" or
/// "epoch:lrn_nchw". A call may name several (a reorder, then a primitive): they are joined
/// with " + ".
inline void note_impl(std::string_view name) {
  if (t_impl_sink == nullptr) return;
  if (!t_impl_sink->empty()) t_impl_sink->append(" + ");
  t_impl_sink->append(name);
}

/// True when impl names one of oneDNN's reference or "simple" implementations ("ref:any",
/// "lrn_ref:any", "simple_nchw:any", ...) or epoch's reference kernels standing in for a fast
/// path ("reference"). The fast-path kernels read it to replace oneDNN's slow code with
/// epoch's own; ops::is_reference_impl() is the same test.
inline bool is_reference_impl(std::string_view impl) {
  return impl == "reference" || impl.find("ref") != std::string_view::npos ||
         impl.find("simple") != std::string_view::npos;
}

}  // namespace epoch::kernels
