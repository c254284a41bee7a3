// Reference activation kernels (see activation_cpu.h): OpenMP SIMD loops over elements,
// softmax parallel over rows with each row reduced serially in a fixed order.
#include "cpu/activation_cpu.h"

#include <algorithm>
#include <cmath>

#include "cpu/vector_exp.h"
#include "kernels/impl_note.h"
// Compiled once per instruction-set level (kernels/isa_target.h): include it last.
#include "kernels/isa_target.h"

namespace epoch::cpu::EPOCH_ISA_NS {

void relu_forward(const float* x, float* y, std::int64_t n) {
#pragma omp parallel for simd schedule(static) if (n > 32768)
  for (std::int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void relu_backward(const float* dy, const float* x, float* dx, std::int64_t n) {
#pragma omp parallel for simd schedule(static) if (n > 32768)
  for (std::int64_t i = 0; i < n; ++i) dx[i] = x[i] > 0.0f ? dy[i] : 0.0f;
}

void sigmoid_forward(const float* x, float* y, std::int64_t n) {
#pragma omp parallel for simd schedule(static) if (n > 32768)
  for (std::int64_t i = 0; i < n; ++i) {
    // e = exp(-|x|) never overflows; sigmoid(x) = 1/(1+e) for x >= 0 and e/(1+e) for x < 0.
    const float e = std::exp(-std::fabs(x[i]));
    const float r = 1.0f / (1.0f + e);
    y[i] = x[i] >= 0.0f ? r : e * r;
  }
}

namespace {
// exp(t) for t <= 0 without a libm call, so the loop vectorizes: t = k ln2 + r (Cody-Waite
// split of ln2), exp(r) by the degree-6 polynomial of Cephes' expf on |r| <= ln2/2, times 2^k
// built in the exponent bits. Relative error below 2e-7; results under 2^-126 flush to 0.
inline float exp_nonpositive(float t_in) {
  const float t = std::max(t_in, -87.0f);
  const float k = std::floor(t * 1.44269504088896341f + 0.5f);
  const float r = (t - k * 0.693359375f) - k * -2.12194440e-4f;
  const float e = exp_reduced(r);
  return t_in < -87.0f ? 0.0f : e * pow2_int(static_cast<std::int32_t>(k));
}
}  // namespace

void sigmoid_forward_fast(const float* x, float* y, std::int64_t n) {
  kernels::note_impl("epoch:sigmoid_vexp");
#pragma omp parallel for simd schedule(static) if (n > 32768)
  for (std::int64_t i = 0; i < n; ++i) {
    const float e = exp_nonpositive(-std::fabs(x[i]));
    const float r = 1.0f / (1.0f + e);
    y[i] = x[i] >= 0.0f ? r : e * r;
  }
}

void sigmoid_backward(const float* dy, const float* y, float* dx, std::int64_t n) {
#pragma omp parallel for simd schedule(static) if (n > 32768)
  for (std::int64_t i = 0; i < n; ++i) dx[i] = dy[i] * y[i] * (1.0f - y[i]);
}

void tanh_forward(const float* x, float* y, std::int64_t n) {
#pragma omp parallel for simd schedule(static) if (n > 32768)
  for (std::int64_t i = 0; i < n; ++i) y[i] = std::tanh(x[i]);
}

void tanh_backward(const float* dy, const float* y, float* dx, std::int64_t n) {
#pragma omp parallel for simd schedule(static) if (n > 32768)
  for (std::int64_t i = 0; i < n; ++i) dx[i] = dy[i] * (1.0f - y[i] * y[i]);
}

void hard_sigmoid_forward(const float* x, float* y, std::int64_t n, float slope, float offset) {
#pragma omp parallel for simd schedule(static) if (n > 32768)
  for (std::int64_t i = 0; i < n; ++i) y[i] = std::min(std::max(slope * x[i] + offset, 0.0f), 1.0f);
}

void hard_sigmoid_backward(const float* dy, const float* x, float* dx, std::int64_t n, float slope,
                           float offset) {
#pragma omp parallel for simd schedule(static) if (n > 32768)
  for (std::int64_t i = 0; i < n; ++i) {
    const float z = slope * x[i] + offset;
    dx[i] = z > 0.0f && z < 1.0f ? dy[i] * slope : 0.0f;
  }
}

void clip_forward(const float* x, float* y, std::int64_t n, float lo, float hi) {
#pragma omp parallel for simd schedule(static) if (n > 32768)
  for (std::int64_t i = 0; i < n; ++i) y[i] = std::min(std::max(x[i], lo), hi);
}

void clip_backward(const float* dy, const float* x, float* dx, std::int64_t n, float lo, float hi) {
#pragma omp parallel for simd schedule(static) if (n > 32768)
  for (std::int64_t i = 0; i < n; ++i) dx[i] = x[i] > lo && x[i] < hi ? dy[i] : 0.0f;
}

void softmax_forward(const float* x, float* y, std::int64_t N, std::int64_t K) {
#pragma omp parallel for schedule(static) if (N * K > 32768)
  for (std::int64_t row = 0; row < N; ++row) {
    const float* xr = x + row * K;  // (K)
    float* yr = y + row * K;        // (K)
    float m = xr[0];
    for (std::int64_t k = 1; k < K; ++k) m = std::max(m, xr[k]);
    double s = 0.0;
    for (std::int64_t k = 0; k < K; ++k) {
      yr[k] = std::exp(xr[k] - m);
      s += yr[k];
    }
    const float inv = static_cast<float>(1.0 / s);
#pragma omp simd
    for (std::int64_t k = 0; k < K; ++k) yr[k] *= inv;
  }
}

}  // namespace epoch::cpu::EPOCH_ISA_NS

#if EPOCH_ISA_LEVEL == 0
namespace epoch::cpu {
EPOCH_ISA_KERNEL(relu_forward);
EPOCH_ISA_KERNEL(relu_backward);
EPOCH_ISA_KERNEL(sigmoid_forward);
EPOCH_ISA_KERNEL(sigmoid_forward_fast);
EPOCH_ISA_KERNEL(sigmoid_backward);
EPOCH_ISA_KERNEL(tanh_forward);
EPOCH_ISA_KERNEL(tanh_backward);
EPOCH_ISA_KERNEL(hard_sigmoid_forward);
EPOCH_ISA_KERNEL(hard_sigmoid_backward);
EPOCH_ISA_KERNEL(clip_forward);
EPOCH_ISA_KERNEL(clip_backward);
EPOCH_ISA_KERNEL(softmax_forward);
}  // namespace epoch::cpu
#endif
