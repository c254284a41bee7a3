// Per-device cuDNN handles and the descriptor owners (see cudnn_context.h).
#include "cuda/cudnn_context.h"

#include <climits>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cuda/check_cuda.h"
#include "cuda/conv2d_cudnn.h"

namespace epoch::cuda {
namespace {

int to_int(std::int64_t v, const char* what) {
  if (v < 0 || v > INT_MAX)
    EPOCH_THROW(InvalidArgument, "cuDNN: ", what, " = ", v, " does not fit an int");
  return static_cast<int>(v);
}

}  // namespace

std::string cudnn::library_version() {
  // cudnnGetVersion: major * 10000 + minor * 100 + patch from cuDNN 9 on.
  const std::size_t v = cudnnGetVersion();
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
         std::to_string(v % 100);
}

cudnnHandle_t cudnn_handle() {
  // Never destroyed: cudnnDestroy during static destruction may run after the CUDA runtime
  // has shut down. The driver reclaims the handles when the process ends.
  static auto* handles = new std::vector<std::unique_ptr<CudnnHandle>>();
  static auto* mutex = new std::mutex();
  int device = 0;
  EPOCH_CUDA_CHECK(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(*mutex);
  if (static_cast<std::size_t>(device) >= handles->size())
    handles->resize(static_cast<std::size_t>(device) + 1);
  auto& h = (*handles)[static_cast<std::size_t>(device)];
  if (!h) h = std::make_unique<CudnnHandle>();
  return h->get();
}

TensorDescriptor::TensorDescriptor(std::int64_t n, std::int64_t c, std::int64_t h,
                                   std::int64_t w) {
  const int in = to_int(n, "N"), ic = to_int(c, "C"), ih = to_int(h, "H"), iw = to_int(w, "W");
  EPOCH_CUDNN_CHECK(cudnnCreateTensorDescriptor(&desc_));
  const cudnnStatus_t status =
      cudnnSetTensor4dDescriptor(desc_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, in, ic, ih, iw);
  if (status != CUDNN_STATUS_SUCCESS) {
    cudnnDestroyTensorDescriptor(desc_);
    EPOCH_CUDNN_CHECK(status);
  }
}

FilterDescriptor::FilterDescriptor(std::int64_t k, std::int64_t c, std::int64_t h,
                                   std::int64_t w) {
  const int ik = to_int(k, "OC"), ic = to_int(c, "C/groups"), ih = to_int(h, "KH"),
            iw = to_int(w, "KW");
  EPOCH_CUDNN_CHECK(cudnnCreateFilterDescriptor(&desc_));
  const cudnnStatus_t status =
      cudnnSetFilter4dDescriptor(desc_, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, ik, ic, ih, iw);
  if (status != CUDNN_STATUS_SUCCESS) {
    cudnnDestroyFilterDescriptor(desc_);
    EPOCH_CUDNN_CHECK(status);
  }
}

ConvolutionDescriptor::ConvolutionDescriptor(std::int64_t pad_h, std::int64_t pad_w,
                                             std::int64_t stride_h, std::int64_t stride_w,
                                             std::int64_t dilation_h, std::int64_t dilation_w,
                                             std::int64_t groups) {
  const int ph = to_int(pad_h, "pad_h"), pw = to_int(pad_w, "pad_w");
  const int sh = to_int(stride_h, "stride_h"), sw = to_int(stride_w, "stride_w");
  const int dh = to_int(dilation_h, "dilation_h"), dw = to_int(dilation_w, "dilation_w");
  const int g = to_int(groups, "groups");
  EPOCH_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&desc_));
  cudnnStatus_t status = cudnnSetConvolution2dDescriptor(
      desc_, ph, pw, sh, sw, dh, dw, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT);
  if (status == CUDNN_STATUS_SUCCESS) status = cudnnSetConvolutionGroupCount(desc_, g);
  // FMA only: CUDNN_DEFAULT_MATH lets FP32 convolutions run in TF32 on Ampere and later.
  if (status == CUDNN_STATUS_SUCCESS) status = cudnnSetConvolutionMathType(desc_, CUDNN_FMA_MATH);
  if (status != CUDNN_STATUS_SUCCESS) {
    cudnnDestroyConvolutionDescriptor(desc_);
    EPOCH_CUDNN_CHECK(status);
  }
}

}  // namespace epoch::cuda
