// Elementwise arithmetic and reductions: shape checks, broadcasting, dispatch by device.
#include "epoch/ops/elementwise.h"

#include "cpu/elementwise_cpu.h"
#include "kernels/args.h"
#include "ops/dispatch.h"

#if EPOCH_WITH_CUDA
#include "cuda/elementwise_cuda.h"
#endif

namespace epoch::ops {
namespace {

// Element strides of t when viewed with `shape` (trailing-aligned; 0 on broadcast dims).
Shape broadcast_strides(const Tensor& t, const Shape& shape) {
  Shape strides(shape.size(), 0);
  const std::size_t offset = shape.size() - t.shape().size();
  for (std::size_t i = 0; i < t.shape().size(); ++i)
    strides[offset + i] = t.shape()[i] == 1 ? 0 : t.strides()[i];
  return strides;
}

Tensor binary(kernels::BinaryOp op, const char* name, const Tensor& a_in, const Tensor& b_in) {
  check_f32(name, "a", a_in);
  check_f32(name, "b", b_in);
  const Device d = common_device(name, a_in, b_in);
  // Two channel-blocked operands of one shape and layout combine as stored (a blocked result);
  // any other blocked operand is read row-major.
  if (a_in.shape() == b_in.shape() && same_blocked_layout(a_in, b_in)) {
    Tensor y = empty_like(a_in);
    dispatch(name, d, {.cpu = [&] {
               cpu::binary_same_shape(op, a_in.blocked_f32(), b_in.blocked_f32(), y.blocked_f32(),
                                      y.numel());
             }});
    return y;
  }
  const Tensor a = a_in.is_blocked() ? a_in.contiguous() : a_in;
  const Tensor b = b_in.is_blocked() ? b_in.contiguous() : b_in;
  const Shape shape = broadcast_shape(a.shape(), b.shape());
  Tensor y = Tensor::empty(shape, DType::f32, d);
  const bool same = a.shape() == b.shape() && a.is_contiguous() && b.is_contiguous();
  const Shape as = broadcast_strides(a, shape), bs = broadcast_strides(b, shape);
  const int ndim = static_cast<int>(shape.size());
  dispatch(name, d, {
    .cpu =
        [&] {
          if (same)
            cpu::binary_same_shape(op, a.f32(), b.f32(), y.f32(), y.numel());
          else
            cpu::binary_forward(op, a.f32(), as.data(), b.f32(), bs.data(), y.f32(), shape.data(),
                                ndim);
        },
#if EPOCH_WITH_CUDA
    .cuda = [&] {
      if (same)
        cuda::binary_same_shape(op, a.f32(), b.f32(), y.f32(), y.numel());
      else
        cuda::binary_forward(op, a.f32(), as.data(), b.f32(), bs.data(), y.f32(), shape.data(),
                             ndim);
    },
#endif
  });
  return y;
}

}  // namespace

Shape broadcast_shape(const Shape& a, const Shape& b) {
  const std::size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const std::int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    EPOCH_CHECK(da == db || da == 1 || db == 1, "shapes ", shape_str(a), " and ", shape_str(b),
                " cannot be broadcast together");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Tensor add(const Tensor& a, const Tensor& b) { return binary(kernels::BinaryOp::add, "add", a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return binary(kernels::BinaryOp::sub, "sub", a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary(kernels::BinaryOp::mul, "mul", a, b); }
Tensor div(const Tensor& a, const Tensor& b) { return binary(kernels::BinaryOp::div, "div", a, b); }

Tensor affine_scalar(const Tensor& a, float s, float t) {
  check_f32("affine_scalar", "a", a);
  const Tensor x = a.contiguous();
  Tensor y = Tensor::empty(x.shape(), DType::f32, x.device());
  dispatch("affine_scalar", x.device(), {
    .cpu = [&] { cpu::affine(x.f32(), y.f32(), x.numel(), s, t); },
#if EPOCH_WITH_CUDA
    .cuda = [&] { cuda::affine(x.f32(), y.f32(), x.numel(), s, t); },
#endif
  });
  return y;
}

Tensor pow_scalar(const Tensor& a, float p) {
  check_f32("pow_scalar", "a", a);
  const Tensor x = a.contiguous();
  Tensor y = Tensor::empty(x.shape(), DType::f32, x.device());
  dispatch("pow_scalar", x.device(), {
    .cpu = [&] { cpu::pow_scalar(x.f32(), y.f32(), x.numel(), p); },
#if EPOCH_WITH_CUDA
    .cuda = [&] { cuda::pow_scalar(x.f32(), y.f32(), x.numel(), p); },
#endif
  });
  return y;
}

void axpy_(Tensor& y, const Tensor& x, float alpha) {
  check_f32("axpy_", "x", x);
  check_f32("axpy_", "y", y);
  EPOCH_CHECK(x.shape() == y.shape(), "axpy_: shapes ", shape_str(x.shape()), " and ",
              shape_str(y.shape()), " differ");
  EPOCH_CHECK(y.is_contiguous(), "axpy_ into a non-contiguous tensor");
  const Device d = common_device("axpy_", y, x);
  const Tensor xc = x.contiguous();
  dispatch("axpy_", d, {
    .cpu = [&] { cpu::axpy(y.f32(), xc.f32(), y.numel(), alpha); },
#if EPOCH_WITH_CUDA
    .cuda = [&] { cuda::axpy(y.f32(), xc.f32(), y.numel(), alpha); },
#endif
  });
}

void scale_(Tensor& y, float s) {
  check_f32("scale_", "y", y);
  EPOCH_CHECK(y.is_contiguous(), "scale_ of a non-contiguous tensor");
  dispatch("scale_", y.device(), {
    .cpu = [&] { cpu::affine(y.f32(), y.f32(), y.numel(), s, 0.0f); },
#if EPOCH_WITH_CUDA
    .cuda = [&] { cuda::affine(y.f32(), y.f32(), y.numel(), s, 0.0f); },
#endif
  });
}

void fill_(Tensor& y, float value) {
  check_f32("fill_", "y", y);
  EPOCH_CHECK(y.is_contiguous(), "fill_ of a non-contiguous tensor");
  dispatch("fill_", y.device(), {
    .cpu = [&] { cpu::fill(y.f32(), y.numel(), value); },
#if EPOCH_WITH_CUDA
    .cuda = [&] { cuda::fill(y.f32(), y.numel(), value); },
#endif
  });
}

Tensor sum(const Tensor& x) {
  check_f32("sum", "x", x);
  const Tensor c = x.contiguous();
  Tensor y;
  dispatch("sum", c.device(), {
    .cpu = [&] { y = Tensor::scalar(static_cast<float>(cpu::sum(c.f32(), c.numel()))); },
#if EPOCH_WITH_CUDA
    .cuda = [&] {
      y = Tensor::empty({}, DType::f32, c.device());
      cuda::sum(c.f32(), c.numel(), y.f32());
    },
#endif
  });
  return y;
}

Tensor mean(const Tensor& x) {
  EPOCH_CHECK(x.numel() > 0, "mean of an empty tensor");
  return affine_scalar(sum(x), 1.0f / static_cast<float>(x.numel()));
}

Tensor sum_to_shape(const Tensor& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  check_f32("sum_to_shape", "x", x);
  // Validates that `shape` broadcasts to x's shape.
  EPOCH_CHECK(broadcast_shape(x.shape(), shape) == x.shape(), "sum_to_shape: ", shape_str(shape),
              " does not broadcast to ", shape_str(x.shape()));
  const Tensor c = x.contiguous();
  Tensor out = Tensor::empty(shape, DType::f32, c.device());
  const Shape out_strides = broadcast_strides(out, c.shape());
  const int ndim = static_cast<int>(c.ndim());
  dispatch("sum_to_shape", c.device(), {
    .cpu =
        [&] {
          cpu::sum_to(c.f32(), c.shape().data(), ndim, out_strides.data(), out.f32(), out.numel());
        },
#if EPOCH_WITH_CUDA
    .cuda = [&] {
      cuda::sum_to(c.f32(), c.shape().data(), ndim, out_strides.data(), out.f32(), out.numel());
    },
#endif
  });
  return out;
}

}  // namespace epoch::ops
