// Losses: argument checks (shapes, dtypes, label range), then dispatch by device.
#include "epoch/ops/loss.h"

#include "cpu/loss_cpu.h"
#include "ops/dispatch.h"

#if EPOCH_WITH_CUDA
#include "cuda/loss_cuda.h"
#endif

namespace epoch::ops {
namespace {

// logits (N, K) f32 with N, K >= 1.
void check_logits(const char* op, const char* name, const Tensor& logits) {
  check_f32(op, name, logits);
  EPOCH_CHECK(logits.ndim() == 2 && logits.size(0) >= 1 && logits.size(1) >= 1, op, ": ", name,
              " must be (N, K) with N, K >= 1, got ", shape_str(logits.shape()));
}

// labels (N) i32, every value in [0, K). Reads the labels on the host (a CUDA tensor is copied).
void check_labels(const char* op, const Tensor& labels, std::int64_t N, std::int64_t K) {
  EPOCH_CHECK(labels.defined(), op, ": labels are undefined");
  EPOCH_CHECK(labels.dtype() == DType::i32, op, ": labels must be i32, got ",
              dtype_name(labels.dtype()));
  EPOCH_CHECK(labels.ndim() == 1 && labels.size(0) == N, op, ": labels must be (", N,
              ",) to match the batch, got ", shape_str(labels.shape()));
  const Tensor host = labels.contiguous().to(Device::cpu());
  const std::int32_t* l = host.data<std::int32_t>();
  for (std::int64_t i = 0; i < N; ++i)
    EPOCH_CHECK(l[i] >= 0 && l[i] < K, op, ": label ", l[i], " at index ", i, " is outside [0, ", K,
                ")");
}

// x and target: f32, same non-empty shape, same device (returned).
Device check_pair(const char* op, const char* x_name, const Tensor& x, const Tensor& target) {
  check_f32(op, x_name, x);
  check_f32(op, "target", target);
  EPOCH_CHECK(x.shape() == target.shape(), op, ": ", x_name, " ", shape_str(x.shape()),
              " and target ", shape_str(target.shape()), " differ in shape");
  EPOCH_CHECK(x.numel() > 0, op, ": the mean of an empty ", x_name, " is undefined");
  return common_device(op, x, target);
}

}  // namespace

SoftmaxCrossEntropyResult softmax_cross_entropy_forward(const Tensor& logits_in,
                                                        const Tensor& labels_in) {
  const char* op = "softmax_cross_entropy_forward";
  check_logits(op, "logits", logits_in);
  const std::int64_t N = logits_in.size(0), K = logits_in.size(1);
  check_labels(op, labels_in, N, K);
  const Device d = common_device(op, logits_in, labels_in);
  const Tensor logits = logits_in.contiguous(), labels = labels_in.contiguous();
  SoftmaxCrossEntropyResult r;
  r.probs = Tensor::empty({N, K}, DType::f32, d);
  const std::int32_t* l = labels.data<std::int32_t>();
  dispatch(op, d, {
    .cpu =
        [&] {
          r.loss = Tensor::scalar(static_cast<float>(
              cpu::softmax_cross_entropy_forward(logits.f32(), l, r.probs.f32(), N, K)));
        },
#if EPOCH_WITH_CUDA
    .cuda = [&] {
      r.loss = Tensor::empty({}, DType::f32, d);  // stays on the device
      cuda::softmax_cross_entropy_forward(logits.f32(), l, r.probs.f32(), r.loss.f32(), N, K);
    },
#endif
  });
  return r;
}

Tensor softmax_cross_entropy_backward(float dloss, const Tensor& probs_in,
                                      const Tensor& labels_in) {
  const char* op = "softmax_cross_entropy_backward";
  check_logits(op, "probs", probs_in);
  const std::int64_t N = probs_in.size(0), K = probs_in.size(1);
  check_labels(op, labels_in, N, K);
  const Device d = common_device(op, probs_in, labels_in);
  const Tensor probs = probs_in.contiguous(), labels = labels_in.contiguous();
  Tensor dlogits = Tensor::empty({N, K}, DType::f32, d);
  const std::int32_t* l = labels.data<std::int32_t>();
  dispatch(op, d, {
    .cpu = [&] { cpu::softmax_cross_entropy_backward(dloss, probs.f32(), l, dlogits.f32(), N, K); },
#if EPOCH_WITH_CUDA
    .cuda = [&] {
      cuda::softmax_cross_entropy_backward(dloss, probs.f32(), l, dlogits.f32(), N, K);
    },
#endif
  });
  return dlogits;
}

Tensor bce_with_logits_forward(const Tensor& logits_in, const Tensor& targets_in) {
  const char* op = "bce_with_logits_forward";
  const Device d = check_pair(op, "logits", logits_in, targets_in);
  const Tensor x = logits_in.contiguous(), t = targets_in.contiguous();
  Tensor loss;
  dispatch(op, d, {
    .cpu =
        [&] {
          loss = Tensor::scalar(
              static_cast<float>(cpu::bce_with_logits_forward(x.f32(), t.f32(), x.numel())));
        },
#if EPOCH_WITH_CUDA
    .cuda = [&] {
      loss = Tensor::empty({}, DType::f32, d);  // stays on the device
      cuda::bce_with_logits_forward(x.f32(), t.f32(), loss.f32(), x.numel());
    },
#endif
  });
  return loss;
}

Tensor bce_with_logits_backward(float dloss, const Tensor& logits_in, const Tensor& targets_in) {
  const char* op = "bce_with_logits_backward";
  const Device d = check_pair(op, "logits", logits_in, targets_in);
  const Tensor x = logits_in.contiguous(), t = targets_in.contiguous();
  Tensor dx = Tensor::empty(x.shape(), DType::f32, d);
  dispatch(op, d, {
    .cpu = [&] { cpu::bce_with_logits_backward(dloss, x.f32(), t.f32(), dx.f32(), x.numel()); },
#if EPOCH_WITH_CUDA
    .cuda = [&] { cuda::bce_with_logits_backward(dloss, x.f32(), t.f32(), dx.f32(), x.numel()); },
#endif
  });
  return dx;
}

Tensor mse_forward(const Tensor& x_in, const Tensor& target_in) {
  const char* op = "mse_forward";
  const Device d = check_pair(op, "x", x_in, target_in);
  const Tensor x = x_in.contiguous(), t = target_in.contiguous();
  Tensor loss;
  dispatch(op, d, {
    .cpu =
        [&] {
          loss = Tensor::scalar(static_cast<float>(cpu::mse_forward(x.f32(), t.f32(), x.numel())));
        },
#if EPOCH_WITH_CUDA
    .cuda = [&] {
      loss = Tensor::empty({}, DType::f32, d);  // stays on the device
      cuda::mse_forward(x.f32(), t.f32(), loss.f32(), x.numel());
    },
#endif
  });
  return loss;
}

Tensor mse_backward(float dloss, const Tensor& x_in, const Tensor& target_in) {
  const char* op = "mse_backward";
  const Device d = check_pair(op, "x", x_in, target_in);
  const Tensor x = x_in.contiguous(), t = target_in.contiguous();
  Tensor dx = Tensor::empty(x.shape(), DType::f32, d);
  dispatch(op, d, {
    .cpu = [&] { cpu::mse_backward(dloss, x.f32(), t.f32(), dx.f32(), x.numel()); },
#if EPOCH_WITH_CUDA
    .cuda = [&] { cuda::mse_backward(dloss, x.f32(), t.f32(), dx.f32(), x.numel()); },
#endif
  });
  return dx;
}

Tensor l1_forward(const Tensor& x_in, const Tensor& target_in) {
  const char* op = "l1_forward";
  const Device d = check_pair(op, "x", x_in, target_in);
  const Tensor x = x_in.contiguous(), t = target_in.contiguous();
  Tensor loss;
  dispatch(op, d, {
    .cpu =
        [&] {
          loss = Tensor::scalar(static_cast<float>(cpu::l1_forward(x.f32(), t.f32(), x.numel())));
        },
#if EPOCH_WITH_CUDA
    .cuda = [&] {
      loss = Tensor::empty({}, DType::f32, d);  // stays on the device
      cuda::l1_forward(x.f32(), t.f32(), loss.f32(), x.numel());
    },
#endif
  });
  return loss;
}

Tensor l1_backward(float dloss, const Tensor& x_in, const Tensor& target_in) {
  const char* op = "l1_backward";
  const Device d = check_pair(op, "x", x_in, target_in);
  const Tensor x = x_in.contiguous(), t = target_in.contiguous();
  Tensor dx = Tensor::empty(x.shape(), DType::f32, d);
  dispatch(op, d, {
    .cpu = [&] { cpu::l1_backward(dloss, x.f32(), t.f32(), dx.f32(), x.numel()); },
#if EPOCH_WITH_CUDA
    .cuda = [&] { cuda::l1_backward(dloss, x.f32(), t.f32(), dx.f32(), x.numel()); },
#endif
  });
  return dx;
}

}  // namespace epoch::ops
