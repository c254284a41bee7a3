// Tensor construction, views and copies (the non-differentiable core; autograd lives above).
#include "epoch/tensor/tensor.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

namespace epoch {

std::int64_t shape_numel(const Shape& shape) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

std::string shape_str(const Shape& shape) {
  std::ostringstream os;
  os << '(';
  for (std::size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  if (shape.size() == 1) os << ',';
  os << ')';
  return os.str();
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides(shape.size());
  std::int64_t s = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i];
  }
  return strides;
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  for (std::int64_t d : shape)
    EPOCH_CHECK(d >= 0, "negative dimension in shape ", shape_str(shape));
  Tensor t;
  t.storage_ = std::make_shared<Storage>(
      static_cast<std::size_t>(shape_numel(shape)) * dtype_size(dtype), device);
  t.shape_ = shape;
  t.strides_ = contiguous_strides(shape);
  t.dtype_ = dtype;
  return t;
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  const std::size_t nbytes = static_cast<std::size_t>(t.numel()) * dtype_size(dtype);
  if (device.is_cpu()) {
    std::memset(t.raw(), 0, nbytes);
  } else {
    std::vector<unsigned char> zeros(nbytes, 0);
    memory::copy_bytes(t.raw(), device, zeros.data(), Device::cpu(), nbytes);
  }
  return t;
}

Tensor Tensor::full(const Shape& shape, float value, Device device) {
  Tensor t = empty(shape, DType::f32, device);
  t.fill_(value);
  return t;
}

Tensor Tensor::from_vector(const Shape& shape, std::span<const float> values) {
  EPOCH_CHECK(static_cast<std::int64_t>(values.size()) == shape_numel(shape),
              "from_vector: ", values.size(), " values for shape ", shape_str(shape));
  Tensor t = empty(shape);
  std::copy(values.begin(), values.end(), t.f32());
  return t;
}

Tensor Tensor::from_vector(const Shape& shape, std::initializer_list<float> values) {
  return from_vector(shape, std::span<const float>(values.begin(), values.size()));
}

Tensor Tensor::from_ints(const Shape& shape, std::span<const std::int32_t> values) {
  EPOCH_CHECK(static_cast<std::int64_t>(values.size()) == shape_numel(shape),
              "from_ints: ", values.size(), " values for shape ", shape_str(shape));
  Tensor t = empty(shape, DType::i32);
  std::copy(values.begin(), values.end(), t.data<std::int32_t>());
  return t;
}

Tensor Tensor::scalar(float value) { return from_vector({}, {value}); }

std::int64_t Tensor::size(std::int64_t d) const {
  const std::int64_t n = ndim();
  if (d < 0) d += n;
  EPOCH_CHECK(d >= 0 && d < n, "dimension ", d, " out of range for shape ", shape_str(shape_));
  return shape_[static_cast<std::size_t>(d)];
}

bool Tensor::is_contiguous() const {
  return channel_block_ == 0 && strides_ == contiguous_strides(shape_);
}

void* Tensor::unchecked_raw() const {
  EPOCH_CHECK(defined(), "raw() of an undefined tensor");
  return static_cast<char*>(storage_->data()) +
         offset_ * static_cast<std::int64_t>(dtype_size(dtype_));
}

void* Tensor::raw() const {
  EPOCH_CHECK(channel_block_ == 0, "raw() of a channel-blocked tensor ", shape_str(shape_),
              " (call contiguous() first)");
  return unchecked_raw();
}

float* Tensor::blocked_f32() const {
  EPOCH_CHECK(channel_block_ != 0, "blocked_f32() of a row-major tensor ", shape_str(shape_));
  return static_cast<float*>(unchecked_raw());
}

