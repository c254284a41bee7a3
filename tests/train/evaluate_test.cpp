// Evaluation's accuracies: top-k membership and the top-5 share of a model of ten classes,
// against a count made here from the model's own outputs.
#include "epoch/train/evaluate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "epoch/autograd/autograd.h"
#include "epoch/nn/layers.h"

namespace epoch::train {
namespace {

TEST(Evaluate, TopKCountsTheLabelAmongTheKHighest) {
  const std::vector<float> row = {0.1f, 0.5f, 0.3f, 0.9f, 0.2f, 0.0f, 0.7f};
  const auto n = static_cast<std::int64_t>(row.size());
  EXPECT_TRUE(in_top_k(row.data(), n, 3, 1));
  EXPECT_FALSE(in_top_k(row.data(), n, 6, 1));
  EXPECT_TRUE(in_top_k(row.data(), n, 6, 2));
  EXPECT_FALSE(in_top_k(row.data(), n, 2, 3));  // 0.5, 0.9 and 0.7 above it
  EXPECT_TRUE(in_top_k(row.data(), n, 2, 4));
  EXPECT_FALSE(in_top_k(row.data(), n, 5, 6));  // the lowest of 7
  EXPECT_TRUE(in_top_k(row.data(), n, 5, 7));
  const std::vector<float> ties(6, 1.0f);  // a tie counts for the label
  EXPECT_TRUE(in_top_k(ties.data(), 6, 4, 1));
  std::vector<float> nan_row = row;
  nan_row[3] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(in_top_k(nan_row.data(), n, 3, 5));  // a NaN score is never right
  EXPECT_TRUE(in_top_k(nan_row.data(), n, 6, 1));   // nor above anything
}

TEST(Evaluate, TopFiveOfAModelOfTenClassesCountsItsOutputs) {
  const std::shared_ptr<models::Model> model = models::build_model("fmnist-cnn");
  nn::initialize(*model, 7);
  const data::ImageDataset d = data::make_synthetic_dataset(50, 1, 28, 28, 10, 3);
  data::Preprocessing pre = data::Preprocessing::for_dataset(d, false);
  const EvalResult r = evaluate(*model, d, pre, 16);
  ASSERT_EQ(r.count, 50);
  // The count made here, from the same (untrained, so well mixed) outputs.
  autograd::NoGradGuard no_grad;
  model->train(false);
  Tensor x = Tensor::empty({50, 1, 28, 28});
  for (std::int64_t i = 0; i < 50; ++i)
    data::preprocess_sample(pre, d.images.data<std::uint8_t>() + i * 784, x.f32() + i * 784);
  const std::vector<float> out = model->forward(x).to_vector();
  const std::vector<float> labels = d.labels.to(Device::cpu()).to_vector();
  std::int64_t top5 = 0;
  for (std::int64_t i = 0; i < 50; ++i) {
    const auto label = static_cast<std::int64_t>(labels[static_cast<std::size_t>(i)]);
    const float* o = out.data() + i * 10;
    std::int64_t above = 0;
    for (std::int64_t j = 0; j < 10; ++j) above += o[j] > o[label];
    top5 += above < 5;
  }
  EXPECT_EQ(r.correct_top5, top5);
  EXPECT_DOUBLE_EQ(r.top5_accuracy, static_cast<double>(top5) / 50.0);
  EXPECT_GE(r.correct_top5, r.correct);
  EXPECT_GT(r.correct_top5, 0);
  EXPECT_LT(r.correct_top5, 50);
}

TEST(Evaluate, NoTopFiveForFiveClassesOrFewer) {
  const std::shared_ptr<models::Model> model = models::build_model("catdog");
  nn::initialize(*model, 7);
  const models::ModelSpec& spec = model->spec();
  const data::ImageDataset d =
      data::make_synthetic_dataset(4, spec.input[0], spec.input[1], spec.input[2], 2, 1);
  const EvalResult r = evaluate(*model, d, data::Preprocessing::for_dataset(d, false), 4);
  EXPECT_GE(r.accuracy, 0.0);
  EXPECT_EQ(r.top5_accuracy, -1.0);
}

}  // namespace
}  // namespace epoch::train
