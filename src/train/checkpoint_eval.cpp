// A checkpoint's evaluation (checkpoint_eval.h).
#include "epoch/train/checkpoint_eval.h"

#include <memory>

#include "epoch/data/loader.h"
#include "epoch/tensor/error.h"
#include "epoch/train/training_data.h"

namespace epoch::train {

CheckpointEval evaluate_checkpoint(TrainedModel& t, const CheckpointEvalOptions& o,
                                   Warnings& warnings) {
  TrainConfig c = t.config;
  if (!o.data.empty()) {
    c.data.source = o.data;
    c.data.val_data.clear();
    c.data.val_split = 0.0;
  }
  CheckpointEval r;
  if (t.model->spec().task == models::Task::frame_prediction) {
    r.frames = true;
    const ClipData d = open_clip_data(c, &warnings);
    r.data_name = d.val_name;
    r.clips = evaluate_clips(*t.model, d.val, t.preprocessing, window_frames(c, t.model->spec()),
                             o.batch_size > 0 ? o.batch_size : c.run.batch_size,
                             c.data.on_bad_image, &warnings, o.limit);
    if (r.clips.windows == 0)
      EPOCH_THROW(IoError, d.val.root, ": every window had a bad frame (see the warnings)");
    return r;
  }
  if (o.limit > 0) c.data.limit_test = o.limit;
  const std::unique_ptr<data::SampleSource> source =
      open_evaluation_data(c, t.model->spec(), t.class_names);
  data::LoaderConfig config;
  config.batch_size =
      o.batch_size > 0 ? o.batch_size : auto_eval_batch_size(t.model->spec(), c.run.batch_size);
  config.workers = c.data.workers >= 0 ? c.data.workers : 0;
  config.on_bad_image = c.data.on_bad_image;
  data::Loader loader(*source, t.preprocessing, std::nullopt, config, &warnings);
  r.data_name = "test";
  r.images = evaluate(*t.model, loader, source->size());
  return r;
}

}  // namespace epoch::train
