// A small PredNet learns generated first-person video through train::Step: its next-frame
// error falls well below where it started, over windows of truncated backpropagation.
#include <gtest/gtest.h>

#include <cmath>

#include "epoch/autograd/autograd.h"
#include "epoch/autograd/functions.h"
#include "epoch/data/synth_video.h"
#include "epoch/models/prednet.h"
#include "epoch/nn/layers.h"
#include "epoch/ops/backend.h"
#include "epoch/train/step.h"
#include "testing/testing.h"

namespace epoch::train {
namespace {

// Sequence `index` of the generated video at 32x32, frames scaled to [0, 1]: (1, T, 3, 32, 32).
Tensor video(std::int64_t index, std::int64_t frames) {
  Tensor x = Tensor::empty({1, frames, 3, 32, 32});
  data::render_video_sequence(5, index, frames, 32, 32, [&](std::int64_t t, const data::Image& im) {
    float* dst = x.f32() + t * 3 * 32 * 32;
    for (std::int64_t p = 0; p < 32 * 32; ++p)
      for (std::int64_t c = 0; c < 3; ++c)
        dst[c * 32 * 32 + p] =
            static_cast<float>(im.pixels[static_cast<std::size_t>(p * 3 + c)]) / 255.0f;
  });
  return x;
}

TEST(PredNetTraining, NextFrameErrorFallsOverTruncatedWindows) {
  const ops::ContextGuard context(ops::Context{ops::CpuKernels::fast, 0});
  models::PredNetConfig config;
  config.stack = {3, 8, 16};
  config.height = config.width = 32;
  config.loss = models::PredNetLoss::next_frame_mse;
  config.carry_state = true;
  const models::ModelSpec spec{
      "prednet-tiny", "", {5, 3, 32, 32}, 1, models::Task::frame_prediction, {}};
  const auto model = models::build_prednet(spec, config);
  nn::initialize(*model, 3);
  optim::OptimizerConfig adam = optim::optimizer_defaults(optim::OptimizerKind::adam);
  adam.lr = 3e-3f;
  Step step(*model, adam, nullptr, 3);
  const Tensor seq = video(0, 200);
  const Tensor no_labels = Tensor::zeros({1}, DType::i32);
  std::vector<float> losses;
  for (std::int64_t w = 0; w < 40; ++w)  // 40 windows of 5 frames, one update each
    losses.push_back(
        step.run(slice(seq, 1, 5 * w, 5), no_labels, w, static_cast<std::uint64_t>(w)).item());
  const auto mean = [&](std::size_t from, std::size_t to) {
    double s = 0;
    for (std::size_t i = from; i < to; ++i) s += losses[i];
    return s / static_cast<double>(to - from);
  };
  // Each window is new frames, so this is the error on frames the update had not yet seen.
  EXPECT_LT(mean(30, 40), 0.5 * mean(0, 5)) << "first " << mean(0, 5) << ", last " << mean(30, 40);
  for (float l : losses) EXPECT_TRUE(std::isfinite(l));
}

}  // namespace
}  // namespace epoch::train
