// Models from files: epoch's own description (.json with "format": "epoch-model"), Keras
// (to_json() text, .keras archives). A file read is registered under the name it was given
// (the path), so find_model and build_model (zoo.h) know it from then on, in every layer that
// names models by a string (runs, benchmarks, studies); a checkpoint's stored description is
// registered the same way, so a run needs only its checkpoint.
#pragma once

#include <map>
#include <string>

#include "epoch/models/description.h"
#include "epoch/models/zoo.h"

namespace epoch::models {

/// Whether `name` names a file rather than a zoo model: it holds a '/' or ends in .json,
/// .keras or .prototxt.
bool is_model_file(const std::string& name);

/// What a model file alone may not say: a Caffe net's input shape (a Data layer carries none)
/// and its solver.
struct ModelFileOptions {
  Shape input_shape;   // (C, H, W), --input-shape; empty: the file's
  std::string solver;  // a solver.prototxt, --solver; its settings join the recipe
};

/// Reads a model file, its format told by its content (a zip archive: .keras; .prototxt: a
/// Caffe net; JSON with "format": "epoch-model": epoch's; other JSON: Keras). IoError when it
/// cannot be read, ConfigError naming the file and the layer for what it says.
ModelDescription read_model_file(const std::string& path, const ModelFileOptions& options = {});

/// The options files read from now on by name (registered_model) are read with: a program's
/// flags (--input-shape, --solver). Set before the first model is named.
void set_model_file_options(const ModelFileOptions& options);

/// A described model known by name, with the SHA-256 of the file it came from.
struct RegisteredModel {
  ModelDescription description;
  ModelSpec spec;
  std::string sha256;  // of the file's bytes, as `sha256sum` prints it (a solver's after ":")
};

/// Registers a description under description.name (replacing one of that name), checking that
/// it builds, and prints its warnings (one line each, "epoch: warning: ...", on stderr);
/// returns the registered entry, which lives as long as the process.
const RegisteredModel& register_description(ModelDescription description, std::string sha256);

/// The registered model of a name; when none and the name is a file (is_model_file), reads and
/// registers it. Null for a name that is neither (a zoo model's).
const RegisteredModel* registered_model(const std::string& name);

/// The registered model of a name, reading nothing; null when none is registered.
const RegisteredModel* registered_only(const std::string& name);

/// What a checkpoint stores of a described model: "model_description" (epoch's format) and
/// "model_sha256"; empty for a zoo model.
std::map<std::string, std::string> description_metadata(const std::string& name);

/// Registers the description a checkpoint's metadata holds (description_metadata), if any, under
/// `name`. ConfigError when it is not a description epoch reads.
void register_stored_description(const std::string& name,
                                 const std::map<std::string, std::string>& metadata);

}  // namespace epoch::models
