// The one description of a training run's settings and what is generated from it (see
// config_fields.h).
#include "epoch/train/config_fields.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "epoch/data/loader.h"
#include "epoch/ops/backend.h"

namespace epoch::train {
namespace {

using json = nlohmann::json;

/// The key's section ("optimizer") and name ("lr"); the section is empty at the top level.
std::pair<std::string, std::string> split_key(const std::string& key) {
  const std::size_t dot = key.find('.');
  if (dot == std::string::npos) return {"", key};
  return {key.substr(0, dot), key.substr(dot + 1)};
}

/// ConfigError unless a number is within the field's bounds.
void check_bounds(const ConfigField& f, double v) {
  const Bounds& b = f.bounds;
  bool ok = std::isfinite(v);
  std::string want;
  switch (b.kind) {
    case Bounds::Kind::any:
    case Bounds::Kind::seed:
      break;
    case Bounds::Kind::positive:
      ok = ok && v > 0;
      want = "must be positive";
      break;
    case Bounds::Kind::non_negative:
      ok = ok && v >= 0;
      want = "must be >= 0";
      break;
    case Bounds::Kind::range:
      ok = ok && v >= b.lo && v <= b.hi;
      want = "must be from " + json(b.lo).dump() + " to " + json(b.hi).dump();
      break;
    case Bounds::Kind::threads:
      ok = ok && v >= 0 && v <= ops::kMaxThreads;
      want = "must be from 0 (every core) to " + std::to_string(ops::kMaxThreads);
      break;
  }
  if (!ok)
    EPOCH_THROW(ConfigError, "setting \"", f.key, "\" is ", json(v).dump(), ": ",
                want.empty() ? "must be finite" : want);
}

template <typename T>
T integer_value(const ConfigField& f, const json& v) {
  if (!v.is_number_integer())
    EPOCH_THROW(ConfigError, "setting \"", f.key, "\" is not an integer: ", v.dump());
  if constexpr (std::is_unsigned_v<T>) {
    if (!v.is_number_unsigned() && v.get<std::int64_t>() < 0)
      EPOCH_THROW(ConfigError, "setting \"", f.key, "\" is negative: ", v.dump());
    return v.get<T>();
  } else {
    const std::int64_t i = v.get<std::int64_t>();
    if (i < std::numeric_limits<T>::min() || i > std::numeric_limits<T>::max())
      EPOCH_THROW(ConfigError, "setting \"", f.key, "\" is out of range: ", v.dump());
    check_bounds(f, static_cast<double>(i));
    return static_cast<T>(i);
  }
}

template <typename T>
T number_value(const ConfigField& f, const json& v) {
  if (!v.is_number())
    EPOCH_THROW(ConfigError, "setting \"", f.key, "\" is not a number: ", v.dump());
  const double d = v.get<double>();
  check_bounds(f, d);
  return static_cast<T>(d);
}

/// Sets one field from JSON, checking its type and bounds.
void set_field(const ConfigField& f, TrainConfig& c, const json& v) {
  std::visit(
      [&](auto&& ref) {
        using R = std::decay_t<decltype(ref)>;
        if constexpr (std::is_same_v<R, bool*>) {
          if (!v.is_boolean())
            EPOCH_THROW(ConfigError, "setting \"", f.key, "\" is not true or false: ", v.dump());
          *ref = v.get<bool>();
        } else if constexpr (std::is_same_v<R, int*>) {
          *ref = integer_value<int>(f, v);
        } else if constexpr (std::is_same_v<R, std::int64_t*>) {
          *ref = integer_value<std::int64_t>(f, v);
        } else if constexpr (std::is_same_v<R, std::uint64_t*>) {
          *ref = integer_value<std::uint64_t>(f, v);
        } else if constexpr (std::is_same_v<R, float*>) {
          *ref = number_value<float>(f, v);
        } else if constexpr (std::is_same_v<R, double*>) {
          *ref = number_value<double>(f, v);
        } else if constexpr (std::is_same_v<R, std::string*>) {
          if (!v.is_string())
            EPOCH_THROW(ConfigError, "setting \"", f.key, "\" is not a string: ", v.dump());
          *ref = v.get<std::string>();
        } else if constexpr (std::is_same_v<R, std::vector<float>*>) {
          if (!v.is_array())
            EPOCH_THROW(ConfigError, "setting \"", f.key, "\" is not a list: ", v.dump());
          ref->clear();
          for (const json& e : v) ref->push_back(number_value<float>(f, e));
        } else if constexpr (std::is_same_v<R, std::vector<std::string>*>) {
          if (!v.is_array())
            EPOCH_THROW(ConfigError, "setting \"", f.key, "\" is not a list: ", v.dump());
          ref->clear();
          for (const json& e : v) {
            if (!e.is_string())
              EPOCH_THROW(ConfigError, "setting \"", f.key, "\" holds a non-string: ", e.dump());
            ref->push_back(e.get<std::string>());
          }
        } else {
          if (!v.is_string())
            EPOCH_THROW(ConfigError, "setting \"", f.key, "\" is not a string: ", v.dump());
          set_choice(f, ref, v.get<std::string>());
        }
      },
      f.ref(c));
}

}  // namespace

void set_choice(const ConfigField& f, const ChoiceRef& ref, const std::string& word) {
  bool known = false;
  for (const std::string& choice : f.choices) known = known || choice == word;
  if (!known)
    EPOCH_THROW(ConfigError, f.flag.empty() ? "setting \"" + f.key + "\"" : f.flag, " ", word,
                ": expected ", words_listed(f.choices));
  ref.set(word);
}

// Each entry names only the members it sets; GCC 12 warns about the others even in designated
// initializers, though they keep their default member initializers.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
const std::vector<ConfigField>& config_fields() {
  static const std::vector<ConfigField> fields = {
      {.key = "model",
       .flag = "--model",
       .help = "Model from `epoch models`, or a model file: Keras (.json from model.to_json(), "
               ".keras), Caffe (.prototxt) or epoch's own description (.json)",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.run.model; },
       .show_default = true},
      {.key = "input_shape",
       .flag = "--input-shape",
       .help = "A Caffe net's input as C,H,W, where its Data layer gives no shape",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.run.input_shape; }},
      {.key = "solver",
       .flag = "--solver",
       .help = "A Caffe solver.prototxt for a Caffe net: its optimizer, learning-rate policy, "
               "momentum, weight decay and length (max_iter); flags still win",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.run.solver; }},
      {.key = "data",
       .flag = "--data",
       .help = "An image folder (class subfolders, or train/ + validation/), cifar10:DIR, a folder "
               "of IDX files, or 'synthetic' (default: Fashion-MNIST)",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.data.source; }},
      {.key = "val_data",
       .flag = "--val-data",
       .help = "Validation image folder (same class subfolders)",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.data.val_data; }},
      {.key = "val_split",
       .flag = "--val-split",
       .help = "Hold out this fraction of each class of an image folder for validation",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.data.val_split; },
       .bounds = Bounds::range(0.0, 1.0)},
      {.key = "workers",
       .flag = "--workers",
       .help = "Input pipeline threads (default: the cores compute leaves free, for image files; "
               "-1: the same)",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.data.workers; },
       .bounds = Bounds::range(-1, 64),
       .resume_may_change = true,
       .ranks_may_differ = true},
      {.key = "prefetch",
       .flag = "--prefetch",
       .help = "Batches prepared ahead",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.data.prefetch; },
       .bounds = Bounds::range(1, 64),
       .resume_may_change = true,
       .show_default = true,
       .ranks_may_differ = true},
      {.key = "on_bad_image",
       .flag = "--on-bad-image",
       .help = "skip (warn and go on) or fail on a corrupt or unreadable image",
       .ref = [](TrainConfig& c) -> FieldRef {
         return ChoiceRef{
             [&c] { return std::string(data::on_bad_image_name(c.data.on_bad_image)); },
             [&c](const std::string& s) { c.data.on_bad_image = data::parse_on_bad_image(s); }};
       },
       .choices = {"skip", "fail"},
       .resume_may_change = true,
       .show_default = true,
       .ranks_may_differ = true},
      {.key = "cache_mib",
       .flag = "--cache-mib",
       .help = "Memory for decoded images of an image folder (0: decode every epoch)",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.data.cache_mib; },
       .bounds = Bounds::non_negative(),
       .resume_may_change = true,
       .show_default = true,
       .ranks_may_differ = true},
      {.key = "augment.rotation_deg",
       .flag = "--rotation",
       .help = "Random rotation range, degrees",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.input.augment.rotation_deg; },
       .bounds = Bounds::non_negative()},
      {.key = "augment.width_shift",
       .flag = "--width-shift",
       .help = "Random horizontal shift, fraction of width",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.input.augment.width_shift; },
       .bounds = Bounds::non_negative()},
      {.key = "augment.height_shift",
       .flag = "--height-shift",
       .help = "Random vertical shift, fraction of height",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.input.augment.height_shift; },
       .bounds = Bounds::non_negative()},
      {.key = "augment.shear",
       .flag = "--shear",
       .help = "Random shear range, radians",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.input.augment.shear; },
       .bounds = Bounds::non_negative()},
      {.key = "augment.zoom",
       .flag = "--zoom",
       .help = "Random zoom: scale in [1-z, 1+z] per axis",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.input.augment.zoom; },
       .bounds = Bounds::range(0.0, 0.99)},
      {.key = "augment.horizontal_flip",
       .flag = "--horizontal-flip",
       .help = "Random left-right flips (true/false)",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.input.augment.horizontal_flip; }},
      {.key = "augment.vertical_flip",
       .flag = "--vertical-flip",
       .help = "Random up-down flips (true/false)",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.input.augment.vertical_flip; }},
      {.key = "augment.crop_padding",
       .flag = "--crop-padding",
       .help = "Random crop of the input size after zero padding by P pixels (-1: no crop)",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.input.augment.crop_padding; },
       .bounds = Bounds::range(-1, 1e6)},
      {.key = "augment.random_resized_crop",
       .flag = "--random-resized-crop",
       .help = "torchvision RandomResizedCrop (true/false)",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.input.augment.random_resized_crop; }},
      {.key = "augment.rrc_scale_min",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.input.augment.rrc_scale_min; }},
      {.key = "augment.rrc_scale_max",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.input.augment.rrc_scale_max; }},
      {.key = "augment.rrc_ratio_min",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.input.augment.rrc_ratio_min; }},
      {.key = "augment.rrc_ratio_max",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.input.augment.rrc_ratio_max; }},
      {.key = "augment.fill_mode",
       .flag = "--fill-mode",
       .help = "Outside the image: nearest or constant",
       .ref = [](TrainConfig& c) -> FieldRef {
         return ChoiceRef{
             [&c] { return std::string(data::fill_mode_name(c.input.augment.fill_mode)); },
             [&c](const std::string& s) { c.input.augment.fill_mode = data::parse_fill_mode(s); }};
       },
       .choices = {"nearest", "constant"}},
      {.key = "augment.brightness",
       .flag = "--brightness",
       .help = "Random brightness change, pixel units (0-255)",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.input.augment.brightness; },
       .bounds = Bounds::non_negative()},
      {.key = "augment.contrast_min",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.input.augment.contrast_min; },
       .bounds = Bounds::non_negative()},
      {.key = "augment.contrast_max",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.input.augment.contrast_max; },
       .bounds = Bounds::non_negative()},
      {.key = "rescale",
       .flag = "--rescale",
       .help = "Pixel scale factor (default 1/255)",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.input.rescale; }},
      {.key = "standardize",
       .flag = "--standardize",
       .help = "Per-image standardization (true/false)",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.input.standardize; }},
      {.key = "mean",
       .flag = "--mean",
       .help = "Per-channel mean to subtract after rescale (R,G,B)",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.input.mean; }},
      {.key = "std",
       .flag = "--std",
       .help = "Per-channel std to divide by after rescale (R,G,B)",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.input.std; }},
      {.key = "resize",
       .flag = "--resize",
       .help = "Evaluation resize of other-sized images: stretch, center_crop or "
               "resize_center_crop (torchvision's Resize(256) + CenterCrop(224))",
       .ref = [](TrainConfig& c) -> FieldRef {
         return ChoiceRef{[&c] { return std::string(data::resize_name(c.input.resize)); },
                          [&c](const std::string& s) { c.input.resize = data::parse_resize(s); }};
       },
       .choices = {"stretch", "center_crop", "resize_center_crop"}},
      {.key = "epochs",
       .flag = "--epochs",
       .help = "Epochs to train",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.run.epochs; },
       .bounds = Bounds::range(1, kMaxEpochs),
       .resume_may_change = true,
       .show_default = true},
      {.key = "max_steps",
       .flag = "--max-steps",
       .help = "The run's length in steps instead of epochs (a solver's max_iter; 0: --epochs "
               "decides): the last epoch stops at that step and is evaluated",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.run.max_steps; },
       .bounds = Bounds::range(0, kMaxPlannedSteps),
       .resume_may_change = true},
      {.key = "batch_size",
       .flag = "--batch-size",
       .help = "Samples per step",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.run.batch_size; },
       .bounds = Bounds::positive(),
       .show_default = true},
      {.key = "optimizer.name",
       .flag = "--optimizer",
       .help = "sgd, adam, adamw, rmsprop, lars or lamb (another one than the recipe's starts "
               "from its defaults)",
       .ref = [](TrainConfig& c) -> FieldRef {
         return ChoiceRef{
             [&c] { return std::string(optim::optimizer_name(c.optimizer.kind)); },
             [&c](const std::string& s) { c.optimizer.kind = optim::parse_optimizer(s); }};
       },
       .choices = {"sgd", "adam", "adamw", "rmsprop", "lars", "lamb"},
       .show_default = true},
      {.key = "optimizer.lr",
       .flag = "--lr",
       .help = "Learning rate (default: the model's recipe; for another --optimizer 0.01 for sgd, "
               "0.1 for lars, 2e-3 for the others)",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.optimizer.lr; },
       .bounds = Bounds::positive()},
      {.key = "optimizer.momentum",
       .flag = "--momentum",
       .help = "Momentum (sgd, rmsprop, lars)",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.optimizer.momentum; },
       .bounds = Bounds::range(0.0, 1.0)},
      {.key = "optimizer.nesterov",
       .flag = "--nesterov",
       .help = "Nesterov momentum (sgd)",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.optimizer.nesterov; },
       .is_switch = true},
      {.key = "optimizer.weight_decay",
       .flag = "--weight-decay",
       .help = "Weight decay",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.optimizer.weight_decay; },
       .bounds = Bounds::non_negative()},
      {.key = "optimizer.decay_only",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.optimizer.decay_only; }},
      {.key = "optimizer.lr_mult",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.optimizer.lr_mult; }},
      {.key = "optimizer.beta1",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.optimizer.beta1; },
       .bounds = Bounds::range(0.0, 1.0)},
      {.key = "optimizer.beta2",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.optimizer.beta2; },
       .bounds = Bounds::range(0.0, 1.0)},
      {.key = "optimizer.eps",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.optimizer.eps; },
       .bounds = Bounds::positive()},
      {.key = "optimizer.alpha",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.optimizer.alpha; },
       .bounds = Bounds::range(0.0, 1.0)},
      {.key = "optimizer.centered",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.optimizer.centered; }},
      {.key = "optimizer.keras_epsilon",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.optimizer.keras_epsilon; }},
      {.key = "optimizer.trust_coefficient",
       .flag = "--trust-coefficient",
       .help = "LARS's trust coefficient eta: local lr = eta * ||w|| / (||g|| + wd * ||w||)",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.optimizer.trust_coefficient; },
       .bounds = Bounds::positive()},
      {.key = "schedule.name",
       .flag = "--schedule",
       .help = "constant, step, cosine or poly",
       .ref = [](TrainConfig& c) -> FieldRef {
         return ChoiceRef{
             [&c] { return std::string(optim::schedule_name(c.schedule.kind)); },
             [&c](const std::string& s) { c.schedule.kind = optim::parse_schedule(s); }};
       },
       .choices = {"constant", "step", "cosine", "poly"},
       .show_default = true},
      {.key = "schedule.warmup_steps",
       .flag = "--warmup-steps",
       .help = "Linear warm-up steps (default: min(300, 10% of the steps); -1: the same)",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.schedule.warmup_steps; },
       .bounds = Bounds::range(-1, 9e18)},
      {.key = "schedule.warmup_start_factor",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.schedule.warmup_start_factor; },
       .bounds = Bounds::range(0.0, 1.0)},
      {.key = "schedule.step_size",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.schedule.step_size; },
       .bounds = Bounds::non_negative()},
      {.key = "schedule.gamma",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.schedule.gamma; },
       .bounds = Bounds::non_negative()},
      {.key = "schedule.min_lr",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.schedule.min_lr; },
       .bounds = Bounds::non_negative()},
      {.key = "schedule.power",
       .flag = "--poly-power",
       .help = "Power of the poly schedule's decay",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.schedule.power; },
       .bounds = Bounds::positive()},
      {.key = "schedule.warmup_epochs",
       .flag = "--warmup-epochs",
       .help = "Linear warm-up over this many epochs (> 0: replaces --warmup-steps)",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.schedule.warmup_epochs; },
       .bounds = Bounds::non_negative()},
      {.key = "schedule.lr_scaling",
       .flag = "--lr-scaling",
       .help = "none; linear: --lr times the global batch over --base-batch; sqrt: times its "
               "square root (LAMB's rule)",
       .ref = [](TrainConfig& c) -> FieldRef {
         return ChoiceRef{
             [&c] { return std::string(optim::lr_scaling_name(c.schedule.lr_scaling)); },
             [&c](const std::string& s) { c.schedule.lr_scaling = optim::parse_lr_scaling(s); }};
       },
       .choices = {"none", "linear", "sqrt"},
       .show_default = true},
      {.key = "schedule.base_batch",
       .flag = "--base-batch",
       .help = "The batch --lr is meant for, with --lr-scaling linear",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.schedule.base_batch; },
       .bounds = Bounds::positive(),
       .show_default = true},
      {.key = "device",
       .flag = "--device",
       .help = "cpu, cuda or cuda:N",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.execution.device; },
       .resume_may_change = true,
       .show_default = true,
       .ranks_may_differ = true,
       .execution = true},
      {.key = "threads",
       .flag = "--threads",
       .help = "CPU threads (0: all cores)",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.execution.threads; },
       .bounds = Bounds::threads(),
       .resume_may_change = true,
       .ranks_may_differ = true,
       .execution = true},
      {.key = "seed",
       .flag = "--seed",
       .help = "Random seed (0 to 2^64-1)",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.run.seed; },
       .bounds = Bounds::seed(),
       .show_default = true},
      {.key = "determinism",
       .flag = "--determinism",
       .help = "fast, reproducible (the same bits for the same seed and threads; on the CPU "
               "fast is the same kernels), strict (the same bits at any thread count) or "
               "reference (the plain reference kernels, the test oracle)",
       .ref = [](TrainConfig& c) -> FieldRef {
         return ChoiceRef{
             [&c] { return std::string(determinism_name(c.execution.determinism)); },
             [&c](const std::string& s) { c.execution.determinism = parse_determinism(s); }};
       },
       .choices = words_of(kDeterminismWords),
       .show_default = true,
       .execution = true},
      {.key = "perturb",
       .flag = "--perturb",
       .help = "Seeded nondeterminism: none, ulp (initial weights moved one ulp each) or order "
               "(shuffled summation order of the convolutions' weight gradients)",
       .ref = [](TrainConfig& c) -> FieldRef {
         return ChoiceRef{
             [&c] { return std::string(word_of(kPerturbWords, c.execution.perturb)); },
             [&c](const std::string& s) {
               c.execution.perturb = parse_word(kPerturbWords, s, "--perturb");
             }};
       },
       .choices = words_of(kPerturbWords),
       .show_default = true,
       .execution = true},
      {.key = "perturb_seed",
       .flag = "--perturb-seed",
       .help = "The seed of --perturb's draws",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.execution.perturb_seed; },
       .bounds = Bounds::seed(),
       .execution = true},
      {.key = "conv_algorithm",
       .flag = "--conv-algo",
       .help = "Convolution algorithms: auto (Winograd where it is faster) or direct",
       .ref = [](TrainConfig& c) -> FieldRef {
         return ChoiceRef{
             [&c] { return std::string(ops::conv_algorithm_name(c.execution.conv_algorithm)); },
             [&c](const std::string& s) { c.execution.conv_algorithm = ops::parse_conv_algorithm(s); }};
       },
       .choices = words_of(ops::kConvAlgorithmWords),
       .resume_may_change = true,
       .show_default = true,
       .ranks_may_differ = true,
       .execution = true},
      {.key = "cudnn",
       .flag = "--cudnn",
       .help = "CUDA convolutions: on (cuDNN) or off (epoch's own im2col and cuBLAS GEMM)",
       .ref = [](TrainConfig& c) -> FieldRef {
         return ChoiceRef{[&c] { return std::string(c.execution.cudnn ? "on" : "off"); },
                          [&c](const std::string& s) { c.execution.cudnn = s == "on"; }};
       },
       .choices = {"on", "off"},
       .show_default = true,
       .ranks_may_differ = true,
       .execution = true},
      {.key = "tbptt",
       .flag = "--tbptt",
       .help = "Video models: frames per truncated-backprop window (0: the model's sequence)",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.run.tbptt; },
       .bounds = Bounds::range(0, 1e6)},
      {.key = "eval_batch_size",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.run.eval_batch_size; },
       .bounds = Bounds::non_negative(),
       .resume_may_change = true,
       .ranks_may_differ = true},
      {.key = "bucket_mib",
       .flag = "--bucket-mib",
       .help = "Data-parallel runs: gradient all-reduce bucket size in MiB",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.run.bucket_mib; },
       .bounds = Bounds::range(0.001, 4096.0),
       .resume_may_change = true},
      {.key = "check_ranks_every",
       .flag = "--check-ranks-every",
       .help = "Data-parallel runs: steps between parameter checksums across ranks (0: each epoch)",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.run.check_ranks_every; },
       .bounds = Bounds::non_negative(),
       .resume_may_change = true},
      {.key = "log_every",
       .flag = "--log-every",
       .help = "Steps between metrics.jsonl records",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.run.log_every; },
       .bounds = Bounds::non_negative(),
       .resume_may_change = true,
       .ranks_may_differ = true},
      {.key = "limit_train",
       .flag = "--limit-train",
       .help = "Use only the first N training samples",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.data.limit_train; },
       .bounds = Bounds::non_negative()},
      {.key = "limit_test",
       .flag = "--limit-test",
       .help = "Use only the first N test samples",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.data.limit_test; },
       .bounds = Bounds::non_negative()},
      {.key = "synthetic_count",
       .flag = "--synthetic-count",
       .help = "Training samples of --data synthetic",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.data.synthetic_count; },
       .bounds = Bounds::positive()},
      {.key = "keep_checkpoints",
       .flag = "--keep-checkpoints",
       .help = "epoch-K checkpoints kept, the newest (-1: all); last and best are always kept",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.run.keep_checkpoints; },
       .bounds = Bounds::range(-1, 1e9),
       .resume_may_change = true,
       .show_default = true,
       .ranks_may_differ = true},
      {.key = "out_dir",
       .flag = "--out",
       .help = "Run directory (default: runs/<model>-<date>-<time>)",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.run.out_dir; },
       .stored = false,
       .ranks_may_differ = true},
      {.key = "quiet",
       .flag = "--quiet",
       .help = "No progress output",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.run.quiet; },
       .stored = false,
       .is_switch = true,
       .ranks_may_differ = true},
      {.key = "stop_after_epochs",
       .ref = [](TrainConfig& c) -> FieldRef { return &c.run.stop_after_epochs; },
       .stored = false},
  };
  return fields;
}
#pragma GCC diagnostic pop

