// The zoo's model files (zoo/*.json), built in as text by src/CMakeLists.txt.
#pragma once

#include <vector>

namespace epoch::models {

struct ZooFile {
  const char* name;  // the file's name without .json: the model's
  const char* text;  // epoch's description (description.h)
};

const std::vector<ZooFile>& zoo_files();

}  // namespace epoch::models
