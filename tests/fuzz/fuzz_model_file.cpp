// libFuzzer target: the model-file readers on arbitrary bytes, as read_model_file gives them a
// file's contents: a .keras archive, epoch's description, Keras JSON or (what is no JSON) a Caffe
// net and a solver, then the model built
// from what they read when it is small (the size limits have their own tests). Only
// epoch::Error may come out.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string_view>

#include "epoch/models/caffe_reader.h"
#include "epoch/models/graph_model.h"
#include "epoch/models/keras_reader.h"
#include "epoch/tensor/error.h"

namespace {

/// Whether building the model stays within a fuzzer's memory: small sizes everywhere.
bool small(const epoch::models::ModelDescription& d) {
  if (d.layers.size() > 64) return false;
  for (std::int64_t s : d.input)
    if (s > 64) return false;
  for (const epoch::models::LayerNode& n : d.layers)
    for (const char* key : {"filters", "units"})
      if (n.attrs.contains(key) &&
          (!n.attrs[key].is_number_integer() || n.attrs[key].get<std::int64_t>() > 256))
        return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    epoch::models::ModelDescription d;
    if (bytes.substr(0, 4) == std::string_view("PK\x03\x04", 4)) {
      d = epoch::models::read_keras_archive(bytes, "fuzz.keras");
    } else {
      const nlohmann::json j = nlohmann::json::parse(bytes, nullptr, false);
      if (j.is_discarded()) {
        epoch::models::Recipe recipe;
        std::vector<std::string> warnings;
        try {
          epoch::models::read_caffe_solver(bytes, "fuzz_solver.prototxt", recipe, warnings);
        } catch (const epoch::Error&) {
        }
        epoch::models::CaffeOptions options;
        options.input_shape = {3, 16, 16};
        d = epoch::models::read_caffe_net(bytes, "fuzz.prototxt", options);
      } else if (j.is_object() && j.contains("format"))
        d = epoch::models::description_from_json(j, "fuzz.json");
      else
        d = epoch::models::read_keras_json(bytes, "fuzz.json");
    }
    if (small(d)) {
      const epoch::models::ModelSpec spec = epoch::models::described_spec(d);
      if (spec.outputs < 1) std::abort();
    }
  } catch (const epoch::Error&) {
    // A clear error is the expected outcome for most inputs.
  }
  return 0;
}
