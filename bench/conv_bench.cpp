// Convolution forward + backward for the conv layers of fmnist-cnn and catdog (and one 1x1
// layer) at batch 64, and the 3x3 layers of the ResNets at batch 32: the reference kernels
// against oneDNN in its plain and blocked layouts, and epoch's AVX2 Winograd.
// Reports FLOP/s (2 * N * OC * OH * OW * C/groups * KH * KW per pass; backward counts its
// weight pass and, except for a first layer, its data pass).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "cpu/conv2d_cpu.h"
#include "cpu/conv2d_winograd.h"

#if EPOCH_WITH_ONEDNN
#include "cpu/conv2d_onednn.h"
#endif

namespace {

using epoch::kernels::Conv2dDims;

struct Layer {
  const char* name;
  Conv2dDims d;
  bool need_dx;  // false for a model's first layer
};

Conv2dDims dims(std::int64_t C, std::int64_t H, std::int64_t OC, std::int64_t pad,
                std::int64_t k = 3, std::int64_t n = 64) {
  Conv2dDims d;
  d.N = n, d.C = C, d.H = H, d.W = H, d.OC = OC, d.KH = k, d.KW = k;
  d.pad_h = d.pad_w = pad;
  d.OH = d.OW = H + 2 * pad - (k - 1);
  return d;
}

const std::vector<Layer>& layers() {
  static const std::vector<Layer> l{
      {"fmnist_conv1", dims(1, 28, 32, 1), false},
      {"fmnist_conv2", dims(32, 14, 64, 1), true},
      {"catdog_conv1", dims(3, 64, 32, 0), false},
      {"catdog_conv2", dims(32, 31, 32, 0), true},
      {"pointwise_64_14", dims(64, 14, 64, 0, 1), true},   // a 1x1 layer, for the layout choice
      {"resnet_64_56", dims(64, 56, 64, 1, 3, 32), true},  // the ResNets' 3x3 layers, batch 32
      {"resnet_128_28", dims(128, 28, 128, 1, 3, 32), true},
      {"resnet_256_14", dims(256, 14, 256, 1, 3, 32), true},
      {"resnet_512_7", dims(512, 7, 512, 1, 3, 32), true},
  };
  return l;
}

enum Impl { kReference, kOnednnPlain, kOnednnBlocked, kOnednnAuto, kWinograd };
const char* impl_name(int impl) {
  switch (impl) {
    case kReference:
      return "reference";
    case kOnednnPlain:
      return "onednn_plain";
    case kOnednnBlocked:
      return "onednn_blocked";
    case kWinograd:
      return "epoch_winograd";
    default:
      return "onednn_auto";
  }
}

void fill(std::vector<float>& v, std::uint32_t seed) {
  for (float& f : v) {
    seed = seed * 1664525u + 1013904223u;
    f = static_cast<float>(seed >> 8) / 16777216.0f - 0.5f;
  }
}

void BM_Conv(benchmark::State& state) {
  const Layer& layer = layers()[static_cast<std::size_t>(state.range(0))];
  const int impl = static_cast<int>(state.range(1));
  const bool backward = state.range(2) != 0;
  const Conv2dDims& d = layer.d;
  state.SetLabel(std::string(layer.name) + " " + impl_name(impl) +
                 (backward ? " fwd+bwd" : " fwd"));
  std::vector<float> x(d.N * d.C * d.H * d.W), w(d.OC * d.C * d.KH * d.KW), b(d.OC);
  std::vector<float> y(d.N * d.OC * d.OH * d.OW), dy(y.size()), dx(x.size()), dw(w.size()),
      db(b.size());
  fill(x, 1), fill(w, 2), fill(b, 3), fill(dy, 4);
  float* dxp = layer.need_dx ? dx.data() : nullptr;
  for (auto _ : state) {
    if (impl == kWinograd) {  // 8-channel blocked buffers of the same sizes
      if (!epoch::cpu::conv2d_winograd_supported(d)) {
        state.SkipWithError("epoch's Winograd does not take this layer on this CPU");
        break;
      }
      epoch::cpu::conv2d_winograd_forward(d, x.data(), w.data(), b.data(), y.data(), false);
      if (backward)
        epoch::cpu::conv2d_winograd_backward(d, dy.data(), x.data(), w.data(), dxp, dw.data(),
                                             db.data());
    } else if (impl == kReference) {
      epoch::cpu::conv2d_forward(d, x.data(), w.data(), b.data(), y.data());
      if (backward)
        epoch::cpu::conv2d_backward(d, dy.data(), x.data(), w.data(), dxp, dw.data(), db.data());
    } else {
#if EPOCH_WITH_ONEDNN
      using epoch::cpu::onednn::ConvLayout;
      const ConvLayout layout = impl == kOnednnPlain     ? ConvLayout::plain
                                : impl == kOnednnBlocked ? ConvLayout::blocked
                                                         : ConvLayout::automatic;
      epoch::cpu::onednn::conv2d_forward(d, x.data(), w.data(), b.data(), y.data(), layout);
      if (backward)
        epoch::cpu::onednn::conv2d_backward(d, dy.data(), x.data(), w.data(), dxp, dw.data(),
                                            db.data(), layout);
#else
      state.SkipWithError("this build has no oneDNN");
      break;
#endif
    }
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  const double pass = 2.0 * d.N * d.OC * d.OH * d.OW * (d.C / d.groups) * d.KH * d.KW;
  const double passes = backward ? (layer.need_dx ? 3.0 : 2.0) : 1.0;
  state.counters["FLOP/s"] =
      benchmark::Counter(pass * passes, benchmark::Counter::kIsIterationInvariantRate);
}

void args(benchmark::internal::Benchmark* b) {
  for (std::int64_t layer = 0; layer < static_cast<std::int64_t>(layers().size()); ++layer)
    for (std::int64_t impl : {kReference, kOnednnPlain, kOnednnBlocked, kOnednnAuto, kWinograd})
      for (std::int64_t backward : {0, 1}) b->Args({layer, impl, backward});
}

BENCHMARK(BM_Conv)->Apply(args)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
