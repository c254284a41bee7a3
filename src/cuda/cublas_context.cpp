// Lazily created per-device cuBLAS handles (see cublas_context.h).
#include "cuda/cublas_context.h"

#include <memory>
#include <mutex>
#include <vector>

#include "cuda/check_cuda.h"

namespace epoch::cuda {

CublasHandle::CublasHandle() {
  EPOCH_CUBLAS_CHECK(cublasCreate(&handle_));
  // Plain FP32 (no TF32 tensor cores): the CPU comparison and the determinism levels rely on it.
  const cublasStatus_t status = cublasSetMathMode(handle_, CUBLAS_DEFAULT_MATH);
  if (status != CUBLAS_STATUS_SUCCESS) {
    cublasDestroy(handle_);
    EPOCH_CUBLAS_CHECK(status);
  }
}

CublasHandle::~CublasHandle() {
  if (handle_ != nullptr) cublasDestroy(handle_);
}

cublasHandle_t cublas_handle() {
  // Never destroyed: cublasDestroy during static destruction may run after the CUDA runtime
  // has shut down. The driver reclaims the handles when the process ends.
  static auto* handles = new std::vector<std::unique_ptr<CublasHandle>>();
  static auto* mutex = new std::mutex();
  int device = 0;
  EPOCH_CUDA_CHECK(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(*mutex);
  if (static_cast<std::size_t>(device) >= handles->size())
    handles->resize(static_cast<std::size_t>(device) + 1);
  auto& h = (*handles)[static_cast<std::size_t>(device)];
  if (!h) h = std::make_unique<CublasHandle>();
  return h->get();
}

}  // namespace epoch::cuda