Tensor Tensor::empty_blocked(const Shape& shape, std::int64_t block) {
  EPOCH_CHECK(shape.size() == 4, "a channel-blocked tensor is (N, C, H, W), got ",
              shape_str(shape));
  EPOCH_CHECK((block == 8 || block == 16) && shape[1] % block == 0, "channel block ", block,
              " does not divide the channels of ", shape_str(shape));
  Tensor t = empty(shape, DType::f32, Device::cpu());
  t.channel_block_ = block;
  return t;
}

namespace {
// Copies (N, C, H, W) between row-major and channel-blocked (N, C/b, H, W, b) order.
void reorder_channels(const float* src, std::int64_t src_block, float* dst, std::int64_t dst_block,
                      const Shape& s) {
  const std::int64_t N = s[0], C = s[1], HW = s[2] * s[3];
  auto at = [&](std::int64_t block, std::int64_t n, std::int64_t c, std::int64_t p) {
    if (block == 0) return (n * C + c) * HW + p;
    return ((n * (C / block) + c / block) * HW + p) * block + c % block;
  };
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t c = 0; c < C; ++c)
      for (std::int64_t p = 0; p < HW; ++p)
        dst[at(dst_block, n, c, p)] = src[at(src_block, n, c, p)];
}
}  // namespace

Tensor Tensor::to_channel_block(std::int64_t block) const {
  EPOCH_CHECK(dtype_ == DType::f32 && device().is_cpu(),
              "to_channel_block: only CPU f32 tensors are channel-blocked");
  if (block == channel_block_ && (block != 0 || is_contiguous())) return *this;
  const Tensor src = channel_block_ != 0 ? *this : contiguous();
  Tensor out = block == 0 ? empty(shape_, DType::f32, Device::cpu()) : empty_blocked(shape_, block);
  reorder_channels(static_cast<const float*>(src.unchecked_raw()), channel_block_,
                   static_cast<float*>(out.unchecked_raw()), block, shape_);
  return out;
}

float Tensor::item() const {
  EPOCH_CHECK(numel() == 1, "item() needs one element, shape is ", shape_str(shape_));
  return to_vector()[0];
}

std::vector<float> Tensor::to_vector() const {
  const Tensor c = contiguous().to(Device::cpu());
  std::vector<float> out(static_cast<std::size_t>(c.numel()));
  switch (c.dtype_) {
    case DType::f32:
      std::copy_n(c.data<float>(), out.size(), out.begin());
      break;
    case DType::i32:
      std::copy_n(c.data<std::int32_t>(), out.size(), out.begin());
      break;
    case DType::u8:
      std::copy_n(c.data<std::uint8_t>(), out.size(), out.begin());
      break;
  }
  return out;
}

