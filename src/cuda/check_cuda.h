// Error checks after every CUDA runtime call and kernel launch: a failure throws
// epoch::BackendError naming the call and file:line.
#pragma once

#include <cuda_runtime.h>

#include "epoch/tensor/error.h"

#define EPOCH_CUDA_CHECK(call)                                                        \
  do {                                                                                \
    const cudaError_t epoch_status_ = (call);                                         \
    if (epoch_status_ != cudaSuccess)                                                 \
      EPOCH_THROW(::epoch::BackendError, #call ": ", cudaGetErrorString(epoch_status_)); \
  } while (0)

/// Checks the last kernel launch.
#define EPOCH_CUDA_CHECK_LAUNCH() EPOCH_CUDA_CHECK(cudaGetLastError())

namespace epoch::cuda {
/// Blocks for a 1-D launch over n elements with 256 threads each (capped for grid-stride loops).
inline unsigned int blocks_for(long long n) {
  const long long b = (n + 255) / 256;
  return static_cast<unsigned int>(b < 1 ? 1 : (b > 65535LL * 8 ? 65535LL * 8 : b));
}
}  // namespace epoch::cuda