const ConfigField& config_field(const std::string& key) {
  for (const ConfigField& f : config_fields())
    if (f.key == key) return f;
  EPOCH_THROW(InvalidArgument, "no setting \"", key, "\"");
}

std::vector<std::pair<std::string, std::string>> fields_ranks_share(const TrainConfig& config) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const ConfigField& f : config_fields())
    if (!f.ranks_may_differ)
      out.emplace_back(f.flag.empty() ? f.key : f.flag, field_value(f, config).dump());
  return out;
}

json field_value(const ConfigField& field, const TrainConfig& config) {
  // The references are only read here.
  TrainConfig& c = const_cast<TrainConfig&>(config);
  return std::visit(
      [](auto&& ref) -> json {
        using R = std::decay_t<decltype(ref)>;
        if constexpr (std::is_same_v<R, ChoiceRef>) {
          return ref.get();
        } else {
          return *ref;
        }
      },
      field.ref(c));
}

void copy_field(const ConfigField& field, const TrainConfig& from, TrainConfig& to) {
  set_field(field, to, field_value(field, from));
}

void apply_setting(TrainConfig& config, const std::string& key, const json& value) {
  const ConfigField& f = config_field(key);
  set_field(f, config, value);
  // Another optimizer starts from its own defaults, which later settings then replace.
  if (key == "optimizer.name") config.optimizer = optim::optimizer_defaults(config.optimizer.kind);
}

