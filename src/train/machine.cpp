// The machine a run ran on (see machine.h).
#include "epoch/train/machine.h"

#include <unistd.h>

#include <nlohmann/json.hpp>
#include <cctype>
#include <sstream>
#include <string_view>

#include "epoch/dist/process_group.h"
#include "epoch/ops/backend.h"
#include "epoch/tensor/cpu_isa.h"
#include "epoch/tensor/error.h"
#include "epoch/tensor/storage.h"

namespace epoch::train {

using json = nlohmann::json;

json MachineRecord::to_json() const {
  json g = json::array();
  for (const GpuRecord& r : gpus)
    g.push_back({{"name", r.name}, {"driver", r.driver}, {"runtime", r.runtime}});
  return {{"host", host},
          {"cpu", cpu},
          {"cpu_isa", cpu_isa},
          {"onednn_isa", onednn_isa},
          {"logical_cores", logical_cores},
          {"ranks", ranks},
          {"gpus", g},
          {"cudnn", cudnn},
          {"epoch_version", epoch_version},
          {"compiler", compiler}};
}

MachineRecord this_machine() {
  MachineRecord m;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  m.host = host;
  m.cpu = cpu_model_name();
  m.cpu_isa = cpu_isa_name(active_cpu_isa());
  m.onednn_isa = ops::onednn_cpu_isa();
  m.logical_cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  m.ranks = dist::ProcessGroup::world().size();
  for (const CudaDeviceInfo& d : memory::cuda_devices())
    m.gpus.push_back({d.name, d.driver, d.runtime});
  m.cudnn = ops::cudnn_version();
  m.epoch_version = EPOCH_VERSION;
  m.compiler = __VERSION__;
  return m;
}

MachineRecord machine_from_json(const json& j, const std::string& what) {
  MachineRecord m;
  try {
    m.host = j.at("host").get<std::string>();
    m.cpu = j.at("cpu").get<std::string>();
    m.cpu_isa = j.at("cpu_isa").get<std::string>();
    m.onednn_isa = j.at("onednn_isa").get<std::string>();
    m.logical_cores = j.at("logical_cores").get<int>();
    m.ranks = j.at("ranks").get<int>();
    for (const json& g : j.at("gpus"))
      m.gpus.push_back({g.at("name").get<std::string>(), g.at("driver").get<std::string>(),
                        g.at("runtime").get<std::string>()});
    m.cudnn = j.at("cudnn").get<std::string>();
    m.epoch_version = j.at("epoch_version").get<std::string>();
    m.compiler = j.at("compiler").get<std::string>();
  } catch (const json::exception& e) {
    EPOCH_THROW(IoError, what, ": not a machine record (", e.what(), ")");
  }
  return m;
}

std::string short_device_name(const std::string& name) {
  // Words that name the maker or the kind of part, not the part.
  static const char* const kNoise[] = {"Intel", "Core",   "CPU",     "Processor", "AMD",
                                       "NVIDIA", "GeForce", "Genuine", "with",      "Graphics"};
  std::string text = name;
  for (const char* mark : {"(R)", "(TM)", "(tm)", "(r)"})
    for (std::size_t at = text.find(mark); at != std::string::npos; at = text.find(mark))
      text.erase(at, std::string_view(mark).size());
  std::istringstream in(text);
  std::string word, out;
  while (in >> word) {
    if (word == "@") break;  // the clock speed follows
    bool noise = false;
    for (const char* n : kNoise) noise = noise || word == n;
    // "6-Core", "8-Core": the core count, kept elsewhere
    if (word.size() > 5 && word.compare(word.size() - 5, 5, "-Core") == 0) noise = true;
    if (noise) continue;
    std::string clean;
    for (const char ch : word)
      if (std::isalnum(static_cast<unsigned char>(ch)) != 0 || ch == '-' || ch == '.') clean += ch;
    if (!clean.empty()) out += (out.empty() ? "" : "-") + clean;
  }
  return out.empty() ? "unknown" : out;
}

}  // namespace epoch::train
