// Concat, slice and 2x upsampling: argument checks, then dispatch by device. Concat and slice
// are strided block copies of raw bytes, so they serve every dtype.
#include "epoch/ops/shape_ops.h"

#include "cpu/shape_ops_cpu.h"
#include "ops/dispatch.h"

#if EPOCH_WITH_CUDA
#include "cuda/shape_ops_cuda.h"
#endif

namespace epoch::ops {
namespace {

// dim in [-ndim, ndim) mapped to [0, ndim).
std::int64_t normalize_dim(const char* op, std::int64_t dim, std::int64_t ndim) {
  EPOCH_CHECK(dim >= -ndim && dim < ndim, op, ": dimension ", dim, " out of range for ", ndim,
              " dimensions");
  return dim < 0 ? dim + ndim : dim;
}

// Product of shape[begin, end).
std::int64_t span_numel(const Shape& shape, std::int64_t begin, std::int64_t end) {
  std::int64_t n = 1;
  for (std::int64_t i = begin; i < end; ++i) n *= shape[static_cast<std::size_t>(i)];
  return n;
}

// Strided block copy on device d (strides and sizes in bytes).
void copy_rows(Device d, void* dst, std::int64_t dst_stride, const void* src,
               std::int64_t src_stride, std::int64_t rows, std::int64_t row_bytes) {
  if (rows == 0 || row_bytes == 0) return;
  dispatch("copy_rows", d, {
    .cpu = [&] { cpu::copy_rows(dst, dst_stride, src, src_stride, rows, row_bytes); },
#if EPOCH_WITH_CUDA
    .cuda = [&] { cuda::copy_rows(dst, dst_stride, src, src_stride, rows, row_bytes); },
#endif
  });
}

}  // namespace

Tensor concat(const std::vector<Tensor>& xs, std::int64_t dim_in) {
  EPOCH_CHECK(!xs.empty(), "concat: no tensors to join");
  for (std::size_t i = 0; i < xs.size(); ++i)
    EPOCH_CHECK(xs[i].defined(), "concat: tensor ", i, " is undefined");
  const Tensor& first = xs[0];
  EPOCH_CHECK(first.ndim() >= 1, "concat of scalars");
  const std::int64_t dim = normalize_dim("concat", dim_in, first.ndim());
  const Device d = first.device();
  Shape out_shape = first.shape();
  out_shape[static_cast<std::size_t>(dim)] = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const Tensor& x = xs[i];
    EPOCH_CHECK(x.dtype() == first.dtype(), "concat: tensor ", i, " is ", dtype_name(x.dtype()),
                ", tensor 0 is ", dtype_name(first.dtype()));
    EPOCH_CHECK(x.device() == d, "concat: tensor ", i, " is on ", x.device().str(),
                ", tensor 0 on ", d.str());
    bool agree = x.ndim() == first.ndim();
    for (std::int64_t k = 0; agree && k < x.ndim(); ++k)
      agree = k == dim || x.size(k) == first.size(k);
    EPOCH_CHECK(agree, "concat along dimension ", dim, ": shape ", shape_str(x.shape()),
                " of tensor ", i, " does not match ", shape_str(first.shape()));
    out_shape[static_cast<std::size_t>(dim)] += x.size(dim);
  }
  Tensor y = Tensor::empty(out_shape, first.dtype(), d);
  const auto es = static_cast<std::int64_t>(dtype_size(first.dtype()));
  const std::int64_t outer = span_numel(out_shape, 0, dim);
  const std::int64_t inner = span_numel(out_shape, dim + 1, y.ndim()) * es;  // bytes
  const std::int64_t dst_stride = out_shape[static_cast<std::size_t>(dim)] * inner;
  std::int64_t at = 0;  // bytes into each output row
  for (const Tensor& x_in : xs) {
    const Tensor x = x_in.contiguous();
    const std::int64_t row_bytes = x.size(dim) * inner;
    copy_rows(d, static_cast<char*>(y.raw()) + at, dst_stride, x.raw(), row_bytes, outer,
              row_bytes);
    at += row_bytes;
  }
  return y;
}

