// A CPU kernel compiled once per instruction-set level (epoch/tensor/cpu_isa.h) and called
// through one name. A kernel's header declares it as
//
//   extern const IsaKernel<void(const float* x, float* y, std::int64_t n)> relu_forward;
//
// its source file is compiled once per level (CMake's epoch_isa_tiers; kernels/isa_target.h
// says how), each time defining the function in that level's namespace (EPOCH_ISA_NS), and the
// baseline compilation defines the object with EPOCH_ISA_KERNEL(relu_forward). A call runs the
// version of the level chosen for this process.
#pragma once

#include <type_traits>
#include <utility>

#include "epoch/tensor/cpu_isa.h"
#include "epoch/tensor/error.h"

namespace epoch::kernels {

template <typename Function>
class IsaKernel;

template <typename R, typename... Args>
class IsaKernel<R(Args...)> {
 public:
  using Function = R(Args...);

  /// One version per level, lowest first; null where a level has none (a call at that level
  /// is a logic error: the kernel's `supported` check must have said no first).
  constexpr IsaKernel(const char* name, Function* x86_64, Function* x86_64_v3,
                      Function* x86_64_v4)
      : name_(name), versions_{x86_64, x86_64_v3, x86_64_v4} {}

  R operator()(Args... args) const { return active()(std::forward<Args>(args)...); }

  /// The version of the process's level, as a plain function pointer.
  Function* active() const {
    Function* f = versions_[active_cpu_isa_index()];
    if (f == nullptr)
      EPOCH_THROW(Error, "internal: the CPU kernel ", name_, " has no ",
                  cpu_isa_name(active_cpu_isa()), " version");
    return f;
  }

  /// The version of `isa` (null where there is none), for tests that compare the levels.
  Function* version(CpuIsa isa) const { return versions_[static_cast<int>(isa)]; }

 private:
  const char* name_;
  Function* versions_[kCpuIsaLevels];
};

}  // namespace epoch::kernels

// In the baseline compilation of a kernel's source file, inside the namespace that declares
// `name`: the object `name`, from the versions each level's compilation defined.
#define EPOCH_ISA_KERNEL(name)                                                               \
  using epoch_isa_kernel_##name = std::remove_cvref_t<decltype(name)>;                       \
  namespace isa_x86_64 {                                                                     \
  epoch_isa_kernel_##name::Function name;                                                    \
  }                                                                                          \
  namespace isa_x86_64_v3 {                                                                  \
  epoch_isa_kernel_##name::Function name;                                                    \
  }                                                                                          \
  namespace isa_x86_64_v4 {                                                                  \
  epoch_isa_kernel_##name::Function name;                                                    \
  }                                                                                          \
  constinit const epoch_isa_kernel_##name name(#name, &isa_x86_64::name, &isa_x86_64_v3::name, \
                                               &isa_x86_64_v4::name)
