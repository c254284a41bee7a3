// The image paths of the `epoch` binary: training on an image folder (with bad files skipped
// or fatal), prediction with the stored preprocessing, and `epoch bench` on a dataset.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/cli_testing.h"
#include "epoch/data/image.h"

namespace epoch {
namespace {

namespace fs = std::filesystem;
using testing::CommandResult;
using testing::run_epoch;

/// A bright disc (class "disc") or a dark bar (class "bar") on noise: learnable at a glance.
data::Image drawn(int cls, int i, int w, int h) {
  data::Image im{w, h, 3, std::vector<std::uint8_t>(static_cast<std::size_t>(w * h * 3))};
  const double cx = w * (0.35 + 0.3 * ((i * 37) % 11) / 10.0),
               cy = h * (0.35 + 0.3 * ((i * 53) % 7) / 6.0);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const bool on = cls == 0 ? (x - cx) * (x - cx) + (y - cy) * (y - cy) < 0.06 * w * h
                               : std::abs(y - cy) < 0.12 * h;
      const int noise = ((x * 131 + y * 71 + i * 17) % 40);
      for (int c = 0; c < 3; ++c)
        im.pixels[static_cast<std::size_t>((y * w + x) * 3 + c)] =
            static_cast<std::uint8_t>(on ? (cls == 0 ? 215 : 20) + noise : 100 + noise);
    }
  return im;
}

/// root/{train,validation}/{bar,disc}/N.png
void make_dataset(const std::string& root, int train_per_class, int val_per_class) {
  for (const auto& [split, n] :
       {std::pair{"train", train_per_class}, {"validation", val_per_class}})
    for (int cls = 0; cls < 2 && n > 0; ++cls) {
      const fs::path dir = fs::path(root) / split / (cls == 0 ? "disc" : "bar");
      fs::create_directories(dir);
      for (int i = 0; i < n; ++i)
        data::write_png((dir / (std::to_string(i) + ".png")).string(),
                        drawn(cls, i + (split[0] == 'v' ? 1000 : 0), 80 + i % 5, 60 + i % 3));
    }
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

const char* kQuick = " --model catdog --batch-size 8 --threads 1 --log-every 0";

TEST(ImageCli, TrainsOnAnImageFolderAndPredictsWithItsPreprocessing) {
  testing::TempDir dir;
  make_dataset(dir / "data", 48, 8);
  const CommandResult r = run_epoch("train" + std::string(kQuick) + " --epochs 4 --data " +
                                        (dir / "data") + " --out " + (dir / "run") + " --json",
                                    dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_GE(j["test_accuracy"].get<double>(), 0.75) << r.out;  // an easy task, 2 epochs
  const nlohmann::json config = nlohmann::json::parse(std::ifstream(dir / "run/config.json"));
  EXPECT_FLOAT_EQ(config["augment"]["shear"].get<float>(), 0.2f);  // the recipe
  EXPECT_TRUE(config["augment"]["horizontal_flip"].get<bool>());

  const std::string disc = dir / "data/validation/disc/0.png",
                    bar = dir / "data/validation/bar/1.png";
  const CommandResult p = run_epoch(
      "predict " + (dir / "run/checkpoints/last.safetensors") + " " + disc + " " + bar + " --json",
      dir);
  ASSERT_EQ(p.exit_code, 0) << p.err;
  std::istringstream lines(p.out);
  std::string line;
  std::vector<nlohmann::json> preds;
  while (std::getline(lines, line)) preds.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(preds.size(), 2u);
  for (const auto& pr : preds) {
    const double prob = pr["probability"].get<double>();
    EXPECT_GE(prob, 0.5);
    EXPECT_LE(prob, 1.0);
    EXPECT_EQ(pr["probabilities"].size(), 2u);
  }
  EXPECT_EQ(preds[0]["class"], "disc") << p.out;
  EXPECT_EQ(preds[1]["class"], "bar") << p.out;
  // Evaluation of the checkpoint on its own validation folder agrees with training's.
  const CommandResult e =
      run_epoch("eval " + (dir / "run/checkpoints/last.safetensors") + " --json", dir);
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_NEAR(nlohmann::json::parse(e.out)["test_accuracy"].get<double>(),
              j["test_accuracy"].get<double>(), 1e-9);
  // ... and a folder of class subfolders is evaluated as a whole.
  const CommandResult f = run_epoch("eval " + (dir / "run/checkpoints/last.safetensors") +
                                        " --data " + (dir / "data/validation") + " --json",
                                    dir);
  ASSERT_EQ(f.exit_code, 0) << f.err;
  EXPECT_EQ(nlohmann::json::parse(f.out)["samples"], 16);
}

TEST(ImageCli, BadFilesAreSkippedAndCountedOrStopTheRun) {
  testing::TempDir dir;
  make_dataset(dir / "data", 6, 3);
  write_bytes(dir / "data/train/disc/zero.png", "");
  write_bytes(dir / "data/train/bar/text.jpg", "just some text");
  write_bytes(dir / "data/train/bar/corrupt.jpg",
              std::string("\xff\xd8\xff\xe0", 4) + std::string(200, 'x'));
  std::ifstream in(dir / "data/train/disc/0.png", std::ios::binary);
  const std::string png((std::istreambuf_iterator<char>(in)), {});
  write_bytes(dir / "data/validation/disc/truncated.png", png.substr(0, png.size() / 3));

  const CommandResult r = run_epoch("train" + std::string(kQuick) + " --epochs 2 --data " +
                                        (dir / "data") + " --out " + (dir / "run"),
                                    dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* name : {"zero.png", "text.jpg", "corrupt.jpg", "truncated.png"})
    EXPECT_NE(r.err.find(name), std::string::npos) << name << " not reported:\n" << r.err;
  EXPECT_NE(r.out.find("skipped:       4 bad image files"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(dir / "run/checkpoints/epoch-2.safetensors"));

  testing::expect_one_line_error(
      run_epoch("train" + std::string(kQuick) + " --epochs 1 --on-bad-image fail --data " +
                    (dir / "data") + " --out " + (dir / "run2"),
                dir),
      1, "data/train/");
}

TEST(ImageCli, ValidationSplitAndErrors) {
  testing::TempDir dir;
  make_dataset(dir / "data", 10, 0);
  const std::string classes = dir / "data/train";
  testing::expect_one_line_error(run_epoch("train" + std::string(kQuick) + " --epochs 1 --data " +
                                               classes + " --out " + (dir / "r1"),
                                           dir),
                                 1, "--val-split");
  const CommandResult r =
      run_epoch("train" + std::string(kQuick) + " --epochs 1 --data " + classes +
                    " --val-split 0.3 --out " + (dir / "r2") + " --json",
                dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  testing::expect_one_line_error(
      run_epoch("train" + std::string(kQuick) + " --epochs 1 --data " + classes +
                    " --val-split 0.3 --mean 0.5,0.5 --out " + (dir / "r4"),
                dir),
      1, "2 means for 3 channels");
  fs::create_directories(dir / "data/train/third");
  data::write_png(dir / "data/train/third/x.png", drawn(0, 1, 30, 30));
  testing::expect_one_line_error(run_epoch("train" + std::string(kQuick) + " --epochs 1 --data " +
                                               classes + " --val-split 0.3 --out " + (dir / "r3"),
                                           dir),
                                 1, "has 3");
}

TEST(ImageCli, BenchPipelineEndToEndAndSweep) {
  testing::TempDir dir;
  make_dataset(dir / "data", 8, 2);
  const CommandResult p = run_epoch("bench --pipeline --model catdog --data " + (dir / "data") +
                                        " --images 40 --workers 2 --json",
                                    dir);
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const auto pj = nlohmann::json::parse(p.out);
  EXPECT_GT(pj["per_core_per_s"].get<double>(), 0.0);
  EXPECT_GT(pj["workers_per_s"].get<double>(), 0.0);
  EXPECT_EQ(pj["output"], "3x64x64");

  const CommandResult e = run_epoch("bench --model catdog --data " + (dir / "data") +
                                        " --batch-size 4 --threads 1 --warmup 1 --steps 10",
                                    dir);
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_TRUE(e.out.find("compute-bound") != std::string::npos ||
              e.out.find("input-bound") != std::string::npos ||
              e.out.find("CPU-contended") != std::string::npos)
      << e.out;

  const CommandResult s = run_epoch("bench --model catdog --data " + (dir / "data") +
                                        " --batch-size 2,4 --workers 0,1 --threads 1 --warmup 0 "
                                        "--steps 10 --json",
                                    dir);
  ASSERT_EQ(s.exit_code, 0) << s.err;
  const auto sj = nlohmann::json::parse(s.out);
  ASSERT_TRUE(sj.is_array());
  EXPECT_EQ(sj.size(), 4u);
  EXPECT_EQ(sj[3]["batch_size"], 4);
  EXPECT_EQ(sj[3]["workers"], 1);
  testing::expect_one_line_error(run_epoch("bench --pipeline --model catdog", dir), 1, "--data");
  testing::expect_one_line_error(run_epoch("bench --compare tensorflow", dir), 1, "tensorflow");
  testing::expect_one_line_error(
      run_epoch("bench --compare pytorch --steps 10 --reference-dir " + (dir / "nowhere"), dir), 1,
      "run_torch.sh");
  testing::expect_one_line_error(
      run_epoch("bench --pipeline --compare pytorch --model cifar10-tf --data " + (dir / "data"),
                dir),
      1, "catdog");
}

}  // namespace
}  // namespace epoch

namespace epoch {
namespace {

TEST(ImageCli, Cifar10RecipesTrainFromBinariesAndPredictFromJpeg) {
  testing::TempDir dir;
  ASSERT_EQ(
      run_epoch("data synth --kind cifar10 --out " + (dir / "c") + " --count 200 --val-count 40",
                dir)
          .exit_code,
      0);
  const CommandResult r =
      run_epoch("train --model cifar10-tf --data cifar10:" + (dir / "c/cifar-10-batches-bin") +
                    " --epochs 1 --threads 1 --log-every 0 --json --out " + (dir / "tf"),
                dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json config = nlohmann::json::parse(std::ifstream(dir / "tf/config.json"));
  EXPECT_EQ(config["batch_size"], 128);  // the TensorFlow recipe
  EXPECT_EQ(config["resize"], "center_crop");
  EXPECT_TRUE(config["standardize"].get<bool>());
  EXPECT_EQ(config["optimizer"]["decay_only"].size(), 2u);
  EXPECT_EQ(config["augment"]["crop_padding"], 0);
  // A 32x32 JPEG goes through the same centre crop and standardization.
  const std::string image = dir / "c/validation/ship";
  std::string first;
  for (const auto& e : fs::directory_iterator(image)) first = e.path().string();
  const CommandResult p = run_epoch(
      "predict " + (dir / "tf/checkpoints/last.safetensors") + " " + first + " --json", dir);
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_EQ(nlohmann::json::parse(p.out)["probabilities"].size(), 10u);

  // The JPEG folders of the same images this time (the binaries win when --data is the root).
  const CommandResult k =
      run_epoch("train --model cifar10-keras --data " + (dir / "c/train") + " --val-data " +
                    (dir / "c/validation") + " --epochs 1 --threads 1 --log-every 0 --json --out " +
                    (dir / "keras"),
                dir);
  ASSERT_EQ(k.exit_code, 0) << k.err;
  EXPECT_NE(k.out.find("test_accuracy"), std::string::npos);
}

TEST(ImageCli, ImagenetFoldersTrainAndEvaluateWithTopFive) {
  // ImageNet's layout (train/ and val/ of class folders, photo-like sizes): the recipe's
  // random-resized crops for training, resize 256 + centre crop 224 and ImageNet's
  // normalization for evaluation, top-1 and top-5 reported, by `epoch train` and `epoch eval`.
  testing::TempDir dir;
  ASSERT_EQ(run_epoch("data synth --kind imagenet --classes 8 --count 16 --val-count 8 --out " +
                          (dir / "inet"),
                      dir)
                .exit_code,
            0);
  EXPECT_TRUE(fs::is_directory(dir / "inet/val"));
  EXPECT_FALSE(fs::exists(dir / "inet/validation"));
  const CommandResult r = run_epoch("train --model resnet18 --data " + (dir / "inet") +
                                        " --epochs 1 --batch-size 4 --threads 2 --log-every 0 "
                                        "--out " +
                                        (dir / "run") + " --json",
                                    dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.contains("test_top5_accuracy")) << r.out;
  const double top1 = j["test_accuracy"].get<double>(), top5 = j["test_top5_accuracy"];
  EXPECT_GE(top5, top1);
  EXPECT_LE(top5, 1.0);
  const nlohmann::json config = nlohmann::json::parse(std::ifstream(dir / "run/config.json"));
  EXPECT_EQ(config["resize"], "resize_center_crop");
  EXPECT_FLOAT_EQ(config["mean"][0].get<float>(), 0.485f);
  EXPECT_FLOAT_EQ(config["std"][2].get<float>(), 0.225f);
  EXPECT_TRUE(config["augment"]["random_resized_crop"].get<bool>());
  const CommandResult e = run_epoch("eval " + (dir / "run/checkpoints/last.safetensors") +
                                        " --data " + (dir / "inet") + " --threads 2 --json",
                                    dir);
  ASSERT_EQ(e.exit_code, 0) << e.err;
  const auto ej = nlohmann::json::parse(e.out);
  EXPECT_EQ(ej["samples"], 8);
  EXPECT_DOUBLE_EQ(ej["test_top5_accuracy"].get<double>(), top5);  // the same evaluation
  const CommandResult text = run_epoch("eval " + (dir / "run/checkpoints/last.safetensors") +
                                           " --data " + (dir / "inet") + " --threads 2",
                                       dir);
  EXPECT_NE(text.out.find("top-5"), std::string::npos) << text.out;
}

}  // namespace
}  // namespace epoch
