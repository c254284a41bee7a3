// Reading a model file and the registry of described models. The registry only grows: a
// registered entry is never freed, so the references find_model hands out stay valid.
#include "epoch/models/model_file.h"

#include <cstdio>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <vector>

#include "epoch/models/caffe_reader.h"
#include "epoch/models/graph_model.h"
#include "epoch/models/keras_reader.h"
#include "epoch/tensor/error.h"
#include "epoch/tensor/sha256.h"

namespace epoch::models {
namespace {

constexpr std::uintmax_t kMaxFileBytes = 256u << 20;

bool ends_with(const std::string& s, const std::string& end) {
  return s.size() >= end.size() && s.compare(s.size() - end.size(), end.size(), end) == 0;
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) EPOCH_THROW(IoError, path, ": cannot open the model file");
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size < 0) EPOCH_THROW(IoError, path, ": cannot read the model file");
  if (static_cast<std::uintmax_t>(size) > kMaxFileBytes)
    EPOCH_THROW(IoError, path, ": ", size, " bytes is larger than a model file epoch reads");
  in.seekg(0);
  std::string bytes(static_cast<std::size_t>(size), '\0');
  if (!in.read(bytes.data(), size)) EPOCH_THROW(IoError, path, ": cannot read the model file");
  return bytes;
}

ModelDescription describe_bytes(const std::string& bytes, const std::string& path,
                                const ModelFileOptions& options) {
  if (bytes.rfind("PK\x03\x04", 0) == 0) return read_keras_archive(bytes, path);
  if (ends_with(path, ".prototxt")) {
    CaffeOptions caffe;
    caffe.input_shape = options.input_shape;
    if (!options.input_shape.empty()) caffe.channels = options.input_shape[0];
    ModelDescription d = read_caffe_net(bytes, path, caffe);
    if (!options.solver.empty()) read_caffe_solver(read_bytes(options.solver), options.solver, d.recipe, d.warnings);
    return d;
  }
  const nlohmann::json j = nlohmann::json::parse(bytes, nullptr, false);
  if (j.is_discarded())
    EPOCH_THROW(ConfigError, path, ": not valid JSON, nor a .keras archive");
  if (j.is_object() && j.contains("format")) {
    ModelDescription d = description_from_json(j, path);
    d.name = path;
    return d;
  }
  return read_keras_json(bytes, path);
}

struct Registry {
  std::mutex mutex;
  ModelFileOptions options;
  std::map<std::string, const RegisteredModel*> by_name;
  std::vector<std::unique_ptr<RegisteredModel>> all;
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

bool is_caffe(const std::string& name) {
  return ends_with(name, ".prototxt");
}

bool is_model_file(const std::string& name) {
  return name.find('/') != std::string::npos || ends_with(name, ".json") ||
         ends_with(name, ".keras") || ends_with(name, ".prototxt");
}

ModelDescription read_model_file(const std::string& path, const ModelFileOptions& options) {
  return describe_bytes(read_bytes(path), path, options);
}

void set_model_file_options(const ModelFileOptions& options) {
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  r.options = options;
}

const RegisteredModel& register_description(ModelDescription description, std::string sha256) {
  for (const std::string& w : description.warnings)
    std::fprintf(stderr, "epoch: warning: %s\n", w.c_str());
  description.warnings.clear();  // said once
  auto entry = std::make_unique<RegisteredModel>();
  entry->spec = described_spec(description);  // builds it once: every error, before a run
  entry->description = std::move(description);
  entry->sha256 = std::move(sha256);
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  const RegisteredModel* e = entry.get();
  r.all.push_back(std::move(entry));
  r.by_name[e->description.name] = e;
  return *e;
}

const RegisteredModel* registered_only(const std::string& name) {
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  const auto it = r.by_name.find(name);
  return it == r.by_name.end() ? nullptr : it->second;
}

const RegisteredModel* registered_model(const std::string& name) {
  if (const RegisteredModel* m = registered_only(name)) return m;
  if (!is_model_file(name)) return nullptr;
  ModelFileOptions options;
  {
    Registry& r = registry();
    const std::lock_guard lock(r.mutex);
    options = r.options;
  }
  const std::string bytes = read_bytes(name);
  ModelDescription d = describe_bytes(bytes, name, options);
  d.name = name;
  std::string sha = sha256_hex(bytes);
  if (!options.solver.empty() && is_caffe(name)) sha += ":" + sha256_hex(read_bytes(options.solver));
  return &register_description(std::move(d), std::move(sha));
}

std::map<std::string, std::string> description_metadata(const std::string& name) {
  const RegisteredModel* m = registered_model(name);
  if (m == nullptr) return {};
  return {{"model_description", description_to_json(m->description).dump()},
          {"model_sha256", m->sha256}};
}

void register_stored_description(const std::string& name,
                                 const std::map<std::string, std::string>& metadata) {
  const auto d = metadata.find("model_description");
  if (d == metadata.end()) return;
  const nlohmann::json j = nlohmann::json::parse(d->second, nullptr, false);
  if (j.is_discarded())
    EPOCH_THROW(ConfigError, name, ": the stored model description is not valid JSON");
  ModelDescription description = description_from_json(j, name);
  description.name = name;
  const auto sha = metadata.find("model_sha256");
  register_description(std::move(description), sha == metadata.end() ? "" : sha->second);
}

}  // namespace epoch::models
