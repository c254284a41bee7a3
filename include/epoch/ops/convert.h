// Dtype conversions on any device, so that (for one) a binary loss turns i32 labels into f32
// targets where they already are, with no round trip through the host.
#pragma once

#include "epoch/tensor/tensor.h"

namespace epoch::ops {

/// An f32 copy of an i32 tensor, same shape and device.
Tensor i32_to_f32(const Tensor& x);

}  // namespace epoch::ops
