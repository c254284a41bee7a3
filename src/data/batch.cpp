// Batch assembly into reused buffers, and the per-epoch sample order (a seeded Fisher-Yates
// shuffle that depends only on the seed and the epoch number).
#include <numeric>

#include "epoch/data/dataset.h"
#include "epoch/tensor/random.h"

namespace epoch::data {
namespace {

constexpr std::uint64_t kShuffleStreamTag = 0x5348554646ull;  // "SHUFF"

}  // namespace

BatchAssembler::BatchAssembler(const ImageDataset& dataset, Preprocessing preprocessing)
    : dataset_(&dataset), preprocessing_(std::move(preprocessing)) {
  preprocessing_.validate();
  const Tensor& images = dataset.images;
  const Tensor& labels = dataset.labels;
  EPOCH_CHECK(images.defined() && images.dtype() == DType::u8 && images.ndim() == 4 &&
                  images.device().is_cpu() && images.is_contiguous(),
              "BatchAssembler: dataset images must be contiguous (N, C, H, W) u8 on the CPU");
  EPOCH_CHECK(
      labels.defined() && labels.dtype() == DType::i32 && labels.ndim() == 1 &&
          labels.device().is_cpu() && labels.is_contiguous() && labels.size(0) == images.size(0),
      "BatchAssembler: dataset labels must be (N) i32 on the CPU with N = ", images.size(0));
  EPOCH_CHECK(images.size(1) == preprocessing_.channels &&
                  images.size(2) == preprocessing_.height && images.size(3) == preprocessing_.width,
              "BatchAssembler: images ", shape_str(images.shape()),
              " do not match the preprocessing input size (", preprocessing_.channels, ", ",
              preprocessing_.height, ", ", preprocessing_.width, ")");
}

Batch BatchAssembler::assemble(std::span<const std::int64_t> indices) {
  const auto b = static_cast<std::int64_t>(indices.size());
  EPOCH_CHECK(b > 0, "BatchAssembler::assemble: empty batch");
  const std::int64_t n = dataset_->size();
  for (std::int64_t i = 0; i < b; ++i)
    EPOCH_CHECK(indices[i] >= 0 && indices[i] < n, "BatchAssembler::assemble: row ", indices[i],
                " out of range for ", n, " samples");
  const Preprocessing& p = preprocessing_;
  if (!images_.defined() || images_.size(0) < b) {
    images_ = Tensor::empty({b, p.channels, p.height, p.width}, DType::f32);
    labels_ = Tensor::empty({b}, DType::i32);
  }
  const std::int64_t sample = p.channels * p.height * p.width;
  const std::uint8_t* src = dataset_->images.data<std::uint8_t>();         // (N, C, H, W)
  const std::int32_t* src_labels = dataset_->labels.data<std::int32_t>();  // (N)
  float* dst = images_.f32();                                              // (B, C, H, W)
  std::int32_t* dst_labels = labels_.data<std::int32_t>();                 // (B)
#pragma omp parallel for schedule(static) if (b > 1)
  for (std::int64_t i = 0; i < b; ++i) {
    preprocess_sample(p, src + indices[i] * sample, dst + i * sample);
    dst_labels[i] = src_labels[indices[i]];
  }
  return {images_.narrow0(0, b), labels_.narrow0(0, b)};
}

std::vector<std::int64_t> epoch_order(std::int64_t n, std::uint64_t seed, std::int64_t epoch,
                                      bool shuffle) {
  EPOCH_CHECK(n >= 0, "epoch_order: negative sample count ", n);
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), std::int64_t{0});
  if (!shuffle) return order;
  RandomStream rs(seed, mix64(kShuffleStreamTag, static_cast<std::uint64_t>(epoch)));
  for (std::int64_t i = n - 1; i > 0; --i) {
    const auto j = static_cast<std::int64_t>(rs.below(static_cast<std::uint64_t>(i + 1)));
    std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(j)]);
  }
  return order;
}

}  // namespace epoch::data
