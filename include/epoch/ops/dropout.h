// Inverted dropout with a counter-based random stream: the mask of step t depends only on the
// seed and the stream key, never on thread scheduling.
#pragma once

#include <cstdint>

#include "epoch/tensor/tensor.h"

namespace epoch::ops {

struct DropoutResult {
  Tensor y;     // x * mask / (1 - p)
  Tensor mask;  // same shape, 0 or 1/(1-p)
};
/// Zeroes each element with probability p (0 <= p < 1) and scales the rest by 1/(1-p).
/// The mask is a pure function of (seed, key, element index).
DropoutResult dropout_forward(const Tensor& x, float p, std::uint64_t seed, std::uint64_t key);
Tensor dropout_backward(const Tensor& dy, const Tensor& mask);  // dy * mask

}  // namespace epoch::ops
