// NCCL gradient averaging on a communication stream (see nccl_averager.h).
#include "epoch/dist/nccl_averager.h"

#include <algorithm>
#include <string>
#include <vector>

#include "epoch/tensor/error.h"

#if EPOCH_WITH_NCCL
#include <cuda_runtime.h>
#include <nccl.h>
#endif

namespace epoch::dist {

#if EPOCH_WITH_NCCL

namespace {

void check_cuda(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    EPOCH_THROW(BackendError, "NCCL all-reduce: ", what, ": ", cudaGetErrorString(status));
}

void check_nccl(ncclResult_t status, const char* what) {
  if (status != ncclSuccess)
    EPOCH_THROW(BackendError, "NCCL: ", what, ": ", ncclGetErrorString(status));
}

}  // namespace

struct NcclAverager::State {
  int device = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t queued = nullptr;  // the default stream's work before a bucket
  std::vector<std::pair<cudaEvent_t, cudaEvent_t>> timing;  // per bucket: start, end
  std::size_t used = 0;                                     // buckets of this step
  std::int64_t bytes = 0;

  std::pair<cudaEvent_t, cudaEvent_t>& next_timing() {
    if (used == timing.size()) {
      std::pair<cudaEvent_t, cudaEvent_t> e;
      check_cuda(cudaEventCreate(&e.first), "cudaEventCreate");
      check_cuda(cudaEventCreate(&e.second), "cudaEventCreate");
      timing.push_back(e);
    }
    return timing[used++];
  }
};

bool nccl_available() { return true; }

std::string nccl_version() {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "NCCL";
  // NCCL_VERSION(X, Y, Z) is X * 10000 + Y * 100 + Z from 2.9 on.
  return "NCCL " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
         std::to_string(v % 100);
}

NcclAverager::NcclAverager(ProcessGroup& group, int device) : state_(std::make_unique<State>()) {
  state_->device = device;
  check_cuda(cudaSetDevice(device), "cudaSetDevice");
  ncclUniqueId id{};
  if (group.rank() == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  group.broadcast(&id, sizeof id);
  check_nccl(ncclCommInitRank(&state_->comm, group.size(), id, group.rank()), "ncclCommInitRank");
  check_cuda(cudaStreamCreateWithFlags(&state_->stream, cudaStreamNonBlocking),
             "cudaStreamCreateWithFlags");
  check_cuda(cudaEventCreateWithFlags(&state_->queued, cudaEventDisableTiming), "cudaEventCreate");
}

NcclAverager::~NcclAverager() {
  if (!state_) return;
  cudaSetDevice(state_->device);
  if (state_->stream) cudaStreamSynchronize(state_->stream);
  for (auto& [start, end] : state_->timing) {
    cudaEventDestroy(start);
    cudaEventDestroy(end);
  }
  if (state_->queued) cudaEventDestroy(state_->queued);
  if (state_->stream) cudaStreamDestroy(state_->stream);
  if (state_->comm) ncclCommDestroy(state_->comm);
}

void NcclAverager::add(float* device_data, std::int64_t n, float weight) {
  State& s = *state_;
  // After whatever backward has queued so far (the bucket's gradients among it).
  check_cuda(cudaEventRecord(s.queued, cudaStreamLegacy), "cudaEventRecord");
  check_cuda(cudaStreamWaitEvent(s.stream, s.queued, 0), "cudaStreamWaitEvent");
  auto& [start, end] = s.next_timing();
  check_cuda(cudaEventRecord(start, s.stream), "cudaEventRecord");
  ncclRedOp_t op;
  check_nccl(ncclRedOpCreatePreMulSum(&op, &weight, ncclFloat, ncclScalarHostImmediate, s.comm),
             "ncclRedOpCreatePreMulSum");
  const ncclResult_t status = ncclAllReduce(device_data, device_data, static_cast<std::size_t>(n),
                                            ncclFloat, op, s.comm, s.stream);
  ncclRedOpDestroy(op, s.comm);  // allowed once the call that took it has returned
  check_nccl(status, "ncclAllReduce");
  check_cuda(cudaEventRecord(end, s.stream), "cudaEventRecord");
  s.bytes += n * static_cast<std::int64_t>(sizeof(float));
}

CommTimes NcclAverager::finish() {
  State& s = *state_;
  CommTimes t;
  t.bytes = s.bytes;
  if (s.used == 0) return t;
  cudaEvent_t compute_done = nullptr;
  check_cuda(cudaEventCreate(&compute_done), "cudaEventCreate");
  check_cuda(cudaEventRecord(compute_done, cudaStreamLegacy), "cudaEventRecord");
  const cudaEvent_t last = s.timing[s.used - 1].second;
  check_cuda(cudaEventSynchronize(last), "the all-reduces");
  check_cuda(cudaEventSynchronize(compute_done), "backward");
  float ms = 0.0f;
  for (std::size_t i = 0; i < s.used; ++i) {
    check_cuda(cudaEventElapsedTime(&ms, s.timing[i].first, s.timing[i].second),
               "cudaEventElapsedTime");
    t.busy_s += ms / 1000.0;
  }
  check_cuda(cudaEventElapsedTime(&ms, compute_done, last), "cudaEventElapsedTime");
  t.exposed_s = std::max(0.0, static_cast<double>(ms) / 1000.0);
  cudaEventDestroy(compute_done);
  s.used = 0;
  s.bytes = 0;
  return t;
}

#else  // built without NCCL

struct NcclAverager::State {};

bool nccl_available() { return false; }
std::string nccl_version() { return ""; }

NcclAverager::NcclAverager(ProcessGroup&, int) {
  EPOCH_THROW(ConfigError, "CUDA gradients across ranks need NCCL: this build has none");
}
NcclAverager::~NcclAverager() = default;
void NcclAverager::add(float*, std::int64_t, float) {}
CommTimes NcclAverager::finish() { return {}; }

#endif

}  // namespace epoch::dist
