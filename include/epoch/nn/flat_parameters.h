// Lays a module's parameters and their gradients into two flat buffers, each parameter (and
// gradient) becoming a view. An optimizer or an all-reduce then touches one buffer, and
// backward accumulates straight into the flat gradient buffer.
#pragma once

#include "epoch/nn/module.h"

namespace epoch::nn {

struct FlatParameters {
  Tensor values;  // (P) every parameter, in Module::parameters() order
  Tensor grads;   // (P) their gradients
};

/// Moves every parameter of `module` into one buffer on its current device and installs
/// gradient views; returns the two buffers. Values are preserved.
FlatParameters flatten_parameters(Module& module);

}  // namespace epoch::nn
