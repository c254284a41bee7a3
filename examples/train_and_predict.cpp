// epoch as a C++ library, without the command line: configure a run of a zoo model, train it on
// images held in memory with a callback of the program's own (progress, and early stopping),
// reload the checkpoint, evaluate it on other images in memory, and predict on tensors. Built
// by CMake and run as a test (examples/CMakeLists.txt); the README's "Using epoch from C++"
// walks through it.
//
//   train_and_predict RUN_DIR     (RUN_DIR: a new or empty folder)
#include <cstdio>
#include <exception>

#include "epoch/autograd/autograd.h"
#include "epoch/data/dataset.h"
#include "epoch/train/callback.h"
#include "epoch/train/evaluate.h"
#include "epoch/train/inference.h"
#include "epoch/train/recipe.h"
#include "epoch/train/trainer.h"

namespace {

/// A program's own callback: a line every 40 steps, and the run ended once an epoch's
/// validation accuracy reaches `target` (the run keeps its checkpoint; --resume would go on).
class EarlyStopping : public epoch::train::Callback {
 public:
  explicit EarlyStopping(double target) : target_(target) {}
  void on_step_end(const epoch::train::StepEnd& s, epoch::train::RunControl&) override {
    if (s.global_step % 40 == 0)
      std::printf("  step %lld: loss %.4f (lr %.4f)\n", static_cast<long long>(s.global_step),
                  s.window_loss, s.lr);
  }
  void on_epoch_end(const epoch::train::EpochEnd& e, epoch::train::RunControl& control) override {
    std::printf("  epoch %lld: validation accuracy %.3f\n", static_cast<long long>(e.epoch),
                e.eval.accuracy);
    if (e.eval.accuracy >= target_) control.stop();
  }

 private:
  double target_;
};

int run(const char* run_dir) {
  using namespace epoch;
  // 1. A run: the model's own recipe (optimizer, schedule, batch, preprocessing), then the
  //    settings this program wants, as `epoch train` would set them from flags.
  train::TrainConfig config = train::recipe_for("fmnist-cnn");
  config.run.epochs = 4;
  config.run.out_dir = run_dir;
  config.run.quiet = true;  // the callback below reports instead of the progress bar
  config.execution.threads = 2;
  config.execution.determinism = train::Determinism::strict;  // the same bits at any threads

  // 2. Train on images held in memory (u8, N x C x H x W, with labels): here generated,
  //    learnable ones; a program would fill data::ImageDataset from its own source. The call
  //    blocks; the callback (or train::request_stop() from another thread) can end it after
  //    the current step, with a checkpoint (result.stopped).
  const data::ImageDataset train_images = data::make_synthetic_dataset(2048, 1, 28, 28, 10, 1);
  const data::ImageDataset validation_images = data::make_synthetic_dataset(512, 1, 28, 28, 10, 2);
  EarlyStopping early_stopping(0.95);
  train::TrainOptions options;
  options.callbacks = {&early_stopping};
  options.train_images = &train_images;
  options.validation_images = &validation_images;
  const train::TrainResult result = train::train(config, options);
  std::printf("trained %lld steps%s: test accuracy %.3f, loss %.4f, checkpoint %s\n",
              static_cast<long long>(result.steps), result.stopped ? " (stopped early)" : "",
              result.test_accuracy, result.test_loss, result.checkpoint.c_str());

  // 3. Reload the checkpoint: the model, its weights, preprocessing and settings.
  train::TrainedModel trained = train::load_trained_model(result.checkpoint);

  // 4. Evaluate on images held in memory (u8, N x C x H x W, with labels).
  const data::ImageDataset images = data::make_synthetic_dataset(256, 1, 28, 28, 10, 7);
  const train::EvalResult eval =
      train::evaluate(*trained.model, images, trained.preprocessing, 64);
  std::printf("in-memory evaluation of %lld images: accuracy %.3f, loss %.4f\n",
              static_cast<long long>(eval.count), eval.accuracy, eval.loss);

  // 5. Predict on tensors: one image preprocessed as evaluation does, then the model's class
  //    probabilities.
  data::Image image;
  image.width = image.height = 28;
  image.channels = 1;
  const std::uint8_t* first = images.images.data<std::uint8_t>();
  image.pixels.assign(first, first + 28 * 28);
  const Tensor x = train::preprocess_input(image, trained.preprocessing);
  trained.model->train(false);
  const autograd::NoGradGuard no_grad;
  const Tensor p = train::output_probabilities(trained.model->spec().task,
                                               trained.model->forward(x));
  const std::vector<float> probabilities = p.to_vector();
  std::size_t best = 0;
  for (std::size_t k = 1; k < probabilities.size(); ++k)
    if (probabilities[k] > probabilities[best]) best = k;
  std::printf("image 0 (label %d): class %zu, probability %.3f\n",
              images.labels.data<std::int32_t>()[0], best, probabilities[best]);

  // What a program would check: the model learnt, and in memory it scores as in training.
  if (!(result.test_accuracy > 0.5) || !(eval.accuracy > 0.5)) {
    std::fprintf(stderr, "train_and_predict: the model did not learn\n");
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s RUN_DIR\n", argv[0]);
    return 2;
  }
  try {
    return run(argv[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "train_and_predict: %s\n", e.what());
    return 1;
  }
}
