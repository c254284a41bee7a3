// One contiguous buffer for all parameters and one for all gradients (see flat_parameters.h).
#include "epoch/nn/flat_parameters.h"

namespace epoch::nn {

FlatParameters flatten_parameters(Module& module) {
  const NamedTensors params = module.parameters();
  EPOCH_CHECK(!params.empty(), "flatten_parameters: the module has no parameters");
  const Device device = params.front().second.device();
  std::int64_t total = 0;
  for (const auto& [name, t] : params) {
    EPOCH_CHECK(t.device() == device, "flatten_parameters: parameter '", name, "' is on ",
                t.device().str(), ", others on ", device.str());
    total += t.numel();
  }
  FlatParameters flat{Tensor::empty({total}, DType::f32, device),
                      Tensor::zeros({total}, DType::f32, device)};
  std::int64_t offset = 0;
  module.rebind(
      [&](const std::string&, const Tensor& t) {
        const std::int64_t n = t.numel();
        Tensor view = flat.values.narrow0(offset, n).view(t.shape());
        view.copy_from(t.detach());
        view.set_requires_grad(true);
        view.set_grad(flat.grads.narrow0(offset, n).view(t.shape()));
        offset += n;
        return view;
      },
      [](const std::string&, const Tensor& t) { return t; });
  return flat;
}

}  // namespace epoch::nn
