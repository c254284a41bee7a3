// Video models' data and evaluation: the previous-frame baseline against a hand computation,
// the windows and their continuity, the layouts --data accepts, evaluation with and without
// carried state, and the predicted frames written for a sequence.
#include "epoch/train/clips.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "epoch/autograd/functions.h"
#include "epoch/data/image_codec.h"
#include "epoch/data/synth_video.h"
#include "epoch/models/prednet.h"
#include "epoch/nn/layers.h"
#include "testing/testing.h"
#include "train/run_testing.h"

namespace epoch::train {
namespace {

namespace fs = std::filesystem;

std::string small_video(const testing::TempDir& dir, std::int64_t sequences, std::int64_t frames) {
  return testing::write_small_video(dir / "video", sequences, frames, 9);
}

std::shared_ptr<models::PredNet> tiny_prednet(bool carry) {
  models::PredNetConfig config;
  config.stack = {3, 4};
  config.height = 24;
  config.width = 32;
  config.loss = models::PredNetLoss::next_frame_mse;
  config.carry_state = carry;
  config.layer_weights = {1.0f, 0.0f};
  const models::ModelSpec spec{
      "prednet-tiny", "", {2, 3, 24, 32}, 1, models::Task::frame_prediction, {}};
  auto model = models::build_prednet(spec, config);
  nn::initialize(*model, 1);
  return model;
}

data::Preprocessing frame_preprocessing() {
  data::Preprocessing p;
  p.channels = 3;
  p.height = 24;
  p.width = 32;
  return p;
}

TEST(PreviousFrameMse, MatchesAHandComputation) {
  // Two samples of 3 frames of 2 values.
  Tensor x = Tensor::from_vector({2, 3, 1, 1, 2}, {0, 0, 1, 1, 1, 3,  //
                                                   0, 0, 0, 0, 0, 0});
  // Sample 0: frame 1 vs 0: (1 + 1) / 2 = 1; frame 2 vs 1: (0 + 4) / 2 = 2; mean 1.5.
  EXPECT_DOUBLE_EQ(previous_frame_mse(x), (1.5 + 0.0) / 2.0);
  // With the frame before the window (values 2, 2 and 0, 0): sample 0 adds (4 + 4) / 2 = 4.
  const Tensor before = Tensor::from_vector({2, 1, 1, 2}, {2, 2, 0, 0});
  EXPECT_DOUBLE_EQ(previous_frame_mse(x, &before), ((4.0 + 1.0 + 2.0) / 3.0 + 0.0) / 2.0);
  const Tensor one_frame = Tensor::zeros({1, 1, 1, 1, 2});
  EXPECT_EQ(previous_frame_mse(one_frame), 0.0);
}

TEST(Windows, ContinueOnlyWithinASequence) {
  EXPECT_TRUE(continues({0, 0}, {0, 4}, 4));
  EXPECT_FALSE(continues({0, 0}, {0, 8}, 4));
  EXPECT_FALSE(continues({0, 4}, {1, 8}, 4));
  EXPECT_FALSE(continues({1, 4}, {1, 0}, 4));
}

TEST(ClipData, ReadsTrainAndValidationFoldersAndTheirBaseline) {
  testing::TempDir dir;
  const std::string root = small_video(dir, 2, 5);
  TrainConfig c;
  c.data.source = root;
  const ClipData d = open_clip_data(c);
  EXPECT_EQ(d.train.names.size(), 2u);
  EXPECT_EQ(d.val.names.size(), 1u);
  EXPECT_EQ(d.val_name, "validation");
  ASSERT_TRUE(d.train_baseline_mse.has_value());
  EXPECT_GT(*d.train_baseline_mse, 0.0);
  EXPECT_EQ(windows_of(d.train, 2).size(), 4u);  // 2 per sequence, the 5th frame left out

  // One folder of sequences needs validation from somewhere.
  c.data.source = root + "/train";
  EXPECT_THROW(open_clip_data(c), ConfigError);
  c.data.val_split = 0.5;
  const ClipData split = open_clip_data(c);
  EXPECT_EQ(split.train.names, std::vector<std::string>{"seq_00000"});
  EXPECT_EQ(split.val.names, std::vector<std::string>{"seq_00001"});
  c.data.val_split = 0.0;
  c.data.val_data = root + "/validation";
  EXPECT_EQ(open_clip_data(c).val.names.size(), 1u);

  // A corrupt baseline.json is named.
  std::ofstream(root + "/baseline.json") << "{not json";
  c = TrainConfig();
  c.data.source = root;
  try {
    open_clip_data(c);
    FAIL() << "read a corrupt baseline.json";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find("baseline.json"), std::string::npos) << e.what();
  }
  c.data.source = dir / "missing";
  EXPECT_THROW(open_clip_data(c), IoError);
}

TEST(EvaluateClips, TheBaselineIsOnTheFramesTheLossCounts) {
  testing::TempDir dir;
  const std::string root = small_video(dir, 1, 6);
  const data::SequenceFolder folder = data::scan_sequence_folder(root + "/train");
  const data::Preprocessing pre = frame_preprocessing();
  const data::ClipReader whole(folder, pre, 6);
  const Tensor x = whole.read({{0, 0}}).x;
  // Without carried state each window of 2 starts afresh: only its second frame counts.
  double fresh = 0.0;
  for (std::int64_t w = 0; w < 3; ++w) fresh += previous_frame_mse(slice(x, 1, 2 * w, 2)) / 3.0;
  const auto stateless = tiny_prednet(false);
  const ClipEvalResult a =
      evaluate_clips(*stateless, folder, pre, 2, 2, data::OnBadImage::fail, nullptr);
  EXPECT_EQ(a.windows, 3);
  EXPECT_NEAR(a.baseline_mse, fresh, 1e-12);
  const ClipEvalResult first_two =
      evaluate_clips(*stateless, folder, pre, 2, 2, data::OnBadImage::fail, nullptr, 2);
  EXPECT_EQ(first_two.windows, 2);  // --limit-test: the first windows in order
  EXPECT_NEAR(first_two.baseline_mse,
              (previous_frame_mse(slice(x, 1, 0, 2)) + previous_frame_mse(slice(x, 1, 2, 2))) / 2,
              1e-12);
  // With carried state the windows continue: frames 1..5 count, 1 in the first window, 2 after.
  const Tensor w0 = slice(x, 1, 0, 2), w1 = slice(x, 1, 2, 2), w2 = slice(x, 1, 4, 2);
  const Tensor f1 = reshape(slice(x, 1, 1, 1), {1, 3, 24, 32}).contiguous();
  const Tensor f3 = reshape(slice(x, 1, 3, 1), {1, 3, 24, 32}).contiguous();
  const double carried_expected =
      (previous_frame_mse(w0) + previous_frame_mse(w1, &f1) + previous_frame_mse(w2, &f3)) / 3.0;
  const auto carrying = tiny_prednet(true);
  const ClipEvalResult b =
      evaluate_clips(*carrying, folder, pre, 2, 8, data::OnBadImage::fail, nullptr);
  EXPECT_NEAR(b.baseline_mse, carried_expected, 1e-12);
  // Carried windows predict the same frames as one call over the whole sequence.
  const auto whole_model = tiny_prednet(false);
  const std::vector<float> at_once = whole_model->predict_frames(x).to_vector();
  carrying->reset_state();
  std::vector<float> windowed;
  for (const Tensor& w : {w0, w1, w2}) {
    const std::vector<float> p = carrying->predict_frames(w).to_vector();
    windowed.insert(windowed.end(), p.begin(), p.end());
  }
  ASSERT_EQ(windowed.size(), at_once.size());
  for (std::size_t i = 0; i < at_once.size(); ++i) ASSERT_NEAR(windowed[i], at_once[i], 1e-5f) << i;
  // Corrupt a frame: skipped (its window left out) or a named error.
  std::ofstream(folder.frames[0][3], std::ios::trunc) << "not a png";
  const ClipEvalResult skipped =
      evaluate_clips(*stateless, folder, pre, 2, 1, data::OnBadImage::skip, nullptr);
  EXPECT_EQ(skipped.windows, 2);
  EXPECT_EQ(skipped.bad_files, 1);
  EXPECT_THROW(evaluate_clips(*stateless, folder, pre, 2, 1, data::OnBadImage::fail, nullptr),
               IoError);
}

TEST(PredictSequence, WritesOnePredictedFramePerFrame) {
  testing::TempDir dir;
  const std::string root = small_video(dir, 1, 5);
  const std::string seq = root + "/validation/seq_00001";
  const auto model = tiny_prednet(true);
  const PredictedFrames p = predict_sequence(*model, frame_preprocessing(), seq, 2);
  ASSERT_EQ(p.files.size(), 5u);  // windows of 2, 2 and the last frame alone
  EXPECT_EQ(p.out_dir, seq + "/predicted");
  EXPECT_EQ(fs::path(p.files[0]).filename(), "pred_frame_00000.png");
  const data::Image im = data::read_image(p.files[4]);
  EXPECT_EQ(im.width, 32);
  EXPECT_EQ(im.height, 24);
  EXPECT_EQ(im.channels, 3);
  EXPECT_GT(p.baseline_mse, 0.0);
  EXPECT_GT(p.mse, 0.0);
  // The predictions are not frames of the sequence: scanning it again finds the same frames.
  EXPECT_EQ(data::scan_one_sequence(seq).frames[0].size(), 5u);
  EXPECT_THROW(predict_sequence(*model, frame_preprocessing(), dir / "nothing", 2), IoError);
}

}  // namespace
}  // namespace epoch::train