json config_to_json(const TrainConfig& config) {
  json j = json::object();
  for (const ConfigField& f : config_fields()) {
    if (!f.stored) continue;
    const auto [section, name] = split_key(f.key);
    json& where = section.empty() ? j : j[section];
    where[name] = field_value(f, config);
  }
  return j;
}

TrainConfig config_from_json(const json& j) {
  if (!j.is_object()) EPOCH_THROW(ConfigError, "stored run configuration is not a JSON object");
  // Written beside the settings in config.json, for readers; not settings.
  static const std::set<std::string> notes = {"model_parameters", "threads_used", "epoch_version",
                                                "model_sha256", "model_summary"};
  TrainConfig c;
  std::set<std::string> known_sections;
  for (const ConfigField& f : config_fields())
    if (f.stored) known_sections.insert(split_key(f.key).first);
  const auto field_at = [](const std::string& key) -> const ConfigField* {
    for (const ConfigField& f : config_fields())
      if (f.stored && f.key == key) return &f;
    return nullptr;
  };
  // The optimizer's name first: another optimizer starts from its own defaults, which the
  // stored values then replace (configurations written before a field existed keep them).
  if (j.contains("optimizer") && j["optimizer"].is_object() && j["optimizer"].contains("name")) {
    const ConfigField& f = config_field("optimizer.name");
    set_field(f, c, j["optimizer"]["name"]);
    c.optimizer = optim::optimizer_defaults(c.optimizer.kind);
  }
  for (const auto& [key, value] : j.items()) {
    if (notes.count(key) > 0 || key == "cpu_kernels") continue;
    if (value.is_object() && key != "" && known_sections.count(key) > 0) {
      for (const auto& [name, inner] : value.items()) {
        const ConfigField* f = field_at(key + "." + name);
        if (f == nullptr)
          EPOCH_THROW(ConfigError, "stored run configuration: unknown setting \"", key, ".", name,
                      "\"");
        set_field(*f, c, inner);
      }
      continue;
    }
    const ConfigField* f = field_at(key);
    if (f == nullptr)
      EPOCH_THROW(ConfigError, "stored run configuration: unknown setting \"", key, "\"");
    set_field(*f, c, value);
  }
  // Runs written before --determinism reference existed chose the plain kernels with
  // "cpu_kernels": "reference" (and "auto" for the others), whatever their determinism.
  if (j.contains("cpu_kernels")) {
    const json& k = j["cpu_kernels"];
    if (!k.is_string() || (k != "auto" && k != "reference"))
      EPOCH_THROW(ConfigError, "stored run configuration: setting \"cpu_kernels\" is ", k.dump(),
                  ": expected \"auto\" or \"reference\"");
    if (k == "reference") c.execution.determinism = Determinism::reference;
  }
  return c;
}

}  // namespace epoch::train
