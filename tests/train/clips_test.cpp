// Video models' data and evaluation: the previous-frame baseline against a hand computation,
// the windows and their continuity, the layouts --data accepts, evaluation with and without
// carried state, and the predicted frames written for a sequence (never over earlier ones
// unasked, never from a single frame).
#include "epoch/train/clips.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

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

TEST(ClipData, ABaselineThatIsNoRegularFileIsRefusedWithoutBlocking) {
  alarm(20);  // a FIFO named baseline.json must not block
  testing::TempDir dir;
  const std::string root = small_video(dir, 2, 5);
  fs::remove(root + "/baseline.json");
  ASSERT_EQ(::mkfifo((root + "/baseline.json").c_str(), 0600), 0);
  TrainConfig c;
  c.data.source = root;
  try {
    open_clip_data(c);
    FAIL() << "read a FIFO as baseline.json";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find(root + "/baseline.json: is a FIFO"), std::string::npos)
        << e.what();
  }
  fs::remove(root + "/baseline.json");
  EXPECT_FALSE(open_clip_data(c).train_baseline_mse.has_value());  // no file, no baseline
  alarm(0);
}

TEST(ClipData, ASequenceLinkedTwiceTrainsOnce) {
  testing::TempDir dir;
  const std::string root = small_video(dir, 2, 5);
  fs::create_directory_symlink(root + "/train/seq_00000", root + "/train/seq_00000_again");
  TrainConfig c;
  c.data.source = root;
  Warnings warnings(nullptr);
  const ClipData d = open_clip_data(c, &warnings);
  EXPECT_EQ(d.train.names, (std::vector<std::string>{"seq_00000", "seq_00001"}));
  EXPECT_EQ(warnings.count("linked sequences"), 1);
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

TEST(PredictSequence, RefusesToOverwriteEarlierPredictionsUnlessAsked) {
  testing::TempDir dir;
  const std::string root = small_video(dir, 1, 3);
  const std::string seq = root + "/validation/seq_00001";
  const auto model = tiny_prednet(true);
  const std::string out = dir / "pred";
  predict_sequence(*model, frame_preprocessing(), seq, 2, out);
  const auto written = fs::last_write_time(out + "/pred_frame_00000.png");
  try {
    predict_sequence(*model, frame_preprocessing(), seq, 2, out);
    FAIL() << "overwrote earlier predictions";
  } catch (const ConfigError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(out + ": already holds 3 predicted frames (pred_frame_00000.png", 0), 0u)
        << msg;
    EXPECT_NE(msg.find("--overwrite"), std::string::npos) << msg;
    EXPECT_NE(msg.find("another --out"), std::string::npos) << msg;
  }
  EXPECT_EQ(fs::last_write_time(out + "/pred_frame_00000.png"), written);
  EXPECT_EQ(predict_sequence(*model, frame_preprocessing(), seq, 2, out, true).files.size(), 3u);
  // Other files in the folder are no predictions; the sequence itself is no place for them.
  fs::create_directories(dir / "notes");
  std::ofstream(dir / "notes/readme.txt") << "mine";
  EXPECT_EQ(predict_sequence(*model, frame_preprocessing(), seq, 2, dir / "notes").files.size(),
            3u);
  EXPECT_THROW(predict_sequence(*model, frame_preprocessing(), seq, 2, seq, true), ConfigError);
}

TEST(PredictSequence, AFrameIsNoSequenceFolder) {
  testing::TempDir dir;
  const std::string root = small_video(dir, 1, 3);
  const std::string frame = root + "/validation/seq_00001/frame_00000.png";
  const auto model = tiny_prednet(true);
  try {
    predict_sequence(*model, frame_preprocessing(), frame, 2);
    FAIL() << "predicted from a single frame";
  } catch (const ConfigError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(frame + ": not a folder", 0), 0u) << msg;
    EXPECT_NE(msg.find("sequence folder (SEQUENCE_DIR"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("no such folder"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace epoch::train