Tensor Tensor::view(const Shape& shape) const {
  EPOCH_CHECK(is_contiguous(), "view() of a non-contiguous tensor ", shape_str(shape_));
  Shape resolved = shape;
  std::int64_t known = 1;
  int infer = -1;
  for (std::size_t i = 0; i < resolved.size(); ++i) {
    if (resolved[i] == -1) {
      EPOCH_CHECK(infer < 0, "view(): more than one -1 in ", shape_str(shape));
      infer = static_cast<int>(i);
    } else {
      known *= resolved[i];
    }
  }
  if (infer >= 0) {
    EPOCH_CHECK(known > 0 && numel() % known == 0, "view(): cannot infer -1 in ", shape_str(shape),
                " from ", shape_str(shape_));
    resolved[static_cast<std::size_t>(infer)] = numel() / known;
  }
  EPOCH_CHECK(shape_numel(resolved) == numel(), "view(): shape ", shape_str(shape),
              " does not match ", numel(), " elements of ", shape_str(shape_));
  Tensor t = *this;
  t.meta_.reset();
  t.shape_ = resolved;
  t.strides_ = contiguous_strides(resolved);
  return t;
}

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  if (channel_block_ != 0) return to_channel_block(0);
  EPOCH_CHECK(device().is_cpu(), "contiguous() of a strided CUDA tensor is not supported");
  Tensor out = empty(shape_, dtype_, device());
  const std::size_t esize = dtype_size(dtype_);
  const auto* src = static_cast<const char*>(raw());
  auto* dst = static_cast<char*>(out.raw());
  const std::int64_t n = numel();
  const std::size_t nd = shape_.size();
  std::vector<std::int64_t> index(nd, 0);
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t src_off = 0;
    for (std::size_t d = 0; d < nd; ++d) src_off += index[d] * strides_[d];
    std::memcpy(dst + i * static_cast<std::int64_t>(esize),
                src + src_off * static_cast<std::int64_t>(esize), esize);
    for (std::size_t d = nd; d-- > 0;) {
      if (++index[d] < shape_[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

Tensor Tensor::clone() const {
  const Tensor src = contiguous();
  Tensor out = empty(shape_, dtype_, device());
  memory::copy_bytes(out.raw(), out.device(), src.raw(), src.device(),
                     static_cast<std::size_t>(numel()) * dtype_size(dtype_));
  return out;
}

Tensor Tensor::to(Device device) const {
  if (device == this->device()) return *this;
  const Tensor src = contiguous();
  Tensor out = empty(shape_, dtype_, device);
  memory::copy_bytes(out.raw(), device, src.raw(), src.device(),
                     static_cast<std::size_t>(numel()) * dtype_size(dtype_));
  return out;
}

Tensor Tensor::narrow0(std::int64_t start, std::int64_t length) const {
  EPOCH_CHECK(ndim() >= 1, "narrow0() of a scalar");
  EPOCH_CHECK(start >= 0 && length >= 0 && start + length <= shape_[0], "narrow0(", start, ", ",
              length, ") out of range for shape ", shape_str(shape_));
  Tensor t = *this;
  t.meta_.reset();
  t.offset_ += start * strides_[0];
  t.shape_[0] = length;
  return t;
}

void Tensor::copy_from(const Tensor& src) {
  EPOCH_CHECK(src.shape() == shape_ && src.dtype() == dtype_, "copy_from: ", shape_str(src.shape()),
              " ", dtype_name(src.dtype()), " into ", shape_str(shape_), " ", dtype_name(dtype_));
  EPOCH_CHECK(is_contiguous(), "copy_from into a non-contiguous tensor");
  const Tensor s = src.contiguous();
  memory::copy_bytes(raw(), device(), s.raw(), s.device(),
                     static_cast<std::size_t>(numel()) * dtype_size(dtype_));
}

void Tensor::fill_(float value) {
  EPOCH_CHECK(dtype_ == DType::f32 && is_contiguous(), "fill_ needs a contiguous f32 tensor");
  if (device().is_cpu()) {
    std::fill_n(f32(), numel(), value);
  } else {
    std::vector<float> host(static_cast<std::size_t>(numel()), value);
    memory::copy_bytes(raw(), device(), host.data(), Device::cpu(), host.size() * sizeof(float));
  }
}

namespace {
/// The f32 tensor as contiguous CPU memory (a copy only when needed).
Tensor cpu_f32(const Tensor& t) {
  Tensor c = t.device().is_cpu() ? t : t.to(Device::cpu());
  return c.is_contiguous() ? c : c.contiguous();
}
}  // namespace

std::int64_t count_non_finite(const Tensor& t) {
  if (!t.defined() || t.dtype() != DType::f32) return 0;
  const Tensor c = cpu_f32(t);
  const float* p = c.f32();
  std::int64_t n = 0;
  for (std::int64_t i = 0; i < c.numel(); ++i) n += std::isfinite(p[i]) ? 0 : 1;
  return n;
}

std::int64_t count_negative(const Tensor& t) {
  if (!t.defined() || t.dtype() != DType::f32) return 0;
  const Tensor c = cpu_f32(t);
  const float* p = c.f32();
  std::int64_t n = 0;
  for (std::int64_t i = 0; i < c.numel(); ++i) n += p[i] < 0.0f ? 1 : 0;
  return n;
}

}  // namespace epoch
