// Data-parallel training over a process group (see data_parallel.h).
#include "epoch/train/data_parallel.h"

#include <cmath>
#include <cstdio>
#include <functional>

#include "epoch/train/config_fields.h"

namespace epoch::train {

namespace {

/// Hands each bucket to `averager` (GradientAverager or NcclAverager: the same add/finish) as
/// soon as backward has completed it, and waits for the last before the update.
template <typename Averager>
void average_by_bucket(Step& step, Averager& averager, const float& weight,
                       const std::function<void(const dist::CommTimes&)>& record) {
  step.on_bucket_ready = [&averager, &weight](const GradBucket& b) {
    averager.add(b.grads.f32(), b.count, weight);
  };
  step.before_update = [&averager, record](Tensor&) { record(averager.finish()); };
}

}  // namespace

std::vector<dist::Setting> run_settings_ranks_share(const TrainConfig& c) {
  std::vector<dist::Setting> out{{"the command", "epoch train"},
                                 {"the epoch version", EPOCH_VERSION},
                                 {"--resume", c.run.resume ? "given" : "not given"}};
  for (auto& [name, value] : fields_ranks_share(c)) out.push_back({name, value});
  out.push_back({"the device kind", parse_device(c.execution.device).is_cuda() ? "cuda" : "cpu"});
  return out;
}

DataParallel::DataParallel(dist::ProcessGroup& group, Step& step, nn::Module& model,
                           std::int64_t bucket_bytes, std::vector<dist::Setting> job,
                           const std::string& what)
    : group_(group), step_(step), model_(model) {
  if (!group_.distributed()) return;
  step_.set_bucket_bytes(bucket_bytes);
  // What the collectives below trust: the same parameters, buffers and buckets everywhere.
  std::string parameters, buffers, buckets;
  std::int64_t count = 0;
  for (const auto& [name, p] : model_.parameters()) {
    parameters += name + shape_str(p.shape()) + ";";
    count += p.numel();
  }
  for (const auto& [name, b] : model_.buffers())
    buffers += name + shape_str(b.shape()) + dtype_name(b.dtype()) + ";";
  for (const GradBucket& b : step_.buckets()) buckets += std::to_string(b.count) + ",";
  const auto hash = [](const std::string& text) {
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx",
                  static_cast<unsigned long long>(
                      dist::checksum(text.data(), static_cast<std::int64_t>(text.size()))));
    return std::string(hex);
  };
  job.push_back({"the parameter count", std::to_string(count)});
  job.push_back({"the parameters' names and shapes", hash(parameters)});
  job.push_back({"the buffers' names and shapes", hash(buffers)});
  job.push_back({"the gradient buckets",
                 std::to_string(step_.buckets().size()) + " buckets, " + hash(buckets)});
  dist::expect_same_settings(group_, job, what);
  const auto record = [this](const dist::CommTimes& t) {
    last_ = t;
    totals_.busy_s += t.busy_s, totals_.exposed_s += t.exposed_s;
    totals_.bytes += t.bytes, ++totals_.steps;
  };
  const Device device = step_.flat().grads.device();
  if (device.is_cpu()) {
    // Each bucket's all-reduce starts on the communication thread while backward goes on.
    averager_ = std::make_unique<dist::GradientAverager>(group_);
    average_by_bucket(step_, *averager_, weight_, record);
  } else if (dist::nccl_available()) {
    // CUDA gradients: each bucket's NCCL all-reduce queued on its own stream behind the
    // kernels that complete it.
    nccl_ = std::make_unique<dist::NcclAverager>(group_, device.index);
    average_by_bucket(step_, *nccl_, weight_, record);
  } else {
    // A CUDA build without NCCL: the gradients go through the host in one piece after backward.
    averager_ = std::make_unique<dist::GradientAverager>(group_);
    step_.before_update = [this, record](Tensor& grads) {
      host_grads_ = grads.to(Device::cpu());
      averager_->add(host_grads_.f32(), host_grads_.numel(), weight_);
      dist::CommTimes t = averager_->finish();
      t.exposed_s = t.busy_s;  // nothing overlapped
      grads.copy_from(host_grads_);
      record(t);
    };
  }
}

void DataParallel::broadcast_state() {
  if (!distributed()) return;
  Tensor& values = step_.flat().values;
  Tensor host = values.to(Device::cpu());
  group_.broadcast(host.f32(), host.numel() * static_cast<std::int64_t>(sizeof(float)));
  if (!values.device().is_cpu()) values.copy_from(host);
  broadcast_buffers();
}

void DataParallel::broadcast_buffers() {
  if (!distributed()) return;
  for (auto& [name, buffer] : model_.buffers()) {
    Tensor host = buffer.to(Device::cpu()).contiguous();
    group_.broadcast(host.raw(),
                     host.numel() * static_cast<std::int64_t>(dtype_size(host.dtype())));
    buffer.copy_from(host);
  }
}

void DataParallel::set_share(std::int64_t local, std::int64_t global) {
  share_ = global > 0 ? static_cast<double>(local) / static_cast<double>(global) : 0.0;
  weight_ = static_cast<float>(share_);
}

std::int64_t DataParallel::global_count(std::int64_t local) const {
  if (!distributed()) return local;
  double v = static_cast<double>(local);
  group_.all_reduce_sum(&v, 1);
  return std::llround(v);
}

double DataParallel::mean_loss(double local_loss) const {
  if (!distributed()) return local_loss;
  double v = local_loss * share_;
  group_.all_reduce_sum(&v, 1);
  return v;
}

void DataParallel::check_in_sync(const std::string& where) {
  if (!distributed()) return;
  const Tensor host = step_.flat().values.to(Device::cpu());
  dist::expect_same_on_every_rank(
      group_, dist::checksum(host.f32(), host.numel() * static_cast<std::int64_t>(sizeof(float))),
      "the parameters " + where);
}

EvalResult DataParallel::reduce(const EvalResult& local) const {
  if (!distributed()) return local;
  // (a rank whose shard held nothing reports no accuracy; the task has one if any rank does)
  double sums[7] = {local.loss * static_cast<double>(local.count),
                    static_cast<double>(local.correct),
                    static_cast<double>(local.count),
                    local.accuracy >= 0 ? 1.0 : 0.0,
                    static_cast<double>(local.correct_top5),
                    local.top5_accuracy >= 0 ? 1.0 : 0.0,
                    local.loss_f64 * static_cast<double>(local.count)};
  group_.all_reduce_sum(sums, 7);
  EvalResult r;
  r.count = std::llround(sums[2]);
  r.correct = std::llround(sums[1]);
  r.correct_top5 = std::llround(sums[4]);
  r.loss = r.count > 0 ? sums[0] / sums[2] : 0.0;
  r.loss_f64 = r.count > 0 ? sums[6] / sums[2] : 0.0;
  if (sums[3] > 0 && r.count > 0) r.accuracy = sums[1] / sums[2];
  if (sums[5] > 0 && r.count > 0) r.top5_accuracy = sums[4] / sums[2];
  return r;
}

CommTotals DataParallel::take_totals() {
  const CommTotals t = totals_;
  totals_ = {};
  return t;
}

}  // namespace epoch::train
