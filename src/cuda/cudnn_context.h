// The cuDNN handle of each device (created lazily, owned by an RAII holder) and RAII owners of
// the descriptors the convolution needs. Built only when cuDNN is found (EPOCH_WITH_CUDNN).
#pragma once

#include <cudnn.h>

#include <cstdint>

#include "epoch/tensor/error.h"

#define EPOCH_CUDNN_CHECK(call)                                                         \
  do {                                                                                  \
    const cudnnStatus_t epoch_status_ = (call);                                         \
    if (epoch_status_ != CUDNN_STATUS_SUCCESS)                                          \
      EPOCH_THROW(::epoch::BackendError, #call ": ", cudnnGetErrorString(epoch_status_)); \
  } while (0)

namespace epoch::cuda {

/// Owns one cuDNN handle.
class CudnnHandle {
 public:
  CudnnHandle() { EPOCH_CUDNN_CHECK(cudnnCreate(&handle_)); }
  ~CudnnHandle() { cudnnDestroy(handle_); }
  CudnnHandle(const CudnnHandle&) = delete;
  CudnnHandle& operator=(const CudnnHandle&) = delete;
  cudnnHandle_t get() const { return handle_; }

 private:
  cudnnHandle_t handle_ = nullptr;
};

/// The handle of the current device (created on first use; thread-safe); legacy default stream.
cudnnHandle_t cudnn_handle();

/// An NCHW f32 tensor descriptor.
class TensorDescriptor {
 public:
  TensorDescriptor(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w);
  ~TensorDescriptor() { cudnnDestroyTensorDescriptor(desc_); }
  TensorDescriptor(const TensorDescriptor&) = delete;
  TensorDescriptor& operator=(const TensorDescriptor&) = delete;
  cudnnTensorDescriptor_t get() const { return desc_; }

 private:
  cudnnTensorDescriptor_t desc_ = nullptr;
};

/// An (OC, C/groups, KH, KW) f32 filter descriptor.
class FilterDescriptor {
 public:
  FilterDescriptor(std::int64_t k, std::int64_t c, std::int64_t h, std::int64_t w);
  ~FilterDescriptor() { cudnnDestroyFilterDescriptor(desc_); }
  FilterDescriptor(const FilterDescriptor&) = delete;
  FilterDescriptor& operator=(const FilterDescriptor&) = delete;
  cudnnFilterDescriptor_t get() const { return desc_; }

 private:
  cudnnFilterDescriptor_t desc_ = nullptr;
};

/// A 2-D cross-correlation descriptor in FP32 with FMA math only (no TF32), and groups.
class ConvolutionDescriptor {
 public:
  ConvolutionDescriptor(std::int64_t pad_h, std::int64_t pad_w, std::int64_t stride_h,
                        std::int64_t stride_w, std::int64_t dilation_h, std::int64_t dilation_w,
                        std::int64_t groups);
  ~ConvolutionDescriptor() { cudnnDestroyConvolutionDescriptor(desc_); }
  ConvolutionDescriptor(const ConvolutionDescriptor&) = delete;
  ConvolutionDescriptor& operator=(const ConvolutionDescriptor&) = delete;
  cudnnConvolutionDescriptor_t get() const { return desc_; }

 private:
  cudnnConvolutionDescriptor_t desc_ = nullptr;
};

}  // namespace epoch::cuda
