// The zoo models' training recipes (MODELS.md), in one table-like function.
#include "epoch/train/recipe.h"

#include <sstream>

namespace epoch::train {

TrainConfig recipe_for(const std::string& model) {
  TrainConfig c;  // the default recipe (fmnist-cnn, autoencoder): Adam 2e-3, batch 32, cosine
  c.model = model;
  if (model == "catdog" || model == "catdog-wide" || model == "deep-cnn") {
    // The cats-vs-dogs source: rescale 1/255, shear 0.2, zoom 0.2, horizontal flip; Adam at
    // Keras's default rate, constant; batch 32.
    c.optimizer = optim::optimizer_defaults("adam");
    c.optimizer.lr = 1e-3f;
    c.schedule.name = "constant";
    c.warmup_steps = 0;
    c.batch_size = 32;
    c.augment.shear = 0.2f;
    c.augment.zoom = 0.2f;
    c.augment.horizontal_flip = true;
  } else if (model == "cifar10-keras") {
    // Keras's cifar10_cnn example: RMSprop 1e-4 (rho 0.9), batch 32, shifts 0.1, flips.
    c.optimizer = optim::optimizer_defaults("rmsprop");
    c.optimizer.lr = 1e-4f;
    c.optimizer.alpha = 0.9f;
    c.optimizer.eps = 1e-7f;
    c.schedule.name = "constant";
    c.warmup_steps = 0;
    c.batch_size = 32;
    c.augment.width_shift = 0.1f;
    c.augment.height_shift = 0.1f;
    c.augment.horizontal_flip = true;
  } else if (model == "cifar10-tf") {
    // TensorFlow's CIFAR-10 tutorial: random 24x24 crop, flip, brightness +-63, contrast
    // 0.2-1.8, per-image standardization (so no rescale); evaluation takes the central 24x24.
    // SGD 0.1, x0.1 every 350 epochs of 50,000 images at batch 128 (136,719 steps).
    c.optimizer = optim::optimizer_defaults("sgd");
    c.optimizer.lr = 0.1f;
    c.optimizer.weight_decay = 0.004f;  // on the weights of the two hidden dense layers only
    c.optimizer.decay_only = {"fc1.weight", "fc2.weight"};
    c.schedule.name = "step";
    c.schedule.step_size = 136719;
    c.schedule.gamma = 0.1f;
    c.warmup_steps = 0;
    c.batch_size = 128;
    c.augment.crop_padding = 0;
    c.augment.horizontal_flip = true;
    c.augment.brightness = 63.0f;
    c.augment.contrast_min = 0.2f;
    c.augment.contrast_max = 1.8f;
    c.rescale = 1.0f;
    c.standardize = true;
    c.resize = "center_crop";
  }
  return c;
}

std::string describe_recipe(const TrainConfig& c) {
  std::ostringstream out;
  out << c.optimizer.name << " lr " << c.optimizer.lr << ", " << c.schedule.name
      << " schedule, batch " << c.batch_size << ", augmentation: " << c.augment.describe();
  if (c.standardize) out << ", per-image standardization";
  if (c.resize != "stretch") out << ", evaluation " << c.resize;
  return out.str();
}

}  // namespace epoch::train
