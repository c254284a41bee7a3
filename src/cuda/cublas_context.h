// The cuBLAS handle of each device: created lazily on first use, owned by an RAII holder,
// set to plain FP32 math (no TF32) so that results match the CPU reference.
#pragma once

#include <cublas_v2.h>

#include "epoch/tensor/error.h"

#define EPOCH_CUBLAS_CHECK(call)                                                          \
  do {                                                                                    \
    const cublasStatus_t epoch_status_ = (call);                                          \
    if (epoch_status_ != CUBLAS_STATUS_SUCCESS)                                           \
      EPOCH_THROW(::epoch::BackendError, #call ": ", cublasGetStatusName(epoch_status_),  \
                  " (", cublasGetStatusString(epoch_status_), ")");                       \
  } while (0)

namespace epoch::cuda {

/// Owns one cuBLAS handle (cublasCreate on construction, cublasDestroy on destruction).
class CublasHandle {
 public:
  CublasHandle();
  ~CublasHandle();
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  cublasHandle_t get() const { return handle_; }

 private:
  cublasHandle_t handle_ = nullptr;
};

/// The handle of the current device (created on first use; thread-safe). Work goes to the
/// legacy default stream, like every other kernel of the backend.
cublasHandle_t cublas_handle();

}  // namespace epoch::cuda
