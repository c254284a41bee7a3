// How a parameter starts when its model file says so (a Keras initializer, a Caffe filler);
// parameters without one follow nn::initialize's rule. Every draw comes from the parameter's own
// stream (the run's seed and the parameter's path), so a file and a seed give the same bits.
#pragma once

#include <string>

namespace epoch::nn {

struct ParamInit {
  enum class Kind {
    constant,          // value
    uniform,           // in [lo, hi)
    normal,            // mean, std
    truncated_normal,  // mean, std; draws beyond 2 std drawn again (Keras's TruncatedNormal)
    /// Keras's VarianceScaling (Glorot, He, LeCun) and Caffe's xavier and msra: variance
    /// scale / n, n the fan in, out or their mean; uniform in +-sqrt(3 scale / n), normal, or
    /// truncated normal with its std divided by 0.87962566103423978 (Keras).
    variance_scaling,
  };
  enum class Fan { in, out, average };
  enum class Distribution { uniform, normal, truncated_normal };
  Kind kind = Kind::constant;
  double value = 0.0, lo = 0.0, hi = 0.0, mean = 0.0, std = 0.0;
  double scale = 1.0;
  Fan fan = Fan::in;
  Distribution distribution = Distribution::uniform;
};

/// One line: "constant 0.1", "variance scaling 2 (fan in, truncated normal)".
std::string describe(const ParamInit& init);

}  // namespace epoch::nn
