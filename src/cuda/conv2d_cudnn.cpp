// cuDNN convolution (see conv2d_cudnn.h). The algorithm of each direction comes from the
// cuDNN heuristics (no timing runs, so the choice itself never varies), keeping only
// deterministic, non-tensor-op algorithms; choices are cached per device and shape.
#include "cuda/conv2d_cudnn.h"

#include <array>
#include <cstddef>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "cuda/check_cuda.h"
#include "cuda/cudnn_context.h"
#include "cuda/device_buffer.h"
#include "cuda/linear_cuda.h"

namespace epoch::cuda::cudnn {
namespace {

constexpr std::size_t kMaxWorkspace = std::size_t{512} << 20;

enum class Direction { forward, backward_data, backward_filter };

// One chosen algorithm (as an int: the three directions have different enum types).
struct Choice {
  int algo = 0;
  cudnnMathType_t math = CUDNN_FMA_MATH;
  std::size_t workspace = 0;
};

using Key = std::tuple<int, Direction, std::array<std::int64_t, 16>>;

Key make_key(Direction dir, const kernels::Conv2dDims& d) {
  int device = 0;
  EPOCH_CUDA_CHECK(cudaGetDevice(&device));
  return {device, dir, {d.N, d.C, d.H, d.W, d.OC, d.KH, d.KW, d.OH, d.OW, d.stride_h, d.stride_w,
                        d.pad_h, d.pad_w, d.dilation_h, d.dilation_w, d.groups}};
}

// Picks the first usable heuristic result: succeeded, deterministic, FMA (or default) math,
// workspace within the cap. FMA results are preferred over default-math ones.
template <typename Perf>
bool pick(const std::vector<Perf>& perf, int count, Choice* out) {
  for (int pass = 0; pass < 2; ++pass) {
    const cudnnMathType_t wanted = pass == 0 ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH;
    for (int i = 0; i < count; ++i) {
      const Perf& p = perf[static_cast<std::size_t>(i)];
      if (p.status != CUDNN_STATUS_SUCCESS || p.determinism != CUDNN_DETERMINISTIC) continue;
      if (p.mathType != wanted || p.memory > kMaxWorkspace) continue;
      out->algo = static_cast<int>(p.algo);
      out->math = p.mathType;
      out->workspace = p.memory;
      return true;
    }
  }
  return false;
}

struct Descriptors {
  TensorDescriptor x, y;
  FilterDescriptor w;
  ConvolutionDescriptor conv;
  explicit Descriptors(const kernels::Conv2dDims& d)
      : x(d.N, d.C, d.H, d.W),
        y(d.N, d.OC, d.OH, d.OW),
        w(d.OC, d.C / d.groups, d.KH, d.KW),
        conv(d.pad_h, d.pad_w, d.stride_h, d.stride_w, d.dilation_h, d.dilation_w, d.groups) {}
};

Choice choose_uncached(Direction dir, cudnnHandle_t h, const Descriptors& s) {
  Choice c;
  int max_count = 0, count = 0;
  switch (dir) {
    case Direction::forward: {
      EPOCH_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &max_count));
      std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<std::size_t>(max_count));
      EPOCH_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(
          h, s.x.get(), s.w.get(), s.conv.get(), s.y.get(), max_count, &count, perf.data()));
      if (pick(perf, count, &c)) return c;
      // Implicit GEMM is deterministic and needs no workspace.
      c.algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
      EPOCH_CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(
          h, s.x.get(), s.w.get(), s.conv.get(), s.y.get(),
          static_cast<cudnnConvolutionFwdAlgo_t>(c.algo), &c.workspace));
      return c;
    }
    case Direction::backward_data: {
      EPOCH_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &max_count));
      std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(static_cast<std::size_t>(max_count));
      EPOCH_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
          h, s.w.get(), s.y.get(), s.conv.get(), s.x.get(), max_count, &count, perf.data()));
      if (pick(perf, count, &c)) return c;
      c.algo = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;  // deterministic
      EPOCH_CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(
          h, s.w.get(), s.y.get(), s.conv.get(), s.x.get(),
          static_cast<cudnnConvolutionBwdDataAlgo_t>(c.algo), &c.workspace));
      return c;
    }
    case Direction::backward_filter: {
      EPOCH_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &max_count));
      std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perf(static_cast<std::size_t>(max_count));
      EPOCH_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
          h, s.x.get(), s.y.get(), s.conv.get(), s.w.get(), max_count, &count, perf.data()));
      if (pick(perf, count, &c)) return c;
      c.algo = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1;  // deterministic
      EPOCH_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(
          h, s.x.get(), s.y.get(), s.conv.get(), s.w.get(),
          static_cast<cudnnConvolutionBwdFilterAlgo_t>(c.algo), &c.workspace));
      return c;
    }
  }
  return c;
}

