// Matrix products: general 2-D matmul with optional transposes, and the dense layer
// y = x W^T + b with its backward. oneDNN (or cuBLAS) on the fast paths.
#pragma once

#include "epoch/tensor/tensor.h"

namespace epoch::ops {

/// C = op(A) op(B), op = transpose when the flag is set. A (M, K) or (K, M), B (K, N) or (N, K).
/// Returns C (M, N).
Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_a = false, bool transpose_b = false);

/// y = x W^T + b.  x (N, IN), w (OUT, IN), b (OUT) or undefined. Returns (N, OUT).
/// relu: y = max(0, x w^T + b), fused into the product on the CPU fast path (a oneDNN post-op),
/// applied after it elsewhere; linear_backward then takes the gradient after the ReLU's.
Tensor linear_forward(const Tensor& x, const Tensor& w, const Tensor& b, bool relu = false);

struct LinearGrads {
  Tensor dx;  // (N, IN), undefined unless asked for
  Tensor dw;  // (OUT, IN)
  Tensor db;  // (OUT), undefined without bias
};
/// dw_into, when defined (contiguous, w's shape and device), is where dw is written: g.dw is
/// then that tensor.
LinearGrads linear_backward(const Tensor& dy, const Tensor& x, const Tensor& w, bool has_bias,
                            bool need_dx = true, const Tensor& dw_into = Tensor());

/// y = x + b broadcast over channels.  x (N, C, ...) , b (C). Returns a new tensor.
Tensor bias_add_forward(const Tensor& x, const Tensor& b);
/// db (C) = sum of dy over every dimension but 1.
Tensor bias_add_backward(const Tensor& dy);

}  // namespace epoch::ops