Tensor slice(const Tensor& x_in, std::int64_t dim_in, std::int64_t start, std::int64_t length) {
  EPOCH_CHECK(x_in.defined(), "slice: x is undefined");
  EPOCH_CHECK(x_in.ndim() >= 1, "slice of a scalar");
  const std::int64_t dim = normalize_dim("slice", dim_in, x_in.ndim());
  const std::int64_t size = x_in.size(dim);
  EPOCH_CHECK(start >= 0 && length >= 0 && start + length <= size, "slice: [", start, ", ",
              start + length, ") of dimension ", dim, " out of range for shape ",
              shape_str(x_in.shape()));
  const Tensor x = x_in.contiguous();
  Shape out_shape = x.shape();
  out_shape[static_cast<std::size_t>(dim)] = length;
  Tensor y = Tensor::empty(out_shape, x.dtype(), x.device());
  const auto es = static_cast<std::int64_t>(dtype_size(x.dtype()));
  const std::int64_t outer = span_numel(x.shape(), 0, dim);
  const std::int64_t inner = span_numel(x.shape(), dim + 1, x.ndim()) * es;  // bytes
  copy_rows(x.device(), y.raw(), length * inner, static_cast<const char*>(x.raw()) + start * inner,
            size * inner, outer, length * inner);
  return y;
}

Tensor slice_backward(const Tensor& dy_in, const Shape& x_shape, std::int64_t dim_in,
                      std::int64_t start) {
  check_f32("slice_backward", "dy", dy_in);
  const auto ndim = static_cast<std::int64_t>(x_shape.size());
  EPOCH_CHECK(ndim >= 1 && dy_in.ndim() == ndim, "slice_backward: dy ", shape_str(dy_in.shape()),
              " does not match x ", shape_str(x_shape));
  const std::int64_t dim = normalize_dim("slice_backward", dim_in, ndim);
  const std::int64_t size = x_shape[static_cast<std::size_t>(dim)];
  const std::int64_t length = dy_in.size(dim);
  bool agree = start >= 0 && start + length <= size;
  for (std::int64_t k = 0; agree && k < ndim; ++k)
    agree = k == dim || dy_in.size(k) == x_shape[static_cast<std::size_t>(k)];
  EPOCH_CHECK(agree, "slice_backward: dy ", shape_str(dy_in.shape()), " at ", start,
              " of dimension ", dim, " does not fit in x ", shape_str(x_shape));
  const Tensor dy = dy_in.contiguous();
  Tensor dx = Tensor::zeros(x_shape, DType::f32, dy.device());
  const auto es = static_cast<std::int64_t>(sizeof(float));
  const std::int64_t outer = span_numel(x_shape, 0, dim);
  const std::int64_t inner = span_numel(x_shape, dim + 1, ndim) * es;  // bytes
  copy_rows(dy.device(), static_cast<char*>(dx.raw()) + start * inner, size * inner, dy.raw(),
            length * inner, outer, length * inner);
  return dx;
}

Tensor upsample_nearest2x_forward(const Tensor& x_in) {
  check_f32("upsample_nearest2x_forward", "x", x_in);
  EPOCH_CHECK(x_in.ndim() == 4, "upsample_nearest2x_forward: x must be (N, C, H, W), got ",
              shape_str(x_in.shape()));
  const Tensor x = x_in.contiguous();
  const std::int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  Tensor y = Tensor::empty({N, C, 2 * H, 2 * W}, DType::f32, x.device());
  dispatch("upsample_nearest2x_forward", x.device(), {
    .cpu = [&] { cpu::upsample_nearest2x_forward(x.f32(), y.f32(), N, C, H, W); },
#if EPOCH_WITH_CUDA
    .cuda = [&] { cuda::upsample_nearest2x_forward(x.f32(), y.f32(), N, C, H, W); },
#endif
  });
  return y;
}

Tensor upsample_nearest2x_backward(const Tensor& dy_in) {
  check_f32("upsample_nearest2x_backward", "dy", dy_in);
  EPOCH_CHECK(dy_in.ndim() == 4 && dy_in.size(2) % 2 == 0 && dy_in.size(3) % 2 == 0,
              "upsample_nearest2x_backward: dy must be (N, C, 2H, 2W), got ",
              shape_str(dy_in.shape()));
  const Tensor dy = dy_in.contiguous();
  const std::int64_t N = dy.size(0), C = dy.size(1), H = dy.size(2) / 2, W = dy.size(3) / 2;
  Tensor dx = Tensor::empty({N, C, H, W}, DType::f32, dy.device());
  dispatch("upsample_nearest2x_backward", dy.device(), {
    .cpu = [&] { cpu::upsample_nearest2x_backward(dy.f32(), dx.f32(), N, C, H, W); },
#if EPOCH_WITH_CUDA
    .cuda = [&] { cuda::upsample_nearest2x_backward(dy.f32(), dx.f32(), N, C, H, W); },
#endif
  });
  return dx;
}

}  // namespace epoch::ops
