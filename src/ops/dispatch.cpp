// dispatch() under a KernelTrace (see dispatch.h): the same choice of kernel, recorded.
#include "ops/dispatch.h"

#include <utility>

namespace epoch::ops {

void dispatch_traced(const char* op, Device d, const Kernels& k, KernelTrace& trace) {
  std::string noted;
  std::string* const outer = kernels::t_impl_sink;
  kernels::t_impl_sink = &noted;
  struct RestoreSink {
    std::string* outer;
    ~RestoreSink() { kernels::t_impl_sink = outer; }
  } restore{outer};
  std::string impl;
  switch (d.type) {
    case DeviceType::cpu:
      if (runs_fast(k)) {
        k.fast();
        impl = noted.empty() ? "epoch:fast" : std::move(noted);
      } else {
        k.cpu();  // a CPU kernel that picks its own implementation (max-pool backward) names it
        impl = !noted.empty() ? std::move(noted) : k.fast ? "reference" : "epoch:cpu";
      }
      break;
    case DeviceType::cuda:
      if (!k.cuda) no_backend(op, d);
      k.cuda();
      impl = noted.empty() ? "cuda" : "cuda:" + noted;
      break;
    default:
      no_backend(op, d);
  }
  trace.add({op, std::move(impl)});
}

}  // namespace epoch::ops
