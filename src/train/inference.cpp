// Checkpoint loading and prediction (see inference.h).
#include "epoch/train/inference.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "epoch/autograd/autograd.h"
#include "epoch/data/augment.h"
#include "epoch/data/idx.h"
#include "epoch/data/image_codec.h"
#include "epoch/data/loader.h"
#include "epoch/models/model_file.h"
#include "epoch/tensor/warnings.h"
#include "epoch/train/checkpoint.h"
#include "epoch/train/evaluate.h"

namespace epoch::train {

TrainedModel load_trained_model(const std::string& checkpoint_path) {
  return load_trained_model(read_checkpoint(checkpoint_path));
}

TrainedModel load_trained_model(SafetensorsFile file) {
  check_checkpoint_format(file);
  const std::string& checkpoint_path = file.source;
  TrainedModel t;
  t.path = checkpoint_path;
  // The metadata first (cheap), then the model it names and its tensors.
  try {
    models::register_stored_description(metadata_at(file, "model"), file.metadata);
    t.model = models::build_model(metadata_at(file, "model"));
    t.preprocessing = data::Preprocessing::from_json(metadata_at(file, "preprocessing"));
    t.class_names =
        nlohmann::json::parse(metadata_at(file, "class_names")).get<std::vector<std::string>>();
    t.config = TrainConfig::from_json(nlohmann::json::parse(metadata_at(file, "config")));
    t.epoch = metadata_int(file, "epoch", 0, std::int64_t{1} << 40);
  } catch (const IoError&) {
    throw;
  } catch (const std::exception& e) {
    EPOCH_THROW(IoError, checkpoint_path,
                ": invalid checkpoint metadata: ", without_location(e.what()).substr(0, 200));
  }
  // (C, H, W), or a video model's (T, C, H, W) of frames (C, H, W).
  const Shape& input = t.model->spec().input;
  const std::size_t f = input.size() - 3;
  const data::Preprocessing& pre = t.preprocessing;
  if (pre.channels != input[f] || pre.height != input[f + 1] || pre.width != input[f + 2])
    EPOCH_THROW(IoError, checkpoint_path, ": its stored preprocessing makes ", pre.channels, "x",
                pre.height, "x", pre.width, " inputs, but model ", t.model->spec().name, " takes ",
                input[f], "x", input[f + 1], "x", input[f + 2]);
  load_model_state(file, *t.model);
  t.model->train(false);
  const bool has_optimizer =
      std::any_of(file.tensors.begin(), file.tensors.end(),
                  [](const NamedTensor& nt) { return nt.name.rfind("optim.", 0) == 0; });
  try {
    if (has_optimizer) {
      const auto optimizer = optim::make_optimizer(t.config.optimizer, t.model->parameters());
      load_optimizer_state(file, *optimizer);
    }
  } catch (const IoError&) {
    throw;
  } catch (const Error& e) {
    EPOCH_THROW(IoError, checkpoint_path,
                ": stored optimizer: ", without_location(e.what()).substr(0, 200));
  }
  return t;
}

data::Image load_input_image(const std::string& input, const data::Preprocessing& pre) {
  if (input.rfind("idx:", 0) == 0) {
    const std::size_t colon = input.rfind(':');
    EPOCH_CHECK(colon > 4, input, ": expected idx:PATH:INDEX");
    const std::string path = input.substr(4, colon - 4);
    std::int64_t index = -1;
    try {
      std::size_t used = 0;
      index = std::stoll(input.substr(colon + 1), &used);
      if (used != input.size() - colon - 1) index = -1;
    } catch (const std::exception&) {
      index = -1;
    }
    if (index < 0) EPOCH_THROW(ConfigError, input, ": INDEX must be a non-negative integer");
    const Tensor images = data::read_idx(path);
    if (images.ndim() != 3)
      EPOCH_THROW(IoError, path, ": expected an IDX image file (N, H, W), got ",
                  shape_str(images.shape()));
    if (index >= images.size(0))
      EPOCH_THROW(ConfigError, input, ": index ", index, " out of range (", images.size(0),
                  " images)");
    data::Image image;
    image.height = images.size(1);
    image.width = images.size(2);
    image.channels = 1;
    const std::uint8_t* src = images.data<std::uint8_t>() + index * image.height * image.width;
    image.pixels.assign(src, src + image.height * image.width);
    return image;
  }
  return data::read_image(input, data::decode_hint(pre, nullptr));  // as evaluation decodes
}

Tensor preprocess_input(const data::Image& image, const data::Preprocessing& pre) {
  Tensor x = Tensor::empty({1, pre.channels, pre.height, pre.width}, DType::f32);
  RandomStream unused(0, 0);
  data::transform_sample(data::ImageView::of(image), pre, nullptr, unused, x.f32());
  return x;
}

std::vector<Prediction> predict(TrainedModel& trained, const std::vector<std::string>& inputs) {
  EPOCH_CHECK(trained.model->spec().task != models::Task::reconstruction, "model ",
              trained.model->spec().name, " reconstructs images; it does not classify them");
  const data::Preprocessing& pre = trained.preprocessing;
  std::vector<Prediction> out;
  autograd::NoGradGuard no_grad;
  for (const std::string& input : inputs) {
    const Tensor x = preprocess_input(load_input_image(input, pre), pre);
    const Tensor probs =
        output_probabilities(trained.model->spec().task, trained.model->forward(x));
    Prediction p;
    p.input = input;
    p.probabilities = probs.to_vector();
    p.class_index =
        std::max_element(p.probabilities.begin(), p.probabilities.end()) - p.probabilities.begin();
    p.probability = p.probabilities[static_cast<std::size_t>(p.class_index)];
    p.class_name = p.class_index < static_cast<std::int64_t>(trained.class_names.size())
                       ? trained.class_names[static_cast<std::size_t>(p.class_index)]
                       : std::to_string(p.class_index);
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace epoch::train