// The cached choice for this direction, device and shape; sets the descriptor's math type.
Choice choose(Direction dir, const kernels::Conv2dDims& d, cudnnHandle_t h, const Descriptors& s) {
  static auto* cache = new std::map<Key, Choice>();  // never destroyed, like the handles
  static auto* mutex = new std::mutex();
  const Key key = make_key(dir, d);
  Choice c;
  bool found = false;
  {
    std::lock_guard<std::mutex> lock(*mutex);
    auto it = cache->find(key);
    if (it != cache->end()) {
      c = it->second;
      found = true;
    }
  }
  if (!found) {
    c = choose_uncached(dir, h, s);
    std::lock_guard<std::mutex> lock(*mutex);
    cache->emplace(key, c);
  }
  EPOCH_CUDNN_CHECK(cudnnSetConvolutionMathType(s.conv.get(), c.math));
  return c;
}

}  // namespace

void conv2d_forward(const kernels::Conv2dDims& d, const float* x, const float* w, const float* b,
                    float* y) {
  if (d.N == 0 || d.OC == 0) return;
  cudnnHandle_t h = cudnn_handle();
  const Descriptors s(d);
  const Choice c = choose(Direction::forward, d, h, s);
  DeviceBuffer workspace(c.workspace);
  const float one = 1.0f, zero = 0.0f;
  EPOCH_CUDNN_CHECK(cudnnConvolutionForward(
      h, &one, s.x.get(), x, s.w.get(), w, s.conv.get(),
      static_cast<cudnnConvolutionFwdAlgo_t>(c.algo), workspace.get(), c.workspace, &zero,
      s.y.get(), y));
  if (b != nullptr) bias_add_forward(y, b, y, d.N, d.OC, d.OH * d.OW);
}

void conv2d_backward(const kernels::Conv2dDims& d, const float* dy, const float* x, const float* w,
                     float* dx, float* dw, float* db) {
  if (d.N == 0 || d.OC == 0) return;
  cudnnHandle_t h = cudnn_handle();
  const Descriptors s(d);
  const float one = 1.0f, zero = 0.0f;
  if (dx != nullptr) {
    const Choice c = choose(Direction::backward_data, d, h, s);
    DeviceBuffer workspace(c.workspace);
    EPOCH_CUDNN_CHECK(cudnnConvolutionBackwardData(
        h, &one, s.w.get(), w, s.y.get(), dy, s.conv.get(),
        static_cast<cudnnConvolutionBwdDataAlgo_t>(c.algo), workspace.get(), c.workspace, &zero,
        s.x.get(), dx));
  }
  if (dw != nullptr) {
    const Choice c = choose(Direction::backward_filter, d, h, s);
    DeviceBuffer workspace(c.workspace);
    EPOCH_CUDNN_CHECK(cudnnConvolutionBackwardFilter(
        h, &one, s.x.get(), x, s.y.get(), dy, s.conv.get(),
        static_cast<cudnnConvolutionBwdFilterAlgo_t>(c.algo), workspace.get(), c.workspace,
        &zero, s.w.get(), dw));
  }
  if (db != nullptr) bias_add_backward(dy, db, d.N, d.OC, d.OH * d.OW);
}

}  // namespace epoch::cuda::cudnn
