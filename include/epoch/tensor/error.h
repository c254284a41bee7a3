// Typed exceptions for the whole library: every failure names the failed check, the op and
// file:line. Library code throws; only the command-line layer turns these into exit codes.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace epoch {

/// Base of every exception the library throws.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

/// A caller passed something the contract forbids (shape, range, dtype, device mismatch).
class InvalidArgument : public Error {
  using Error::Error;
};
/// A feature or device was asked for that this build or machine lacks.
class BackendUnavailable : public Error {
  using Error::Error;
};
/// A file could not be read or written, or its contents are malformed.
class IoError : public Error {
  using Error::Error;
};
/// A configuration value (flag, config file, model name) is not acceptable.
class ConfigError : public Error {
  using Error::Error;
};
/// A CUDA, cuBLAS, cuDNN or oneDNN call failed.
class BackendError : public Error {
  using Error::Error;
};
/// Training diverged (NaN/Inf loss) or another numerical failure.
class NumericalError : public Error {
  using Error::Error;
};

}  // namespace epoch

namespace epoch::detail {
inline std::string concat_message() { return {}; }
template <typename... Args>
std::string concat_message(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace epoch::detail

/// Throws epoch::InvalidArgument naming the expression and file:line when cond is false.
#define EPOCH_CHECK(cond, ...)                                                             \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      throw ::epoch::InvalidArgument(::epoch::detail::concat_message(__VA_ARGS__) +        \
                                     " [check `" #cond "` failed at " __FILE__ ":" +       \
                                     std::to_string(__LINE__) + "]");                      \
    }                                                                                      \
  } while (0)

/// Throws the given exception type with a message and file:line.
#define EPOCH_THROW(Type, ...)                                                         \
  throw Type(::epoch::detail::concat_message(__VA_ARGS__) + " [at " __FILE__ ":" +     \
             std::to_string(__LINE__) + "]")
