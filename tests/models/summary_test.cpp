// The layer table (`epoch models --show`): every zoo model's rows add up to its parameters,
// buffers and FLOPs and chain to its output shape; Keras's own summary of the CIFAR-10 example
// network gives the same per-layer parameters as epoch's cifar10-keras.
#include "epoch/models/summary.h"

#include <gtest/gtest.h>

#include <vector>

namespace epoch::models {
namespace {

std::int64_t buffer_count(const Model& m) {
  std::int64_t n = 0;
  for (const auto& [name, t] : m.buffers()) n += t.numel();
  return n;
}

TEST(ModelSummary, EveryZooModelsRowsAddUpToTheModel) {
  for (const ModelSpec& spec : model_specs()) {
    SCOPED_TRACE(spec.name);
    const std::shared_ptr<Model> m = build_model(spec.name);
    const ModelSummary s = summarize(*m);
    EXPECT_EQ(s.trainable, m->parameter_count());
    EXPECT_EQ(s.non_trainable, buffer_count(*m));
    EXPECT_EQ(s.flops, m->flops(spec.input));
    EXPECT_EQ(s.output, m->output_shape(spec.input));
    ASSERT_FALSE(s.layers.empty());
    EXPECT_EQ(s.layers.back().output, s.output);
    if (dynamic_cast<const LayerStack*>(m.get()) != nullptr) {
      EXPECT_EQ(s.layers.size(), m->children().size());
    }
  }
  EXPECT_GT(summarize(*build_model("alexnet-bn")).non_trainable, 0);  // running statistics
}

TEST(ModelSummary, TheKerasCifar10ExampleHasKerasPerLayerParameters) {
  // Keras's model.summary() of examples/cifar10_cnn.py: 896, 9,248, 18,496, 36,928,
  // 1,180,160 and 5,130 parameters in its Conv2D and Dense layers, 1,250,858 in all.
  const ModelSummary s = summarize(*build_model("cifar10-keras"));
  std::vector<std::int64_t> weighted;
  for (const LayerSummary& l : s.layers)
    if (l.parameters > 0) weighted.push_back(l.parameters);
  EXPECT_EQ(weighted, (std::vector<std::int64_t>{896, 9248, 18496, 36928, 1180160, 5130}));
  EXPECT_EQ(s.total(), 1250858);
  EXPECT_EQ(s.output, (Shape{10}));
  const std::string text = format_summary(s);
  EXPECT_NE(text.find("Total params: 1,250,858"), std::string::npos) << text;
  EXPECT_NE(text.find("(None, 32, 32, 32)"), std::string::npos) << text;  // the first conv's
  EXPECT_NE(text.find("Non-trainable params: 0"), std::string::npos) << text;
}

}  // namespace
}  // namespace epoch::models
