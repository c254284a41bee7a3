// Tensor: a value handle to a shared Storage with a shape, strides and an offset. Copies share
// bytes; clone() copies them. Autograd state (requires_grad, grad, the node that made it) hangs
// off an optional pointer that only the autograd layer reads and writes.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "epoch/tensor/device.h"
#include "epoch/tensor/error.h"
#include "epoch/tensor/storage.h"

namespace epoch {

namespace autograd {
struct Meta;
}

using Shape = std::vector<std::int64_t>;

/// Product of the dimensions (1 for a scalar shape {}).
std::int64_t shape_numel(const Shape& shape);
/// "(2, 3, 4)".
std::string shape_str(const Shape& shape);
/// Row-major strides of a contiguous tensor with this shape.
Shape contiguous_strides(const Shape& shape);

class Tensor {
 public:
  /// An undefined tensor (no storage); defined() is false.
  Tensor() = default;

  /// Uninitialized contents.
  static Tensor empty(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu());
  static Tensor zeros(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu());
  static Tensor full(const Shape& shape, float value, Device device = Device::cpu());
  /// A CPU f32 tensor holding `values` (size must equal the shape's element count).
  static Tensor from_vector(const Shape& shape, std::span<const float> values);
  static Tensor from_vector(const Shape& shape, std::initializer_list<float> values);
  /// A CPU i32 tensor holding `values`.
  static Tensor from_ints(const Shape& shape, std::span<const std::int32_t> values);
  /// A scalar (shape {}) f32 tensor on the CPU.
  static Tensor scalar(float value);
  /// An uninitialized CPU f32 (N, C, H, W) tensor stored channel-blocked: (N, C/block, H, W,
  /// block), oneDNN's nChw8c / nChw16c. requires: block 8 or 16 dividing C.
  static Tensor empty_blocked(const Shape& shape, std::int64_t block);

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }
  std::int64_t ndim() const { return static_cast<std::int64_t>(shape_.size()); }
  /// Size of dimension d (negative d counts from the end).
  std::int64_t size(std::int64_t d) const;
  std::int64_t numel() const { return shape_numel(shape_); }
  DType dtype() const { return dtype_; }
  Device device() const { return storage_ ? storage_->device() : Device::cpu(); }
  std::int64_t offset() const { return offset_; }
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  /// Row-major (and not channel-blocked).
  bool is_contiguous() const;
  /// 0 for the usual row-major layout, else the channel block (8 or 16) of a channel-blocked
  /// tensor: activations that the CPU fast path keeps in oneDNN's layout between layers that
  /// take it (nn::forward_in_order). Only kernels that know the layout read such a tensor's
  /// bytes (blocked_f32()); data(), view() and copies refuse it, and contiguous() returns the
  /// row-major copy every other op works on.
  std::int64_t channel_block() const { return channel_block_; }
  bool is_blocked() const { return channel_block_ != 0; }

  /// Typed pointer to the first element (after the offset); checks the dtype.
  template <typename T>
  T* data() const;
  float* f32() const { return data<float>(); }
  /// Untyped pointer to the first element (row-major tensors; refuses a blocked one).
  void* raw() const;
  /// The f32 elements of a channel-blocked tensor in their stored order.
  float* blocked_f32() const;
  /// This channel-blocked tensor's bytes in another block size (a copy; 0: row-major, as
  /// contiguous()); a row-major tensor reordered into blocks.
  Tensor to_channel_block(std::int64_t block) const;

  /// Value of a one-element CPU f32 tensor.
  float item() const;
  /// A copy of the elements in logical (row-major) order, as floats; CPU or CUDA.
  std::vector<float> to_vector() const;

  /// A view with a new shape (one dimension may be -1); requires a contiguous tensor.
  /// Not differentiable: use ops::reshape in models.
  Tensor view(const Shape& shape) const;
  /// The same bytes, or a contiguous copy when the strides are not row-major.
  Tensor contiguous() const;
  /// A contiguous copy on the same device.
  Tensor clone() const;
  /// A copy on another device (or this tensor when it is already there).
  Tensor to(Device device) const;
  /// Rows [start, start + length) of dimension 0: a view sharing the storage.
  Tensor narrow0(std::int64_t start, std::int64_t length) const;
  /// Copies src (same shape, any device) into this tensor's bytes.
  void copy_from(const Tensor& src);
  /// Sets every element to value (f32 only).
  void fill_(float value);

  // Autograd (implemented in the autograd layer).
  bool requires_grad() const;
  /// Marks a leaf as needing gradients. Returns *this for chaining.
  Tensor& set_requires_grad(bool required);
  /// Accumulated gradient of a leaf (undefined before the first backward).
  Tensor grad() const;
  /// Installs a gradient buffer (e.g. a view into a flat gradient buffer) that backward adds to.
  void set_grad(const Tensor& grad);
  /// Sets the accumulated gradient to zero (keeps the buffer).
  void zero_grad();
  /// Back-propagates from this scalar.
  void backward() const;
  /// Back-propagates with an explicit upstream gradient dy (same shape as this tensor).
  void backward(const Tensor& dy) const;
  /// The same bytes with no autograd history.
  Tensor detach() const;
  const std::shared_ptr<autograd::Meta>& autograd_meta() const { return meta_; }
  void set_autograd_meta(std::shared_ptr<autograd::Meta> meta) { meta_ = std::move(meta); }

 private:
  std::shared_ptr<Storage> storage_;
  Shape shape_;
  Shape strides_;
  std::int64_t offset_ = 0;
  std::int64_t channel_block_ = 0;
  DType dtype_ = DType::f32;
  std::shared_ptr<autograd::Meta> meta_;

  void* unchecked_raw() const;
};

/// Elements of an f32 tensor that are NaN or infinite (0 for other dtypes; any device, copied
/// to the CPU first). Checkpoints are checked with it before they are written and read.
std::int64_t count_non_finite(const Tensor& t);
/// Elements of an f32 tensor below zero (NaN is not counted).
std::int64_t count_negative(const Tensor& t);

template <typename T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() {
  return DType::f32;
}
template <>
constexpr DType dtype_of<std::int32_t>() {
  return DType::i32;
}
template <>
constexpr DType dtype_of<std::uint8_t>() {
  return DType::u8;
}

template <typename T>
T* Tensor::data() const {
  EPOCH_CHECK(defined(), "data() of an undefined tensor");
  EPOCH_CHECK(dtype_ == dtype_of<std::remove_const_t<T>>(), "dtype mismatch: tensor is ",
              dtype_name(dtype_));
  EPOCH_CHECK(channel_block_ == 0, "data() of a channel-blocked tensor ", shape_str(shape_),
              " (an op that does not take the blocked layout must call contiguous() first)");
  return static_cast<T*>(unchecked_raw());
}

}  // namespace epoch
