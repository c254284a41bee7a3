// Using a trained checkpoint: rebuild the model it names, load its weights, and classify
// inputs with exactly the preprocessing stored in it (so prediction cannot forget it).
#pragma once

#include <string>
#include <vector>

#include "epoch/data/dataset.h"
#include "epoch/data/image.h"
#include "epoch/models/zoo.h"
#include "epoch/tensor/safetensors.h"
#include "epoch/train/train_config.h"

namespace epoch::train {

struct TrainedModel {
  std::string path;
  std::shared_ptr<models::Model> model;
  data::Preprocessing preprocessing;
  std::vector<std::string> class_names;
  TrainConfig config;
  std::int64_t epoch = 0;
};

/// Loads a checkpoint written by `epoch train` (IoError naming the file on any problem).
TrainedModel load_trained_model(const std::string& checkpoint_path);
/// The same from a file already read (the fuzz target feeds it arbitrary bytes): its format,
/// model, tensors and metadata checked. Also restores an optimizer made from the stored
/// configuration, so everything a --resume reads is checked.
TrainedModel load_trained_model(SafetensorsFile file);

struct Prediction {
  std::string input;
  std::int64_t class_index = 0;
  std::string class_name;
  float probability = 0.0f;
  std::vector<float> probabilities;
};

/// Classifies each input: a JPEG or PNG file, or `idx:PATH:INDEX` (image INDEX of an IDX image
/// file), with exactly the checkpoint's preprocessing (the same transform as evaluation).
std::vector<Prediction> predict(TrainedModel& trained, const std::vector<std::string>& inputs);

/// The decoded image an input names (JPEGs at the DCT scale evaluation would use).
data::Image load_input_image(const std::string& input, const data::Preprocessing& pre);

/// One decoded image -> the model input (1, C, H, W) f32, as evaluation transforms samples.
Tensor preprocess_input(const data::Image& image, const data::Preprocessing& pre);

}  // namespace epoch::train
